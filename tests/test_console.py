"""The console: real processes printing through real descriptors (print, os.write on fds 1 and 2, a
child process, a tqdm bar, logging), then dying in each way a fine-tune dies (an exception, SIGKILL,
a segfault); what ``tunetrack logs`` shows of them; the terminal left as it was; the size cap; the
off switch; a bucket; and the pieces (lines, failure signatures, masking) on their own."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from support.helpers import SRC, run_script, spawn_script, wait_until
from tunetrack import failures
from tunetrack.cli import cli
from tunetrack.reader import list_runs, open_run
from tunetrack.redact import REDACTED, redact_text
from tunetrack.writer.console_recorder import MAX_LINE, Lines, overlay

ON = {"TUNETRACK_CONSOLE": "1"}

#: every way into fds 1 and 2 a training script has, then ``ENDING`` (an exception, a kill, a segfault)
SCRIPT = """
import faulthandler, logging, os, subprocess, sys
from tqdm import tqdm
from tunetrack import Tracker

faulthandler.enable()
tracker = Tracker(dir=sys.argv[1], project="console", system=False).start()
print("out: print", flush=True)
os.write(1, b"out: os.write\\n")
os.write(2, b"err: os.write\\n")
subprocess.run([sys.executable, "-c", "print('out: child', flush=True)"], check=True)
for _ in tqdm(range(50), file=sys.stderr, mininterval=0, ncols=60):
    pass
