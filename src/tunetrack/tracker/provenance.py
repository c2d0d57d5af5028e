"""What a run records about the process that writes it: host, user, command line (secrets
redacted), working directory, Python and platform, framework versions, and the git commit.

Nothing here raises and nothing here waits long: a tracker that cannot tell its git commit must still
record the run, and a hung filesystem must not stall ``start()``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from ..redact import redact_argv, strip_credentials
from ..writer import ProcessMeta
from .launch import RankInfo, rank_info

#: Packages whose installed version is recorded (read from their metadata, never imported).
PACKAGES = (
    "torch",
    "transformers",
    "accelerate",
    "trl",
    "peft",
    "datasets",
    "torchtune",
    "llamafactory",
    "deepspeed",
    "diffusers",
    "numpy",
    "tunetrack",
)
GIT_TIMEOUT = 2.0  # seconds for all git calls together: a hung NFS mount must not stall start()

T = TypeVar("T")


def _try(fn: Callable[[], T], default: Any = None) -> T | Any:
    try:
        return fn()
    except Exception:
        return default


_STATUS = ("status", "--porcelain=v2", "--branch", "--untracked-files=no")
_REMOTES = ("config", "--get-regexp", r"^remote\..*\.url$")


def _git_start(cwd: str | None) -> list[subprocess.Popen[str] | None]:
    """Start both git commands; they run while the caller reads package versions."""
    procs: list[subprocess.Popen[str] | None] = []
    for args in (_STATUS, _REMOTES):
        try:
            # --no-optional-locks: status must not take index.lock under a user's concurrent git command
            procs.append(
                subprocess.Popen(
                    ["git", "--no-optional-locks", *args],
                    cwd=cwd,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
            )
        except (OSError, ValueError, subprocess.SubprocessError):  # no git on PATH, bad cwd
            procs.append(None)
    return procs


def _git_output(proc: subprocess.Popen[str] | None, deadline: float) -> str | None:
    if proc is None:
        return None
    try:
        out, _ = proc.communicate(timeout=max(deadline - time.monotonic(), 0.001))
    except Exception:  # TimeoutExpired (a hung filesystem): give up on git, never on the run
        proc.kill()
        # not communicate(): a child git spawned (a hook, fsmonitor) may hold the pipe open for long
        if proc.stdout is not None:
            _try(proc.stdout.close)
        _try(lambda: proc.wait(timeout=1))
        return None
    return out if proc.returncode == 0 else None


def _git_finish(procs: list[subprocess.Popen[str] | None], deadline: float) -> dict[str, Any] | None:
    status, remotes_text = (_git_output(proc, deadline) for proc in procs)
    if status is None:
        return None
    head: dict[str, str] = {}
    dirty = False
    for line in status.splitlines():
        if line.startswith("# branch."):
            key, _, value = line[9:].partition(" ")
            head[key] = value
        elif line.strip():
            dirty = True
    commit, branch = head.get("oid"), head.get("head")
    remotes = [line.split(" ", 1) for line in (remotes_text or "").splitlines() if " " in line]
    remote = next(
        (url for key, url in remotes if key == "remote.origin.url"), remotes[0][1] if remotes else None
    )
    return {
        "commit": commit if commit and commit != "(initial)" else None,
        "branch": branch if branch and branch != "(detached)" else None,
        "dirty": dirty,
        "remote": strip_credentials(remote.strip()) if remote else None,
    }


def git_info(cwd: str | None = None) -> dict[str, Any] | None:
    """Commit, branch, dirty flag and remote (origin, else the first) of the repository around ``cwd``.

    None outside a repository, without git, or after ``GIT_TIMEOUT`` seconds. One ``git status``
    gives commit, branch and dirtiness. Untracked files do not make a tree dirty (as with
    ``git describe --dirty``): scanning them can take seconds in a folder full of checkpoints.
    """
    return _git_finish(_git_start(cwd), time.monotonic() + GIT_TIMEOUT)


def versions() -> dict[str, str]:
    """Installed versions of the frameworks that matter, read from package metadata, never imported."""
    import importlib.metadata  # not at module level: it pulls in email/zipfile, and rank_info needs none

    out = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except Exception:  # PackageNotFoundError, or a broken dist-info
            continue
    return out


def _platform() -> str:
    """``Linux-6.8.0-x86_64-with-glibc2.39``, without the ``uname -p`` that ``platform.platform()`` runs."""
    import platform

    u = os.uname()
    libc = "".join(platform.libc_ver())
    return f"{u.sysname}-{u.release}-{u.machine}" + (f"-with-{libc}" if libc else "")


def run_metadata() -> ProcessMeta:
    """What a run records about the process that writes it. Never raises.

    Typically 20-50 ms, most of it the two git subprocesses, which run while package versions are read.
    """
    import getpass
    import platform
    import socket

    cwd = _try(os.getcwd)  # FileNotFoundError when the directory was deleted
    deadline = time.monotonic() + GIT_TIMEOUT
    git = _try(lambda: _git_start(cwd), []) if cwd else []
    meta: ProcessMeta = {
        "host": _try(socket.gethostname, "unknown"),
        "pid": os.getpid(),
        "user": _try(getpass.getuser),  # KeyError/OSError for a uid without a passwd entry
        "argv": _try(lambda: redact_argv(getattr(sys, "argv", None) or []), []),
        "cwd": cwd,
        "python": platform.python_version(),
        "platform": _try(_platform) or _try(platform.platform),
        "executable": sys.executable,
        "versions": _try(versions, {}),
        "git": _try(lambda: _git_finish(git, deadline)) if git else None,
        "rank": _try(lambda: rank_info().as_meta(), RankInfo().as_meta()),
    }
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        meta["cuda_visible_devices"] = os.environ["CUDA_VISIBLE_DEVICES"]
    return meta
