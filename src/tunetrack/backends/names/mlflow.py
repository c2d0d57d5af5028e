"""The tags tunetrack sets on an MLflow run."""

#: every tag tunetrack sets starts so (an importer leaves them out of the run's own tags)
PREFIX = "tunetrack."
#: finds the MLflow run of a tunetrack run again (a resume, another node, a replay, an import)
RUN_ID = "tunetrack.run_id"
#: the run's state where MLflow has no status for it (``crashed``)
STATE = "tunetrack.state"
#: the step a rewind went back to (MLflow cannot hide the points logged before it)
REWOUND_TO = "tunetrack.rewound_to"
#: tags that are MLflow's or tunetrack's, not the user's
NOT_USER_TAGS = ("mlflow.", PREFIX)