logging.basicConfig(level=logging.INFO, format="err: logging %(message)s")
logging.info("hello")
tracker.log({"loss": 1.0}, step=1)
print("out: last before the end", flush=True)
ENDING
"""
ENDINGS = {
    "raise": 'raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")',
    "sigkill": "import signal; os.kill(os.getpid(), signal.SIGKILL)",
    "segfault": "import ctypes; ctypes.string_at(0)",
}


def logs(*args: str) -> str:
    result = CliRunner().invoke(cli, ["logs", *map(str, args)])
    assert result.exit_code == 0, result.output
    return result.output


def json_logs(*args: str) -> list[dict]:
    return [json.loads(line) for line in logs(*args, "--json").splitlines()]


@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_every_line_is_recorded_in_order_on_its_stream_however_the_process_dies(root, ending):
    proc = run_script(SCRIPT.replace("ENDING", ENDINGS[ending]), str(root), env=ON, check=False)
    assert proc.returncode != 0
    (run,) = list_runs(root, project="console")
    wait_until(lambda: run.refresh() or any("last before" in x.text for x in run.console()))
    lines = json_logs(run.id, "--dir", root)
    texts = [x["text"] for x in lines]
    expected = [
        ("stdout", "out: print"),
        ("stdout", "out: os.write"),
        ("stderr", "err: os.write"),
        ("stdout", "out: child"),
        ("stderr", "err: logging hello"),
        ("stdout", "out: last before the end"),
    ]
    # stdout and stderr are two pipes here: each in the order written (which of two lines written to
    # the two within the same microseconds came first, nobody can tell: test_two_streams_into_one_...)
    for stream in ("stdout", "stderr"):
        found = [x["text"] for x in lines if x["stream"] == stream and x["text"] in {t for _, t in expected}]
        assert found == [t for s, t in expected if s == stream]
    (bar,) = [x for x in lines if "50/50" in x["text"]]  # the bar's final state, once, on stderr
    assert bar["stream"] == "stderr" and "100%" in bar["text"] and "\r" not in bar["text"]
    assert texts.index("err: os.write") < texts.index(bar["text"]) < texts.index("err: logging hello")
    times = [x["time"] for x in lines]
    assert times == sorted(times) and {x["rank"] for x in lines} == {0}
    stderr = [x["text"] for x in lines if x["stream"] == "stderr"]
    assert [x for x in lines if x["stream"] == "stdout"][-1]["text"] == "out: last before the end"
    after = stderr[stderr.index("err: logging hello") + 1 :]  # what dying printed
    if ending == "raise":
        assert run.state == "failed"
        assert after[0] == "Traceback (most recent call last):" and "CUDA out of memory" in after[-1]
        assert run.failure == "CUDA out of memory on rank 0"
    elif ending == "segfault":
        assert run.state == "crashed"
        assert any("Fatal Python error: Segmentation fault" in t for t in after)
        assert run.failure == "segmentation fault on rank 0"
    else:
        assert run.state == "crashed" and after == [] and run.failure is None
    shown = CliRunner().invoke(cli, ["show", run.id, "--dir", str(root)]).output
    assert re.search(r"last \d+ console lines", shown) and texts[-1] in shown
    if run.failure:
        assert f"{run.state}: {run.failure}" in shown
        listing = CliRunner(env={"COLUMNS": "300"}).invoke(cli, ["ls", "--dir", str(root)]).output
        assert run.failure.split(" on ")[0] in listing


def test_logs_selects_by_rank_time_and_pattern_and_tails(root):
    run_script(
        """
        import sys, time
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], system=False).start()
        for i in range(30):
            print(f"line {i}", flush=True)
        time.sleep(0.3)
        print("late line", flush=True)
        t.finish()
        """,
        str(root),
        env=ON,
    )
    (run,) = list_runs(root)
    lines = run.console()
    assert [x.text for x in lines] == [*(f"line {i}" for i in range(30)), "late line"]
    assert logs(run.id, "--dir", root, "-n", "2").splitlines()[-1].endswith("late line")
    assert len(logs(run.id, "--dir", root, "-n", "2").splitlines()) == 2
    assert [x["text"] for x in json_logs(run.id, "--dir", root, "--grep", r"line 2\d")] == [
        f"line {i}" for i in range(20, 30)
    ]
    assert [x["text"] for x in json_logs(run.id, "--dir", root, "--since", str(lines[-1].time))] == [
        "late line"
    ]
    assert [x["text"] for x in json_logs(run.id, "--dir", root, "--rank", "0", "-n", "1")] == ["late line"]
    absent = CliRunner().invoke(cli, ["logs", run.id, "--dir", str(root), "--rank", "1"])
    assert absent.exit_code == 1 and f"run {run.id} has no rank 1 (ranks: 0)" in absent.output
    bad = CliRunner().invoke(cli, ["logs", run.id, "--dir", str(root), "--grep", "("])
    assert bad.exit_code != 0 and "regular expression" in bad.output


def test_logs_follow_prints_lines_as_they_come_until_the_run_ends(root):
    writer = spawn_script(
        """
        import sys
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], system=False).start()
        print("first", flush=True)
        sys.stdin.readline()
        print("second", flush=True)
        t.finish()
        """,
        str(root),
        env=ON,
    )
    writer.stdin = None
    wait_until(lambda: list_runs(root) and list_runs(root)[0].console())
    (run,) = list_runs(root)
    follower = subprocess.Popen(
        [sys.executable, "-m", "tunetrack", "logs", run.id, "--dir", str(root), "--follow"],
        env={**os.environ, "PYTHONPATH": SRC},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert follower.stdout.readline().rstrip().endswith("first")
    writer.terminate()  # SIGTERM: the run ends killed; its recorder reads to the end first
    assert follower.wait(timeout=60) == 0
    writer.wait(timeout=60)


def test_the_terminal_shows_exactly_what_it_showed_without_capture(tmp_path, root):
    """Under a pseudo-terminal (isatty true: colours and a progress bar drawn with carriage returns),
    the bytes the terminal receives are the same with capture and without, and the run has the lines."""
    script = textwrap.dedent(
        """
        import os, sys
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], system=False).start()
        print("isatty", sys.stdout.isatty(), sys.stderr.isatty(), os.get_terminal_size().columns)
        print("\\x1b[31mred\\x1b[0m plain")
        for i in range(0, 101, 25):
            sys.stderr.write(f"\\rprogress {i:3d}%")
            sys.stderr.flush()
        sys.stderr.write("\\n")
        os.write(2, b"raw\\n")
        print("done", flush=True)
        t.finish()
        """
    )
    path = tmp_path / "tty.py"
    path.write_text(script)

    def on_a_terminal(console: str) -> bytes:
        import fcntl
        import struct
        import termios

        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 123, 0, 0))
        proc = subprocess.Popen(
            [sys.executable, str(path), str(root)],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**os.environ, "PYTHONPATH": SRC, "TUNETRACK_CONSOLE": console},
        )
        os.close(slave)
        seen = b""
        while True:
            ready, _, _ = select.select([master], [], [], 30)
            assert ready, seen
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every writer has closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        os.close(master)
        assert proc.wait(timeout=30) == 0
        return seen

    plain, captured = on_a_terminal("0"), on_a_terminal("1")
    assert b"isatty True True 123" in plain
    assert captured == plain  # byte for byte, "\n" turned into "\r\n" by the terminal as before
    run = next(r for r in list_runs(root) if r.console())
    recorded = [(x.stream, x.text) for x in run.console()]
    both = "stdout+stderr"  # one terminal: one channel, so the terminal gets the bytes in their order
    assert recorded == [
        (both, t) for t in ("isatty True True 123", "red plain", "progress 100%", "raw", "done")
    ]


def test_two_streams_into_one_file_keep_their_order_there_and_in_the_run(root):
    """``2>&1``: fds 1 and 2 share one channel, so the file gets exactly the order they were written
    in, and so does the run."""
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
            import os, sys
            from tunetrack import Tracker
            t = Tracker(dir=sys.argv[1], system=False).start()
            for i in range(200):
                os.write(1 + i % 2, f"line {i}\\n".encode())
            t.finish()
            """
            ),
            str(root),
        ],
        env={**os.environ, "PYTHONPATH": SRC, **ON},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=60,
    )
    expected = [f"line {i}" for i in range(200)]
    assert proc.stdout.splitlines() == expected
    (run,) = list_runs(root)
    assert [x.text for x in run.console()] == expected
    assert {x.stream for x in run.console()} == {"stdout+stderr"}


