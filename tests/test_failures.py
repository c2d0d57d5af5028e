"""Why a run died, in one line: the exception's own line (PyTorch's multi-line CUDA error, a chained
exception, an out-of-memory error), or for a process that died without a Python traceback (a C++
abort, an NCCL watchdog) what its console's last lines say; and the classified failure beside it, in
the read API and every answer built on it (``ls --json``, ``show --json``, SQL's ``runs``).

Each run is a real process: a script that records a run, prints what PyTorch prints, and dies as
such a job dies (an exception through the excepthook, or ``abort()``)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from support.helpers import run_script
from tunetrack.cli import cli
from tunetrack.failures import exception_line
from tunetrack.reader import open_run

#: PyTorch's message for an illegal memory access (c10/cuda/CUDAException.cpp), four lines
CUDA = (
    "CUDA error: an illegal memory access was encountered\\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
    "below might be incorrect.\\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\\n"
)
OOM = (
    "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which "
    "1.06 GiB is free. Of the allocated memory 75.43 GiB is allocated by PyTorch"
)
#: what ProcessGroupNCCL's watchdog prints before it aborts the process (PyTorch 2.x)
NCCL = (
    "[rank0]:[E1126 20:41:07.123456 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
    "ran for 600037 milliseconds before timing out.\\n"
    "terminate called after throwing an instance of 'c10::DistBackendError'\\n"
    "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 0] Process group watchdog thread terminated with "
    "exception: [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, "
    "OpType=ALLREDUCE) ran for 600037 milliseconds before timing out.\\n"
)
#: a c10::Error thrown where no Python frame catches it (a CUDA error in a backward hook's C++ side)
CPP_ABORT = (
    "terminate called after throwing an instance of 'c10::Error'\\n"
    "  what():  CUDA error: device-side assert triggered\\n"
    "CUDA kernel errors might be asynchronously reported at some other API call\\n"
    "Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:43 (most recent call first):\\n"
)


def died(root, body: str) -> str:
    """The id of a run whose script prints progress, then runs ``body`` (which ends the process)."""
    done = run_script(
        f"""
        import os, sys, torch
        from tunetrack import Tracker
        run = Tracker(project="crashes", dir={str(root)!r}, system=False).start()
        print("RUN", run.id, flush=True)
        for step in range(1, 4):
            run.log({{"loss": 1.0 / step}}, step=step)
            print(f"step {{step}}: all good so far", flush=True)
        run.flush()
        {body}
        """,
        env={"TUNETRACK_CONSOLE": "1"},  # as a user has it (the suite turns it off elsewhere)
        check=False,
    )
    assert done.returncode != 0, done.stdout
    return done.stdout.split()[1]


@pytest.mark.parametrize(
    "body, cause, failure",
    [
        (
            f'raise RuntimeError("{CUDA}")',
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            "CUDA error on rank 0",
        ),
        (
            f'raise torch.OutOfMemoryError("{OOM}")',
            f"torch.OutOfMemoryError: {OOM}",
            "CUDA out of memory on rank 0",
        ),
        (
            "try:\n            raise ValueError('the batch had no tokens')\n"
            "        except ValueError as e:\n            raise RuntimeError('step 3 failed') from e",
            "RuntimeError: step 3 failed",
            None,
        ),
        (
            f'os.write(2, b"{NCCL}"); os.abort()',
            NCCL.split("what():  ")[1].split("\\n")[0].strip(),
            "NCCL timeout on rank 0",
        ),
        (f'os.write(2, b"{CPP_ABORT}"); os.abort()', "CUDA error: device-side assert triggered", None),
    ],
    ids=["cuda-four-lines", "oom", "chained", "nccl-timeout", "c++-abort"],
)
def test_the_cause_is_the_error_itself(root, body, cause, failure):
    run_id = died(root, body)
    run = open_run(run_id, dir=root)
    assert run.cause == cause
    if failure is not None:
        assert run.failure == failure
    listed = {
        r["id"]: r for r in json.loads(CliRunner().invoke(cli, ["ls", "--dir", str(root), "--json"]).stdout)
    }
    assert (listed[run_id]["cause"], listed[run_id]["failure"]) == (cause, run.failure)
    shown = json.loads(CliRunner().invoke(cli, ["show", run_id, "--dir", str(root), "--json"]).stdout)
    assert (shown["cause"], shown["failure"]) == (cause, run.failure)
    out = CliRunner().invoke(cli, ["show", run_id, "--dir", str(root)]).stdout
    assert "step 3: all good so far" in out.split("console lines")[-1]  # the progress before the death


def test_the_sql_runs_table_carries_the_cause(root):
    from tunetrack import query

    run_id = died(root, f'raise RuntimeError("{CUDA}")')
    frame = query(f"SELECT error FROM runs WHERE id = '{run_id}'", dir=root)
    assert frame["error"].tolist() == ["RuntimeError: CUDA error: an illegal memory access was encountered"]


@pytest.mark.parametrize(
    "text, line",
    [
        ("", None),
        ("diverged at step 40", "diverged at step 40"),
        (
            'Traceback (most recent call last):\n  File "t.py", line 1, in <module>\n    f(\n    ^^\n'
            "KeyboardInterrupt\n",
            "KeyboardInterrupt",
        ),
        (
            'Traceback (most recent call last):\n  File "t.py", line 2\n    x = (\n        ^\n'
            "SyntaxError: '(' was never closed\n",
            "SyntaxError: '(' was never closed",
        ),
    ],
)
def test_exception_line(text, line):
    assert exception_line(text) == line
