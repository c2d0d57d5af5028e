"""Alerts to a real HTTP receiver on 127.0.0.1: a failed run (the exception's last line), a NaN loss at
every step (one alert), a user's alert in Slack's, Discord's and the generic format, a killed run,
``tunetrack watch`` catching a SIGKILLed run and a stalled one, and webhooks that fail or hang
(training unaffected, one warning)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import warnings

from support.helpers import SRC, run_script, spawn_script, wait_until
from tunetrack import Tracker
from tunetrack.reader import list_runs, open_run


def test_a_failed_run_alerts_with_the_exceptions_last_line(root, webhook):
    proc = run_script(
        f"""
        from tunetrack import Tracker
        with Tracker(dir={str(root)!r}, project="sft", name="boom", system=False, alerts=[{webhook.url + "/hook"!r}]) as t:
            t.log({{"loss": 1.0}}, step=1)
            raise ValueError("boom at step 1")
        """,
        env={"TUNETRACK_DASHBOARD_URL": "http://dash.example:8477/"},
        check=False,
    )
    assert proc.returncode == 1
    (run,) = list_runs(root)
    (alert,) = webhook.bodies()
    assert alert["title"] == "run failed" and alert["level"] == "error" and alert["state"] == "failed"
    assert alert["text"] == "ValueError: boom at step 1"  # the traceback's last line
    assert (alert["run_id"], alert["name"], alert["project"]) == (run.id, "boom", "sft")
    assert alert["link"] == f"http://dash.example:8477/run/{run.id}"
    assert isinstance(alert["time"], float)


def test_a_nan_loss_at_every_step_sends_one_alert(root, webhook):
    t = Tracker(dir=root, name="nan", system=False, alerts=webhook.url + "/hook").start()
    for step in range(1, 301):
        t.log({"loss": float("nan")}, step=step)
        if step % 50 == 0:
            t.flush()  # several written blocks, each with NaNs
    t.finish()
    (alert,) = webhook.bodies()
    assert alert["title"] == "loss is nan" and alert["level"] == "warn" and alert["state"] == "running"
    assert alert["text"] == "loss = nan at step 1"
    assert len([e for e in open_run(t.id, dir=root).events() if e["kind"] == "health"]) > 1


def test_a_user_alert_in_each_format_and_the_finish_alert(root, webhook):
    slack, discord, generic = "/services/T01/B02/xyz", "/api/webhooks/123/tok-en", "/hook"
    t = Tracker(
        dir=root,
        name="<b>sweep</b>",
        system=False,
        alerts=[webhook.url + path for path in (slack, discord, generic)],
        alert_finished=True,
    ).start()
    t.log({"loss": 0.5}, step=7)
    t.alert("eval done", "acc 0.91", level="warn")
    t.finish()
    line = f"[warn] eval done: run <b>sweep</b> ({t.id}), running"
    assert webhook.bodies(slack) == [
        {"text": f"*{line}*\nacc 0.91"},
        {"text": f"*[info] run finished: run <b>sweep</b> ({t.id}), finished*\n7 steps"},
    ]
    first = webhook.bodies(discord)[0]
    assert first["embeds"] == [{"title": line, "description": "acc 0.91", "color": 0xF59E0B}]
    assert [b["title"] for b in webhook.bodies(generic)] == ["eval done", "run finished"]
    (event,) = [e for e in open_run(t.id, dir=root).events() if e["kind"] == "alert"]
    assert (event["title"], event["text"], event["level"], event["step"]) == (
        "eval done",
        "acc 0.91",
        "warn",
        7,
    )


def test_a_killed_run_alerts(root, webhook):
    proc = spawn_script(
        f"""
        import time
        from tunetrack import Tracker
        t = Tracker(dir={str(root)!r}, name="victim", system=False, alerts={webhook.url + "/hook"!r}).start()
        t.log({{"loss": 1.0}}, step=1); t.flush()
        print("ready", flush=True)
        time.sleep(60)
        """
    )
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    (alert,) = webhook.bodies()
    assert (alert["title"], alert["text"], alert["state"]) == ("run killed", "stopped at step 1", "killed")


TRAIN_THEN_HANG = """
import time
from tunetrack import Tracker
t = Tracker(dir={root!r}, name={name!r}, system=False).start()
for step in range(1, 4):
    t.log({{"loss": 1.0 / step}}, step=step)
