"""``tunetrack run`` and ``tunetrack stop`` on a bucket (moto's S3 server on 127.0.0.1): a Trainer
script that knows nothing of tunetrack is recorded into the bucket, and stopped from another process
that shares only the bucket; it stops within a few steps, with a checkpoint, and reads stopped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support.helpers import SRC, wait_until

EXAMPLES = str(Path(SRC).parent / "examples")

TRAIN = """
import sys, time
sys.path.insert(0, sys.argv[2])
from _tiny import build_dataset, build_model, build_tokenizer
from transformers import Trainer, TrainerCallback, TrainingArguments

class Pause(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        time.sleep(0.05)

tok = build_tokenizer()
args = TrainingArguments(
    output_dir=sys.argv[1], max_steps=3000, per_device_train_batch_size=4, logging_steps=1,
    save_strategy="steps", save_steps=5000, report_to="none", use_cpu=True, disable_tqdm=True,
)
Trainer(model=build_model(tok), args=args, train_dataset=build_dataset(tok), processing_class=tok,
        callbacks=[Pause()]).train()
print("train() returned", flush=True)
"""


def test_tunetrack_stop_on_a_bucket(s3_url, tmp_path):
    env = {
        **os.environ,
        "PYTHONPATH": SRC,
        "TUNETRACK_SPOOL": str(tmp_path / "spool"),
        "TUNETRACK_CACHE": str(tmp_path / "cache"),
        "TUNETRACK_UPLOAD_INTERVAL": "0.5",
        "TUNETRACK_CONTROL_INTERVAL": "0.3",
    }
    command = subprocess.Popen(
        [sys.executable, "-m", "tunetrack", "run", "--dir", s3_url, "--", sys.executable, "-c", TRAIN,
         str(tmp_path / "out"), EXAMPLES],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    # a colleague's machine: only the bucket is shared (a cache of its own)
    elsewhere = {**os.environ, "PYTHONPATH": SRC, "TUNETRACK_CACHE": str(tmp_path / "other-cache")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tunetrack", *args, "--dir", s3_url],
            env=elsewhere,
            capture_output=True,
            text=True,
            timeout=120,
        )

    try:
        assert command.stderr is not None
        line = command.stderr.readline()  # tunetrack: recording as run <id> (<name>) in <store>
        assert line.startswith("tunetrack: recording as run "), line
        run_id = line.split()[4]

        def stepped() -> bool:
            shown = cli("ls", "--json")
            return (
                shown.returncode == 0
                and '"last_step": ' in shown.stdout
                and '"last_step": null' not in shown.stdout
            )

        wait_until(stepped, timeout=300)
        stop = cli("stop", run_id, "--reason", "from another machine", "--wait", "120")
        assert stop.returncode == 0, stop.stderr
        out, _ = command.communicate(timeout=120)
    finally:
        command.kill()
    assert command.returncode == 0 and "train() returned" in out
    shown = cli("show", run_id, "--json")
    assert shown.returncode == 0, shown.stderr
    import json

    run = json.loads(shown.stdout)
    assert run["state"] == "stopped" and run["stop"]["reason"] == "from another machine"
    assert run["exit_code"] == 0
    [stopped] = [e for e in run["events"] if e["kind"] == "stop"]
    assert run["last_step"] < 3000 and run["last_step"] - stopped["step"] <= 5
    checkpoints = json.loads(cli("checkpoints", run_id, "--json").stdout)
    assert [c["step"] for c in checkpoints] == [run["last_step"]]


def test_a_stop_request_reaches_a_tracker_writing_to_a_bucket(s3_url, tmp_path, monkeypatch):
    from tunetrack import Tracker
    from tunetrack.manage import stop_run
    from tunetrack.reader import open_run

    monkeypatch.setenv("TUNETRACK_SPOOL", str(tmp_path / "spool"))
    monkeypatch.setenv("TUNETRACK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TUNETRACK_CONTROL_INTERVAL", "0.1")
    run = Tracker(dir=s3_url, console=False, system=False).start()
    run.log({"loss": 1.0}, step=1)
    wait_until(lambda: _listed(s3_url, run.id), timeout=60)
    stop_run(run.id, "enough", dir=s3_url)
    wait_until(lambda: run.should_stop, timeout=30)
    run.finish()
    assert open_run(run.id, dir=s3_url).state == "stopped"


def _listed(s3_url: str, run_id: str) -> bool:
    from tunetrack.reader import list_runs

    return any(r.id == run_id for r in list_runs(s3_url))
