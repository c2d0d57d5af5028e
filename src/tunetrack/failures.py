"""Known failure signatures: what a fine-tune's last console lines say when it died of something
common. One table, matched by the readers over a run's last lines (``tunetrack ls``, ``show``, the
dashboard) and by a failing tracker over its own (the end alert's title).

A signature is a name and a regular expression; the first in the table that matches a line wins over
the later ones (an out-of-memory error is also a CUDA error, and says more).
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterable
from typing import NamedTuple

#: (what people are told, a regular expression over one console line), most specific first
SIGNATURES: list[tuple[str, re.Pattern[str]]] = [
    (name, re.compile(pattern))
    for name, pattern in (
        ("CUDA out of memory", r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory"),
        (
            "NCCL timeout",
            r"Watchdog caught collective operation timeout|ProcessGroupNCCL.*(?:[Tt]imeout|timed out)"
            r"|NCCL.*watchdog.*(?:timeout|timed out)",
        ),
        (
            "NCCL error",
            r"NCCL error|ncclSystemError|ncclInternalError|ncclUnhandledCudaError|ncclRemoteError",
        ),
        ("segmentation fault", r"Fatal Python error: Segmentation fault|Segmentation fault|SIGSEGV"),
        ("bus error", r"Fatal Python error: Bus error|SIGBUS"),
        ("aborted", r"Fatal Python error: Aborted|SIGABRT"),
        ("killed (SIGKILL: out of host memory?)", r"^Killed$|exitcode\s*:\s*-9\b|Signals\.SIGKILL|oom-kill"),
        ("CUDA error", r"CUDA error: |device-side assert triggered|cudaError"),
        ("DeepSpeed error", r"deepspeed\S*\.(?:\w+\.)*\w+Error|DeepSpeed.*(?:Error|AssertionError)"),
        (
            "torch.distributed error",
            r"ChildFailedError|DistBackendError|DistNetworkError|RendezvousTimeoutError|RendezvousError",
        ),
    )
]


class Found(NamedTuple):
    name: str
    rank: int  # its place in ``SIGNATURES``: lower is more specific
    line: int  # the first line that shows it


def find(lines: Iterable[str]) -> Found | None:
    """The most specific known failure that ``lines`` show (the first line showing it), or None."""
    best: Found | None = None
    for number, line in enumerate(lines):
        for i, (name, pattern) in enumerate(SIGNATURES[: best.rank if best else None]):
            if pattern.search(line):
                best = Found(name, i, number)
                break
    return best


#: the header of a Python traceback (a chained exception prints one per exception)
TRACEBACK = "Traceback (most recent call last):"
#: a C++ exception's message as ``std::terminate`` prints it (PyTorch's c10::Error, NCCL's watchdog)
_WHAT = re.compile(r"^\s*what\(\):\s*(\S.*)")


def exception_line(traceback: str) -> str | None:
    """The raised exception's own line in a Python traceback: the first line after the frames of its
    last ``Traceback`` block (``RuntimeError: CUDA error: an illegal memory access was encountered``),
    never the message's later lines (PyTorch's CUDA errors add three lines of advice). A chained
    exception's last block is the exception that was raised. A text with no traceback is a message:
    its first line. None for an empty text."""
    lines = traceback.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(TRACEBACK)]
    i = starts[-1] + 1 if starts else 0
    while i < len(lines) and (not lines[i].strip() or (starts and lines[i][:1] in (" ", "\t"))):
        i += 1  # the frames (indented: File lines, code, carets) and blank lines
    return lines[i].strip() if i < len(lines) else None


def cause_line(lines: list[str], found: Found) -> str:
    """What a failure found in console ``lines`` says in one line: a C++ exception's ``what():``
    message where the process aborted on one (PyTorch, NCCL), a Python exception's own line where
    a traceback ends the lines, else the line that shows the failure."""
    what = next((m.group(1).strip() for line in lines if (m := _WHAT.match(line))), None)
    if what:
        return what
    starts = [i for i, line in enumerate(lines) if line.startswith(TRACEBACK)]
    if starts:
        raised = exception_line("\n".join(lines[starts[-1] :]))
        if raised:
            return raised
    return lines[found.line].strip()


def signal_name(code: int) -> str | None:
    """``SIGKILL`` for a process a signal ended (a negative exit code, as ``subprocess`` reports it),
    else None."""
    if code >= 0:
        return None
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"