t.flush()
print("ready", flush=True)
time.sleep(120)
"""


def test_watch_catches_a_sigkilled_run_and_a_stalled_one(root, webhook):
    watch = subprocess.Popen(
        [sys.executable, "-m", "tunetrack", "watch", "--dir", str(root), "--alert", webhook.url + "/hook"]
        + ["--interval", "0.3", "--stall", "2"],
        env={**os.environ, "PYTHONPATH": SRC},
        stdout=subprocess.PIPE,
        text=True,
    )
    victims = [spawn_script(TRAIN_THEN_HANG.format(root=str(root), name=n)) for n in ("killed", "stuck")]
    try:
        for proc in victims:
            assert proc.stdout.readline().strip() == "ready"
        wait_until(lambda: len(list_runs(root)) == 2 and "stalled" in str(webhook.bodies()), timeout=60)
        victims[0].kill()  # SIGKILL: the run's own process cannot alert
        victims[0].wait()  # reaped, as its shell would (a zombie still answers a signal check)
        wait_until(lambda: "run crashed" in str(webhook.bodies()), timeout=60)
    finally:
        for proc in [*victims, watch]:
            proc.kill()
            proc.wait()
    alerts = {(b["name"], b["title"]) for b in webhook.bodies()}
    assert ("killed", "run crashed") in alerts and ("stuck", "run stalled") in alerts
    assert ("stuck", "run crashed") not in alerts
    crashed = next(b for b in webhook.bodies() if b["title"] == "run crashed")
    assert crashed["level"] == "error" and crashed["state"] == "crashed" and "last step 3" in crashed["text"]
    stalled = [b for b in webhook.bodies() if b["title"] == "run stalled"]
    assert {b["name"] for b in stalled} <= {"killed", "stuck"} and len(stalled) <= 2  # once per run
    assert "[error] run crashed: run killed" in watch.stdout.read()


def test_watch_needs_a_webhook(root):
    proc = subprocess.run(
        [sys.executable, "-m", "tunetrack", "watch", "--dir", str(root)],
        env={**{k: v for k, v in os.environ.items() if k != "TUNETRACK_ALERT_URL"}, "PYTHONPATH": SRC},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip() == "Error: give a webhook: --alert URL, or set TUNETRACK_ALERT_URL"


def test_a_hanging_webhook_costs_training_nothing(root, webhook, monkeypatch):
    monkeypatch.setenv("TUNETRACK_ALERT_TIMEOUT", "1")
    webhook.hang = True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = Tracker(dir=root, name="hang", system=False, alerts=[webhook.url + "/hook"]).start()
        t.alert("first", "held by the receiver")
        for step in range(1, 2001):
            t.log({"loss": 1.0 / step}, step=step)
        t.finish()
        assert webhook.holding >= 1  # finish returned while the receiver still held the request
        wait_until(lambda: any("could not send an alert" in str(w.message) for w in caught), timeout=30)
    run = open_run(t.id, dir=root)
    assert run.state == "finished" and run.series("loss").steps.tolist() == list(range(1, 2001))
    sent = [w for w in caught if "could not send an alert" in str(w.message)]
    assert len(sent) == 1 and webhook.url.split("//")[1] in str(sent[0].message)
    assert "/hook" not in str(sent[0].message)  # the webhook's secret path is never printed


def test_a_failing_webhook_is_retried_then_warned_about_once(root, webhook):
    webhook.status = 500
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = Tracker(dir=root, name="fail", system=False, alerts=[webhook.url + "/hook"]).start()
        t.alert("one")
        t.alert("two")
        t.finish()
        wait_until(lambda: len(webhook.bodies()) == 6, timeout=30)  # three attempts for each
    assert [b["title"] for b in webhook.bodies()] == ["one"] * 3 + ["two"] * 3
    assert len([w for w in caught if "could not send an alert" in str(w.message)]) == 1
