"""What tunetrack writes into a Comet experiment besides the metrics and params, and what of Comet's
own the importer reads back or leaves out. Comet's "Others" (``log_other``) are its place for a run's
key-value facts: tunetrack puts there what Comet has no field for."""

from __future__ import annotations

#: every Other tunetrack sets starts so (an importer leaves them out of the run's own tags)
PREFIX = "tunetrack."
#: the tunetrack run an experiment mirrors (an import finds the run already in the store by it)
RUN_ID = "tunetrack.run_id"
#: how the run ended (``finished``, ``failed``, ...): an offline archive has no status of its own
STATE = "tunetrack.state"
#: the step a rewind went back to (the points logged before it stay in Comet)
REWOUND_TO = "tunetrack.rewound_to"
#: the metadata field of a text sample that holds the tunetrack key it was logged under
TEXT_KEY = "tunetrack.key"

#: the Other in which Comet keeps an experiment's name (``set_name``)
NAME = "Name"
#: Comet's own Others, not the user's
COMET_OTHERS = ("Name", "offline_experiment", "hasNestedParams", "Created from")
#: the params Comet logs by itself (the step and epoch it is at)
COMET_PARAMS = ("curr_step", "curr_epoch")
#: the metrics Comet logs by itself (at ``end()``)
COMET_METRICS = ("process duration",)
#: how Comet's ``log_parameters`` joins a nested config's keys (shown as a tree in its UI)
NESTED = "|"
#: system metrics, Comet's own and a mirror's, are named so
SYSTEM = "sys."
