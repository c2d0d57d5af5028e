"""What tunetrack writes into another tracker beyond the metrics, and reads back when it imports from
that tracker: one module per tracker, imported by its backend (``backends/<tracker>.py``) and by its
importer (``bridges/importers/<tracker>.py``), so the two sides of each contract are one name."""
