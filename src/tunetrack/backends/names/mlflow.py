"""The tags tunetrack sets on an MLflow run."""

#: every tag tunetrack sets starts so (an importer leaves them out of the run's own tags)
PREFIX = "tunetrack."
#: finds the MLflow run of a tunetrack run again (a resume, another node, a replay, an import)
RUN_ID = "tunetrack.run_id"
#: the run's state where MLflow has no status for it (``crashed``)
STATE = "tunetrack.state"
#: the step a rewind went back to (MLflow cannot hide the points logged before it)
REWOUND_TO = "tunetrack.rewound_to"
#: on a checkpoint's logged model (MLflow 3): where its files are (tunetrack never uploads them), the
#: step it was saved at, its size once hashed, and whether rotation deleted it since
CHECKPOINT_PATH = "tunetrack.checkpoint.path"
CHECKPOINT_STEP = "tunetrack.checkpoint.step"
CHECKPOINT_BYTES = "tunetrack.checkpoint.bytes"
CHECKPOINT_DELETED = "tunetrack.checkpoint.deleted"
#: tags that are MLflow's or tunetrack's, not the user's
NOT_USER_TAGS = ("mlflow.", PREFIX)
