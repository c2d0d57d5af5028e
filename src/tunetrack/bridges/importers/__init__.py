"""Runs recorded by another tracker, brought into a tunetrack store: ``tunetrack import SOURCE ...``.

One module per tracker (``tensorboard``, ``mlflow``, ``wandb``, ``trackio``, ``comet``), each an ``Importer``:
it reads that tracker's runs with the tracker's own reader (its library is imported only then) and
yields ``SourceRun``s (``source.py``); ``write.py`` records each as a tunetrack run through the writer a
live run uses, keeping the source's steps and wall times. The run's id is derived from what identifies
the run at its source (an MLflow run id, a W&B run folder, TensorBoard's event file names, a Comet experiment key and
start time), so
importing the same source again finds the runs it made and creates nothing new.
"""

from .source import SOURCES, Imported, Importer, SourceError, SourceRun
from .write import import_runs, write

__all__ = ["SOURCES", "Imported", "Importer", "SourceError", "SourceRun", "import_runs", "write"]