def test_past_the_cap_the_head_and_the_tail_are_kept_and_the_cut_is_marked(root):
    """500 MB printed in 1 MB writes with a 10 MB cap: the first and the last 5 MB are kept."""
    proc = run_script(
        """
        import os, sys
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], system=False).start()
        line = b"x" * 1023 + b"\\n"
        os.write(1, b"FIRST\\n")
        block = line * 1024
        for _ in range(500):
            os.write(1, block)
        os.write(1, b"LAST\\n")
        t.finish()
        """,
        str(root),
        env={**ON, "TUNETRACK_CONSOLE_MAX": "10000000"},
        timeout=300,
    )
    assert proc.returncode == 0
    (run,) = list_runs(root)
    lines = run.console()
    assert lines[0].text == "FIRST" and lines[-1].text == "LAST"
    (cut,) = [i for i, x in enumerate(lines) if x.stream == "tunetrack"]
    assert "bytes of console output were cut here" in lines[cut].text
    cut_bytes = int(re.search(r"([\d,]+) bytes", lines[cut].text)[1].replace(",", ""))
    assert 500 * 2**20 - 11e6 < cut_bytes < 500 * 2**20 - 9e6
    assert all(x.text == "x" * 1023 for x in lines[1:cut] + lines[cut + 1 : -1])
    # about 5 MB of 1 kB lines each (the head takes whole reads of up to 1 MB: up to 1 MB more)
    assert 4_500 < cut < 6_200 and 4_500 < len(lines) - cut < 6_200
    console_file = next(Path(run.path).glob("*.console"))
    assert console_file.stat().st_size < 11e6


def test_off_and_stderr_only(root):
    code = """
        import os, sys
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], system=False, project=sys.argv[2]).start()
        os.write(1, b"to stdout\\n")
        os.write(2, b"to stderr\\n")
        t.finish()
        """
    run_script(code, str(root), "off", env={"TUNETRACK_CONSOLE": "0"})
    run_script(code, str(root), "stderr", env={"TUNETRACK_CONSOLE": "stderr"})
    run_script(code.replace("system=False", "system=False, console=False"), str(root), "arg", env=ON)
    by_project = {r.project: r for r in list_runs(root)}
    assert by_project["off"].console() == [] and not list(Path(by_project["off"].path).glob("*.console"))
    assert by_project["arg"].console() == []
    assert [(x.stream, x.text) for x in by_project["stderr"].console()] == [("stderr", "to stderr")]


