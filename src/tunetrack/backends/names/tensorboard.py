"""The tags tunetrack writes into TensorBoard event files besides the metrics."""

#: a text summary holding the run's state, written at ``finish()``
STATE = "tunetrack/state"
