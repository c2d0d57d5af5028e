"""tunetrack without code changes: ``tunetrack run`` records any command as a run (``command``), and
the adapters attach themselves inside the processes it starts (``hooks``, reached from
``_tunetrack_hooks`` at each Python start); ``environment`` is the contract between the two."""