def test_secrets_are_masked_before_they_are_stored(root):
    proc = run_script(
        """
        import sys
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], system=False).start()
        print("login HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123456789 ok", flush=True)
        print("push to https://user:s3cret@example.com/repo.git", flush=True)
        t.finish()
        """,
        str(root),
        env=ON,
    )
    assert "hf_abcdefghijklmnopqrstuvwxyz0123456789" in proc.stdout  # the terminal shows what it did
    (run,) = list_runs(root)
    texts = [x.text for x in run.console()]
    assert texts == [f"login HF_TOKEN={REDACTED} ok", f"push to https://{REDACTED}@example.com/repo.git"]
    stored = b"".join(p.read_bytes() for p in Path(run.path).glob("*.console"))
    assert b"hf_abcdef" not in stored and b"s3cret" not in stored


def test_a_run_in_a_bucket_has_its_console(tmp_path, monkeypatch):
    """The console file travels like the data: uploaded as chunks by the process, and read back."""
    from tunetrack import Tracker

    monkeypatch.setenv("TUNETRACK_SPOOL", str(tmp_path / "spool"))
    monkeypatch.setenv("TUNETRACK_CACHE", str(tmp_path / "cache"))
    url = f"memory://console-{os.getpid()}-{time.time_ns()}"
    t = Tracker(dir=url, system=False, console=True).start()
    os.write(1, b"into the bucket\n")
    os.write(2, b"and its stderr\n")
    t.finish()
    run = open_run(t.id, dir=url)
    assert [(x.stream, x.text) for x in run.console()] == [
        ("stdout", "into the bucket"),
        ("stderr", "and its stderr"),
    ]
    assert not list((tmp_path / "spool").rglob("*.console"))  # sent, then removed from the spool


def test_a_dead_process_console_waits_in_the_spool_and_sync_sends_it(tmp_path, monkeypatch):
    from tunetrack.store.spool import spool_root

    monkeypatch.setenv("TUNETRACK_SPOOL", str(tmp_path / "spool"))
    monkeypatch.setenv("TUNETRACK_CACHE", str(tmp_path / "cache"))
    url = f"memory://dead-{os.getpid()}-{time.time_ns()}"  # another process's memory: never reached
    proc = run_script(
        """
        import os, signal, sys
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], system=False).start()
        print("printed before SIGKILL", flush=True)
        t.flush()
        os.kill(os.getpid(), signal.SIGKILL)
        """,
        url,
        env={**ON, "TUNETRACK_SPOOL": str(tmp_path / "spool"), "TUNETRACK_UPLOAD_INTERVAL": "3600"},
        check=False,
    )
    assert proc.returncode == -9
    spooled = wait_until(lambda: [p for p in spool_root(url).rglob("*.console") if p.stat().st_size])
    (run_id,) = {p.parent.name for p in spooled}
    result = CliRunner().invoke(cli, ["sync", "--to", url])
    assert result.exit_code == 0, result.output
    assert [x.text for x in open_run(run_id, dir=url).console()] == ["printed before SIGKILL"]


# -- the pieces ------------------------------------------------------------------------------------
def test_carriage_returns_leave_what_a_terminal_shows():
    assert overlay("50%\r100%") == "100%"
    assert overlay("abcdef\rXY") == "XYcdef"
    assert overlay("done\r") == "done"


def test_lines_are_cut_redrawn_decoded_and_bounded():
    lines = Lines()
    assert lines.feed(b"a\xc3") == []  # half a UTF-8 character waits for its other half
    assert lines.feed(b"\xa9\nb\r") == ["a\u00e9"]
    assert lines.feed(b"c\n\x1b[1;32mgreen\x1b[0m\n") == ["c", "green"]
    # tput sgr0 (ESC ( B ESC [ m), a terminal reset (ESC c), a saved and restored cursor: all dropped
    assert lines.feed(b"\x1b[1mbold\x1b(B\x1b[m \x1bcreset \x1b7saved\x1b8\n") == ["bold reset saved"]
    long = lines.feed(b"y" * (3 * MAX_LINE) + b"z" * 10)  # no newline yet: kept bounded
    assert long == [] and len(lines.partial) <= 2 * MAX_LINE
    (cut,) = lines.feed(b"\n")
    assert cut.startswith("y" * MAX_LINE) and cut.endswith(f"[{2 * MAX_LINE + 10:,} characters cut]")
    assert Lines().feed(b"no newline at the end", final=True) == ["no newline at the end"]
    assert Lines(skip_first=True).feed(b"tail of a cut line\nwhole\n") == ["whole"]


