"""What more than one adapter needs, so that each adapter stays a thin translation: automatic resume
markers (``resume``), one run per search trial (``trials``), TRL's completion tables (``completions``),
and token rates and MFU from what frameworks log (``throughput``). Nothing here imports a framework."""
