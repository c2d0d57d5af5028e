"""Tests on a real NVIDIA GPU, without fakes: NVML, the CUDA allocator, no synchronization, a bf16
Trainer fine-tune. Every test here is marked ``gpu``; only the ``gpu`` nox session runs them
(``bash scripts/gpu`` on the GPU machine). The default sessions ignore this folder.

Without a CUDA device collection fails: a GPU proof that cannot run must never read as a pass.
``TUNETRACK_GPU_TESTS_ON_CPU=1`` turns that into a dry run on CPU: the tests marked ``cpu_dry_run``
run with their GPU-only checks off, every other test is deselected, and the summary says so.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "examples"))  # _tiny: the offline tokenizer

CUDA = torch.cuda.is_available()
DRY_RUN = not CUDA and os.environ.get("TUNETRACK_GPU_TESTS_ON_CPU") == "1"
_deselected: list[str] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mine = [item for item in items if HERE in Path(str(item.fspath)).resolve().parents]
    for item in mine:
        item.add_marker(pytest.mark.gpu)
    if CUDA or not mine:
        return
    if not DRY_RUN:
        raise pytest.UsageError(
            "tests/gpu needs an NVIDIA GPU: torch.cuda.is_available() is False here "
            f"(torch {torch.__version__}, built with CUDA {torch.version.cuda}). "
            "Run them on the GPU machine (bash scripts/gpu), or set TUNETRACK_GPU_TESTS_ON_CPU=1 "
            "for a CPU dry run of the parts that can run on CPU."
        )
    cpu = [item for item in mine if item.get_closest_marker("cpu_dry_run")]
    out = [item for item in mine if not item.get_closest_marker("cpu_dry_run")]
    _deselected.extend(item.nodeid for item in out)
    if out:
        config.hook.pytest_deselected(items=out)
        items[:] = [item for item in items if item not in out]
    if not cpu:
        raise pytest.UsageError("CPU dry run: no test in tests/gpu can run on CPU")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not DRY_RUN:
        return
    write = terminalreporter.write_line
    terminalreporter.section("CPU DRY RUN: nothing GPU-specific was proven", sep="!")
    write("No CUDA device: the tests marked cpu_dry_run ran on CPU with their GPU checks off.")
    write(f"{len(_deselected)} test(s) need CUDA and did NOT run:")
    for nodeid in _deselected:
        write(f"  {nodeid}")
