"""``tunetrack run COMMAND``: any command recorded as one run, with no change to its code.

This process creates the run (as ``Role.COMMAND``: its end is the run's), records the console of the
command and of everything it starts (they inherit its captured terminal), the machine's system
metrics (the process share summed over the command's process tree: ``system.host``), the command line (as the run's ``command`` and in its config), the exit code and the
duration, then starts the command with the run's id in its environment (``environment``). Inside,
an adapter attaches itself to the framework that trains (``hooks``) and its tracker joins the run,
so metrics, config, checkpoints and samples land in the same run; a launcher's workers (torchrun,
``accelerate launch``, deepspeed) join as they do today.

How the run ends is how the command ended: ``finished`` (exit code 0), ``failed`` (another code;
with the traceback a joined process recorded, else the exit code), ``killed`` (Ctrl-C or SIGTERM
from outside, passed on to the command), ``stopped`` (someone asked: ``tunetrack stop``). A stop
request reaches an attached adapter, which stops training cleanly; a command without one (nothing
attached to the run) is sent SIGTERM at once, and one that is still running ``stop_grace`` seconds
after the request is too. The exit code is passed through (a signal as 128 + its number, as a shell
does).
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from .. import settings
from ..failures import TRACEBACK, signal_name
from ..states import State
from ..system import default_sources
from ..tracker import EndFields, Role, Tracker
from .environment import child_environment

#: seconds between two looks at the command (its exit, a stop request)
POLL = 0.1
#: console lines searched for the traceback of a command that failed without an adapter
TRACEBACK_LINES = 200
#: seconds a command has after SIGTERM before it is killed
KILL_AFTER = 30.0
#: what the command is sent for each signal this process receives (Ctrl-C reaches the command from
#: the terminal itself: it is sent on only when this process has no terminal)
PASSED_ON = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


class CommandTracker(Tracker):
    """The tracker of ``tunetrack run``'s own process: it speaks for the run (``Role.COMMAND``), and
    its end record holds the command's exit code."""

    #: the command's exit code (a negative one: the signal that ended it), once it exited
    exit_code: int | None = None
    _trains = False

    def _role(self, role: Role | None) -> Role | None:
        return Role.COMMAND if role == Role.PRIMARY else role

    def _end_fields(self) -> EndFields:
        return {} if self.exit_code is None else {"exit_code": self.exit_code}


def run_command(
    command: Sequence[str],
    project: str | None = None,
    name: str | None = None,
    tags: Sequence[str] = (),
    dir: str | None = None,
    stop_grace: float = 600.0,
) -> int:
    """Run ``command`` as a run; its exit code (``FileNotFoundError`` if there is no such command)."""
    if not command:
        raise ValueError("give the command to run: tunetrack run -- python train.py")
    if shutil.which(command[0]) is None:
        raise FileNotFoundError(f"command not found: {command[0]}")
    store = settings.store_dir(dir)
    store_text = os.fspath(store if isinstance(store, str) else store.resolve())
    line = shlex.join(command)
    sys.argv = list(command)  # the process's recorded command line (``provenance``) is the command's
    tracker = CommandTracker(
        project=project, name=name, tags=list(tags), dir=store_text, system_sources=default_sources(tree=True)
    )
    tracker.start()
    if tracker.id is None:  # the run could not be created (warned about): the command still runs
        return _exit_code(subprocess.call(list(command)))
    tracker.log_config({"command": line})
    tracker.event("command", argv=list(command))
    sys.stderr.write(f"tunetrack: recording as run {tracker.id} ({tracker.name}) in {store_text}\n")
    sys.stderr.flush()
    received: list[int] = []
    child = subprocess.Popen(list(command), env=child_environment(tracker.id, store_text))
    previous = {s: signal.signal(s, lambda signum, _: _pass_on(child, signum, received)) for s in PASSED_ON}
    try:
        stopped_at = _wait(child, tracker, store_text, stop_grace)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    code = child.returncode
    state, error = _outcome(code, tracker, store_text, received, stopped_at)
    tracker.exit_code = code
    tracker.event("exit", code=code, signal=signal_name(code))
    tracker.finish(state, error)
    return _exit_code(code)


def _pass_on(child: subprocess.Popen[Any], signum: int, received: list[int]) -> None:
    """A signal this process got, sent on to the command (Ctrl-C only without a terminal: with one,
    the terminal sent it to the command too)."""
    received.append(signum)
    if signum == signal.SIGINT and sys.stdin is not None and sys.stdin.isatty():
        return
    if child.poll() is None:
        child.send_signal(signum)


def _wait(child: subprocess.Popen[Any], tracker: Tracker, store: str, stop_grace: float) -> float | None:
    """Wait for the command to exit, acting on a stop request; when the command was sent SIGTERM
    for one (None if it never was)."""
    asked: float | None = None
    terminated: float | None = None
    while child.poll() is None:
        time.sleep(POLL)
        now = time.monotonic()
        if asked is None and tracker.should_stop:
            asked = now
            if not _attached(tracker, store):
                stop_grace = 0.0  # nothing in the command can stop it cleanly
        if asked is not None and terminated is None and now - asked >= stop_grace:
            terminated = now
            child.terminate()
        if terminated is not None and now - terminated >= KILL_AFTER:
            child.kill()
    return terminated


def _attached(tracker: Tracker, store: str) -> bool:
    """Whether a process the command started joined the run (an adapter attached itself)."""
    from ..reader import open_run

    try:
        return len(open_run(str(tracker.id), dir=store).processes) > 1
    except Exception:
        return False


def _outcome(
    code: int, tracker: Tracker, store: str, received: list[int], terminated: float | None
) -> tuple[str, str | None]:
    """The run's state and error for the command's exit ``code``."""
    if (code == 0 or terminated is not None) and _stop_asked(tracker, store):
        return State.STOPPED, None
    if code == 0:
        return State.FINISHED, None
    if received:
        return State.KILLED, None
    return State.FAILED, _traceback(tracker, store) or _exit_text(code)


def _stop_asked(tracker: Tracker, store: str) -> bool:
    """Whether the run was asked to stop: seen by this process, or found now (the command's training
    can find a request, or make one by a rule, and exit before this process looked)."""
    from ..reader import open_run

    if tracker.should_stop:
        return True
    try:
        return open_run(str(tracker.id), dir=store).stop_request is not None
    except Exception:
        return False


def _traceback(tracker: Tracker, store: str) -> str | None:
    """The command's own error: the traceback a process of the command recorded when it failed, else
    the last Python traceback it printed (a script with no adapter), from its first line on."""
    from ..reader import open_run

    try:
        run = open_run(str(tracker.id), dir=store)
        failed = [
            p.end.get("traceback") for p in run.processes if p.end is not None and p.end.get("traceback")
        ]
        if failed:
            return str(failed[-1])
        lines = [line.text for line in run.console(tail=TRACEBACK_LINES)]
    except Exception:
        return None
    starts = [i for i, text in enumerate(lines) if text.startswith(TRACEBACK)]
    return "\n".join(lines[starts[-1] :]) if starts else None


def _exit_text(code: int) -> str:
    name = signal_name(code)
    return f"the command was killed by {name}" if name else f"the command exited with code {code}"


def _exit_code(code: int) -> int:
    """The exit code to pass on: a signal's as a shell gives it (128 + its number)."""
    return 128 - code if code < 0 else code
