"""The dashboard's routes, one ``APIRouter`` per topic: ``runs`` (the runs table, a run, its series),
``compare`` (runs side by side, config differences, the report), ``media`` (a run's images),
``steering`` (the one change: a live run asked to stop) and ``pages`` (the HTML pages and uPlot).
``ui.app.create_app`` assembles them."""
