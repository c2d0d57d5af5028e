"""What more than one adapter needs, so that each adapter stays a thin translation: automatic resume
markers (``resume``), one run per search trial (``trials``), TRL's completion tables (``completions``),
token rates and MFU from what frameworks log (``throughput``), and tunetrack's options on a
framework's command line or in the environment (``options``). Nothing here imports a framework."""