def test_masking_is_for_secrets_only_and_idempotent():
    cases = {
        "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123456789": f"HF_TOKEN={REDACTED}",
        "--hub_token hf_x --max_tokens 5": f"--hub_token {REDACTED} --max_tokens 5",
        '{"api_key": "abc"}': f'{{"api_key": "{REDACTED}"}}',
        "loss=0.5 tokens_per_second=40 pad_token=<pad>": "loss=0.5 tokens_per_second=40 pad_token=<pad>",
        "sk-proj-abcdefghijklmnopqrstuvwxyz": REDACTED,
    }
    for text, masked in cases.items():
        assert redact_text(text) == masked
        assert redact_text(masked) == masked


def test_failure_signatures_prefer_the_most_specific():
    assert failures.find(["RuntimeError: CUDA error: an illegal memory access"]).name == "CUDA error"
    found = failures.find(["RuntimeError: CUDA error: x", "torch.OutOfMemoryError: CUDA out of memory."])
    assert (found.name, found.line) == ("CUDA out of memory", 1)
    watchdog = "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE)"
    assert failures.find([watchdog]).name == "NCCL timeout"
    assert failures.find(["Killed"]).name.startswith("killed")
    assert failures.find(["loss 0.5", "all good"]) is None


TORCHRUN = """
import os, sys, time
import torch.distributed as dist
from tunetrack import Tracker

dist.init_process_group("gloo")
rank = dist.get_rank()
tracker = Tracker(dir=sys.argv[1], project="torchrun-console", system=False).start()
print(f"hello from rank {rank}", flush=True)
tracker.log({"loss": 1.0}, step=1)
for _ in range(20):  # a few steps: long enough for rank 1 to find the job's run (rank 0 publishes it)
    time.sleep(0.1)
    dist.barrier()
if rank == 1:  # dies as a rank does when NCCL's watchdog gives up on a collective
    tracker.flush()
    print("[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(OpType=ALLREDUCE)", file=sys.stderr)
    sys.stderr.flush()
    os._exit(6)
dist.barrier()
tracker.finish()
dist.destroy_process_group()
"""


@pytest.mark.slow
def test_torchrun_gives_one_run_with_a_console_per_rank_and_names_the_rank_that_failed(tmp_path, root):
    script = tmp_path / "train.py"
    script.write_text(TORCHRUN)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            str(script),
            str(root),
        ],
        env={**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1", **ON},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode != 0
    assert "hello from rank 0" in proc.stdout and "hello from rank 1" in proc.stdout  # shown as before
    (run,) = list_runs(root, project="torchrun-console")
    wait_until(lambda: run.refresh() or run.state != "running", timeout=90)
    assert run.state in ("failed", "killed", "crashed")
    assert run.failure == "NCCL timeout on rank 1"
    assert sorted(p["role"] for p in run.meta["processes"]) == ["console", "primary"]
    assert {(x.rank, x.text) for x in run.console() if x.text.startswith("hello")} == {
        (0, "hello from rank 0"),
        (1, "hello from rank 1"),
    }
    rank1 = json_logs(run.id, "--dir", root, "--rank", "1")
    assert {x["rank"] for x in rank1} == {1} and rank1[0]["text"] == "hello from rank 1"
    assert "[rank 1] hello from rank 1" in logs(run.id, "--dir", root)
    assert run.series("loss").steps.tolist() == [1]  # one copy of the metrics, as before
    shown = CliRunner().invoke(cli, ["show", run.id, "--dir", str(root)]).output
    assert f"{run.state}: NCCL timeout on rank 1" in shown and "[rank 1] [Rank 1] Watchdog caught" in shown


def test_a_failed_runs_alert_names_the_failure_and_carries_the_last_lines(root, webhook):
    run_script(
        f"""
        from tunetrack import Tracker
        with Tracker(dir={str(root)!r}, system=False, alerts=[{webhook.url + "/hook"!r}]) as t:
            print("loading shard 3 of 8", flush=True)
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        """,
        env=ON,
        check=False,
    )
    (alert,) = webhook.bodies()
    assert alert["title"] == "run failed (CUDA out of memory)"
    first, rest = alert["text"].split("\n\nlast console lines:\n")
    assert first == "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert rest.splitlines()[0] == "loading shard 3 of 8" and rest.splitlines()[-1] == first
