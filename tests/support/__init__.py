"""What the tests share and test nothing themselves: paths and processes (``helpers``), the real servers
tests start on 127.0.0.1 (``servers``: mlflow, an alert webhook), the generated 60-run sweep
(``sweep``), readers of W&B's and Comet's offline files (``wandb_files``, ``comet_files``) and a fake
NVML (``fake_nvml``). ``tests/`` is on ``sys.path`` (pytest's rootdir conftest), so ``from
support.helpers import SRC`` works in every test folder and in benchmarks that add ``tests/``.
"""
