"""Rules (``monitoring.rules``): a rules file is read or refused in one line; each kind of rule
(threshold, z-score, stalled, state) fires once on a run built to trip it and not on one built not
to, in the run's own process (a ``rule`` event, an alert to a real HTTP receiver, a stop where the
rule says so) and from outside through ``tunetrack watch`` (``Watcher.poll`` on runs that real
trackers wrote, a SIGKILLed one among them, and the command itself in a process of its own)."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import warnings

import pytest

from support.helpers import SRC, spawn_script, wait_until
from tunetrack import Tracker
from tunetrack.cli.watch import Watcher
from tunetrack.monitoring.rules import Rule, load_rules, parse_rules
from tunetrack.reader import list_runs, open_run


@pytest.fixture(autouse=True)
def _quick_and_ruleless(monkeypatch):
    """Stop requests are looked for every 50 ms; no rules file comes from the environment."""
    monkeypatch.setenv("TUNETRACK_CONTROL_INTERVAL", "0.05")
    monkeypatch.delenv("TUNETRACK_RULES", raising=False)
    monkeypatch.delenv("TUNETRACK_ALERT_URL", raising=False)


def _rule_events(tracker_or_id, root):
    run_id = getattr(tracker_or_id, "id", tracker_or_id)
    return [e for e in open_run(run_id, dir=root).events() if e["kind"] == "rule"]


def _rule_alerts(webhook):
    return [b for b in webhook.bodies() if b["title"].startswith("rule ")]


# -- reading rules ----------------------------------------------------------------------------------
GOOD = """
[[rule]]
name = "eval-loss-high"
metric = "eval/loss"
above = 2.5
stop = true
level = "error"

[[rule]]
name = "loss-jump"
metric = "loss"
zscore = 6
window = 50
min_history = 10

[[rule]]
name = "hung"
stalled = "15m"

[[rule]]
name = "bad-end"
state = ["crashed", "failed"]
"""


def test_a_rules_file_reads_as_typed_rules(tmp_path):
    path = tmp_path / "rules.toml"
    path.write_text(GOOD)
    high, jump, hung, bad = load_rules(path)
    assert high == Rule("eval-loss-high", metric="eval/loss", above=2.5, stop=True, level="error")
    assert (jump.zscore, jump.window, jump.min_history, jump.level) == (6, 50, 10, "warn")
    assert hung.stalled == 900.0 and Rule("x", stalled="2h").stalled == 7200.0
    assert Rule("x", stalled="90s").stalled == 90.0 and Rule("x", stalled=30).stalled == 30.0
    assert bad.state == ("crashed", "failed")
    assert [r.condition for r in (high, jump, hung, bad)] == [
        "eval/loss above 2.5",
        "loss z-score above 6 over its last 50 values",
        "no new step for 15m",
        "state crashed or failed",
    ]
    assert Rule("band", metric="lr", above=1, below=0).condition == "lr above 1 or below 0"


@pytest.mark.parametrize(
    ("tables", "error"),
    [
        (
            [{"name": "a", "metric": "loss", "abov": 1}],
            "f: rule 'a': unknown key abov (known: name, metric, above, below, zscore, window, "
            "min_history, stalled, state, stop, level)",
        ),
        ([{"metric": "loss", "above": 1}], "f: rule #1 has no name"),
        (
            [{"name": "a", "metric": "loss"}],
            "f: rule 'a': give exactly one condition (metric with above and/or below, metric with zscore, "
            "stalled, or state), not none",
        ),
        (
            [{"name": "a", "metric": "loss", "above": 1, "zscore": 3}],
            "f: rule 'a': give exactly one condition (metric with above and/or below, metric with zscore, "
            "stalled, or state), not above/below and zscore",
        ),
        (
            [{"name": "a", "above": 1}],
            "f: rule 'a': above/below needs the metric it watches (metric = \"eval/loss\")",
        ),
        (
            [{"name": "a", "metric": "loss", "stalled": "5m"}],
            "f: rule 'a': metric is for above, below and zscore, not for a stalled rule",
        ),
        (
            [{"name": "a", "metric": "loss", "above": "high"}],
            "f: rule 'a': above must be a finite number, not 'high'",
        ),
        (
            [{"name": "a", "metric": "loss", "above": 1, "below": 2}],
            "f: rule 'a': above (1) must be greater than below (2): it fires outside them",
        ),
        ([{"name": "a", "metric": "loss", "zscore": -1}], "f: rule 'a': zscore must be positive, not -1"),
        (
            [{"name": "a", "metric": "loss", "zscore": 3, "window": 1}],
            "f: rule 'a': window must be a whole number of at least 2, not 1",
        ),
        (
            [{"name": "a", "metric": "loss", "zscore": 3, "window": 10, "min_history": 20}],
            "f: rule 'a': min_history (20) cannot exceed window (10)",
        ),
        (
            [{"name": "a", "stalled": "soon"}],
            "f: rule 'a': stalled must be a positive duration in seconds or such as '90s', '15m', '2h', not 'soon'",
        ),
        (
            [{"name": "a", "stalled": 0}],
            "f: rule 'a': stalled must be a positive duration in seconds or such as '90s', '15m', '2h', not 0",
        ),
        (
            [{"name": "a", "state": ["finished"]}],
            "f: rule 'a': state must be one or more of crashed, failed, killed, stopped, not ['finished']",
        ),
        (
            [{"name": "a", "state": "crashed", "stop": True}],
            "f: rule 'a': stop is meaningless for a state rule: the run has already ended",
        ),
        ([{"name": "a", "stalled": 60, "stop": "yes"}], "f: rule 'a': stop must be true or false, not 'yes'"),
        (
            [{"name": "a", "stalled": 60, "level": "page"}],
            "f: rule 'a': level must be one of info, warn, error, not 'page'",
        ),
        (
            [{"name": "a", "stalled": 60}, {"name": "a", "state": "failed"}],
            "f: two rules are named 'a': each rule fires once, by name",
        ),
        ([{"name": "", "stalled": 60}], "f: a rule needs a name (a non-empty string), not ''"),
        ({"name": "a"}, "f: rules are [[rule]] tables"),
    ],
)
def test_each_bad_rule_is_one_line_that_names_it(tables, error):
    with pytest.raises(ValueError) as caught:
        parse_rules(tables, "f")
    assert str(caught.value) == error and "\n" not in error


def test_a_bad_file_names_itself(tmp_path):
    path = tmp_path / "rules.toml"
    for text, error in [
        ("[[rule]\n", f"{path}: not valid TOML ("),
        ("[rules]\nname = 'a'\n", f"{path}: unknown table rules (rules are [[rule]] tables)"),
        ("[[rule]]\nname = 'a'\nstalled = '1x'\n", f"{path}: rule 'a': stalled must be"),
    ]:
        path.write_text(text)
        with pytest.raises(ValueError, match="^" + re.escape(error)):
            load_rules(path)
    with pytest.raises(ValueError, match=f"^cannot read rules file {tmp_path / 'none.toml'}: "):
        load_rules(tmp_path / "none.toml")


def test_a_tracker_given_a_broken_rules_file_warns_once_and_trains_on(root, tmp_path, monkeypatch):
    path = tmp_path / "rules.toml"
    path.write_text("[[rule]]\nname = 'a'\nabove = 1\n")
    monkeypatch.setenv("TUNETRACK_RULES", str(path))  # what every process of a job inherits
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with Tracker(dir=root, system=False) as t:
            t.log({"loss": 5.0})
    said = [str(w.message) for w in caught if "no rule is checked" in str(w.message)]
    assert said == [
        f"tunetrack: no rule is checked: {path}: rule 'a': above/below needs the metric it watches (metric = \"eval/loss\")"
    ]
    assert open_run(t.id, dir=root).state == "finished"
    with pytest.raises(ValueError, match="above/below needs the metric"):
        Tracker(dir=root, system=False, strict=True).start()


# -- in the run's own process ----------------------------------------------------------------------
def _tracker(root, webhook, *rules, **kw):
    return Tracker(dir=root, system=False, alerts=webhook.url + "/hook", rules=list(rules), **kw).start()


@pytest.mark.filterwarnings("ignore:tunetrack. rule")
@pytest.mark.filterwarnings("ignore:tunetrack. run .* was asked to stop")
def test_a_threshold_fires_once_and_stops_the_run(root, webhook):
    rule = Rule("eval-high", metric="eval/loss", above=2.0, stop=True, level="error")
    t = _tracker(root, webhook, rule)
    steps = 0
    for step in range(1, 1000):  # an eval loss that climbs past 2.0 at step 30 and stays there
        t.log({"loss": 1.0, "eval_loss": 1.0 + step / 20}, step=step)
        steps = step
        if step % 10 == 0:
            t.flush()
        if t.should_stop:
            break
    t.finish()
    assert 30 <= steps < 999  # stopped by the rule, soon after it fired
    [event] = _rule_events(t, root)
    assert (event["name"], event["key"], event["step"], event["value"]) == (
        "eval-high",
        "eval_loss",
        21,
        2.05,
    )
    assert event["condition"] == "eval/loss above 2"
    [alert] = _rule_alerts(webhook)
    assert (alert["title"], alert["level"], alert["state"]) == ("rule eval-high", "error", "running")
    assert alert["text"] == "eval_loss = 2.05 at step 21 (eval/loss above 2)"
    read = open_run(t.id, dir=root)
    assert read.state == "stopped"
    assert read.stop_request["by"] == "rule"
    assert read.stop_request["reason"] == "rule eval-high: eval_loss = 2.05 at step 21 (eval/loss above 2)"

    calm = _tracker(root, webhook, rule)
    for step in range(1, 200):
        calm.log({"eval_loss": 2.0 - step / 200}, step=step)  # at most 2.0: never above
    calm.finish()
    assert not calm.should_stop and _rule_events(calm, root) == []
    assert open_run(calm.id, dir=root).state == "finished" and len(_rule_alerts(webhook)) == 1


def _noisy(step):
    return 2.0 + 0.05 * math.sin(step * 0.7)


@pytest.mark.filterwarnings("ignore:tunetrack. (rule|training health)")
def test_a_zscore_fires_once_on_a_jump_and_not_on_noise(root, webhook):
    rule = Rule("jump", metric="train/loss", zscore=5, window=50, min_history=20)  # finds "loss"
    t = _tracker(root, webhook, rule)
    for step in range(1, 301):
        t.log({"loss": 4.0 if step in (150, 220) else _noisy(step)}, step=step)
        if step % 100 == 0:
            t.flush()  # several blocks: the history carries across them
    t.finish()
    [event] = _rule_events(t, root)
    assert (event["name"], event["key"], event["step"], event["value"]) == ("jump", "loss", 150, 4.0)
    [alert] = _rule_alerts(webhook)
    assert alert["title"] == "rule jump" and alert["level"] == "warn"
    assert alert["text"] == "loss = 4 at step 150 (train/loss z-score above 5 over its last 50 values)"
    assert open_run(t.id, dir=root).state == "finished"  # no stop asked

    calm = _tracker(root, webhook, rule)
    for step in range(1, 301):
        calm.log({"loss": _noisy(step) - step / 300}, step=step)  # noise on a steady decline
    calm.finish()
    assert _rule_events(calm, root) == [] and len(_rule_alerts(webhook)) == 1


@pytest.mark.filterwarnings("ignore:tunetrack. rule")
def test_a_stalled_rule_fires_once_when_rows_stop_coming(root, webhook):
    rule = Rule("hung", stalled=1.0, level="error")
    t = _tracker(root, webhook, rule, flush_interval=0.05)
    t.log({"loss": 1.0}, step=7)
    wait_until(lambda: _rule_alerts(webhook), timeout=30)  # the loop hangs: no row after step 7
    t.finish()
    [event] = _rule_events(t, root)
    assert (event["name"], event["step"], event["key"]) == ("hung", 7, None) and event["value"] >= 1.0
    [alert] = _rule_alerts(webhook)
    assert alert["title"] == "rule hung" and alert["text"].startswith("last step 7, ")
    assert alert["text"].endswith(" s ago (no new step for 1s)")

    calm = _tracker(root, webhook, Rule("hung", stalled=2.0), flush_interval=0.05)
    wait_until(lambda: (calm.log({"loss": 1.0}) or calm.flush()) and calm.step >= 100, timeout=60)
    calm.finish()  # a row every 50 ms or so, for longer than the rule's 2 s: no stall
    assert _rule_events(calm, root) == [] and len(_rule_alerts(webhook)) == 1


@pytest.mark.filterwarnings("ignore:tunetrack. rule")
def test_a_state_rule_fires_as_the_run_ends_so(root, webhook):
    rule = Rule("bad-end", state=["failed", "stopped"], level="error")
    with pytest.raises(ValueError), _tracker(root, webhook, rule) as t:
        t.log({"loss": 1.0}, step=3)
        raise ValueError("boom")
    [event] = _rule_events(t, root)
    assert (event["name"], event["step"], event["value"]) == ("bad-end", 3, "failed")
    [alert] = _rule_alerts(webhook)
    assert (alert["title"], alert["state"]) == ("rule bad-end", "failed")
    assert alert["text"] == "the run ended failed at step 3 (state failed or stopped)"

    with _tracker(root, webhook, rule) as calm:
        calm.log({"loss": 1.0}, step=3)
    assert _rule_events(calm, root) == [] and len(_rule_alerts(webhook)) == 1


# -- from outside: tunetrack watch ------------------------------------------------------------------
class Clock:
    """The watcher's clock, moved by the test: a stall takes no waiting."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _titles(alerts):
    return sorted((a.name, a.title) for a in alerts)


WATCH_RULES = [
    Rule("high", metric="eval/loss", above=2.0, stop=True),
    Rule("jump", metric="loss", zscore=5, window=50, min_history=20),
    Rule("hung", stalled=60),
    Rule("died", state=["crashed", "failed"], level="error"),
]

SIGKILLED = """
from tunetrack import Tracker
import time
t = Tracker(dir={root!r}, name="killed", system=False).start()
for step in range(1, 41):
    t.log({{"loss": 2.0, "eval_loss": 3.0 if step == 40 else 1.0}}, step=step)
t.flush()
print("ready", flush=True)
time.sleep(120)
"""


@pytest.mark.filterwarnings("ignore:tunetrack. (training health|run .* was asked to stop)")
def test_the_watcher_fires_each_rule_once_on_runs_that_trip_it(root, monkeypatch):
    clock = Clock()
    watcher = Watcher(None, clock=clock, rules=WATCH_RULES, dir=str(root))
    trip = Tracker(dir=root, name="trip", system=False, rules=[]).start()
    calm = Tracker(dir=root, name="calm", system=False, rules=[]).start()
    for step in range(1, 41):
        trip.log({"loss": _noisy(step), "eval_loss": 1.0}, step=step)
        calm.log({"loss": _noisy(step), "eval_loss": 1.0}, step=step)
    trip.flush(), calm.flush()
    assert watcher.poll(list_runs(root)) == []

    for step in range(41, 61):  # trip: a loss jump, then an eval loss past 2.0; calm: more noise
        trip.log(
            {"loss": 9.0 if step == 45 else _noisy(step), "eval_loss": 2.5 if step == 50 else 1.0}, step=step
        )
        calm.log({"loss": _noisy(step), "eval_loss": 1.9}, step=step)
    trip.flush(), calm.flush()
    clock.now = 30
    fired = watcher.poll(list_runs(root))
    assert _titles(fired) == [("trip", "rule high"), ("trip", "rule jump")]
    high = next(a for a in fired if a.title == "rule high")
    assert high.text == "eval_loss = 2.5 at step 50 (eval/loss above 2)" and high.state == "running"
    wait_until(lambda: trip.should_stop, timeout=30)  # high stops: the watcher asked the run
    assert trip.stop_request["by"] == "tunetrack watch"
    assert trip.stop_request["reason"] == "rule high: " + high.text

    calm.log({"loss": _noisy(61)}, step=61)  # calm goes on; trip hangs (its last step stays 60)
    calm.flush()
    clock.now = 100
    assert _titles(watcher.poll(list_runs(root))) == [("trip", "rule hung")]

    calm.log({"loss": _noisy(62)}, step=62)
    calm.flush()
    clock.now = 200
    assert watcher.poll(list_runs(root)) == []  # each rule once per run; calm never stalls 60 s

    trip.finish(), calm.finish()  # trip ends stopped, calm finished: neither is a state of "died"
    clock.now = 210
    assert watcher.poll(list_runs(root)) == []
    assert open_run(trip.id, dir=root).state == "stopped"

    killed = spawn_script(SIGKILLED.format(root=str(root)))  # born after the watcher started
    try:
        assert killed.stdout.readline().strip() == "ready"
    finally:
        killed.kill()  # SIGKILL: its own process can say nothing
        killed.wait()  # reaped: its pid is gone, so it reads crashed
    clock.now = 300
    fired = wait_until(lambda: watcher.poll(list_runs(root)), timeout=30)
    assert _titles(fired) == [("killed", "rule died"), ("killed", "rule high"), ("killed", "run crashed")]
    died = next(a for a in fired if a.title == "rule died")
    assert (died.state, died.level, died.text) == (
        "crashed",
        "error",
        "the run ended crashed at step 40 (state crashed or failed)",
    )
    assert watcher.poll(list_runs(root)) == []


@pytest.mark.filterwarnings("ignore:tunetrack. rule")
def test_the_watcher_does_not_repeat_what_a_run_fired_itself(root, monkeypatch):
    rules = [Rule("high", metric="eval/loss", above=2.0), Rule("died", state=["failed"])]
    watcher = Watcher(None, rules=rules, dir=str(root))
    with pytest.raises(RuntimeError), Tracker(dir=root, name="own", system=False, rules=rules) as t:
        t.log({"eval_loss": 3.0}, step=1)
        raise RuntimeError("boom")
    assert {e["name"] for e in _rule_events(t, root)} == {"high", "died"}  # its own process fired both
    assert watcher.poll(list_runs(root)) == []


@pytest.mark.filterwarnings("ignore:tunetrack. run .* was asked to stop")
def test_tunetrack_watch_rules_command(root, tmp_path, webhook):
    """The command as a user runs it: its rules alert, and stop a running run; a bad file is refused
    in one line, and without --alert only rules that stop runs make sense."""
    path = tmp_path / "rules.toml"
    path.write_text('[[rule]]\nname = "high"\nmetric = "eval/loss"\nabove = 2.0\nstop = true\n')
    env = {**os.environ, "PYTHONPATH": SRC}
    watch = subprocess.Popen(
        [sys.executable, "-m", "tunetrack", "watch", "--dir", str(root), "--rules", str(path)]
        + ["--alert", webhook.url + "/hook", "--interval", "0.2"],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert watch.stdout.readline().startswith(f"watching {root} (every 0.2 s, 1 rule;")
        t = Tracker(dir=root, name="live", system=False, rules=[]).start()
        t.log({"eval_loss": 1.0}, step=1)
        t.log({"eval_loss": 2.5}, step=2)
        t.flush()
        wait_until(lambda: t.should_stop, timeout=60)
        t.finish()
    finally:
        watch.kill()
        watch.wait()
    [alert] = _rule_alerts(webhook)
    assert (alert["title"], alert["name"], alert["text"]) == (
        "rule high",
        "live",
        "eval_loss = 2.5 at step 2 (eval/loss above 2)",
    )
    assert t.stop_request["by"] == "tunetrack watch"
    assert open_run(t.id, dir=root).state == "stopped"

    no_hook = {k: v for k, v in env.items() if k != "TUNETRACK_ALERT_URL"}
    path.write_text('[[rule]]\nname = "high"\nmetric = "eval/loss"\nabove = 2.0\n')  # alerts only
    refused = subprocess.run(
        [sys.executable, "-m", "tunetrack", "watch", "--dir", str(root), "--rules", str(path)],
        env=no_hook,
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 1
    assert refused.stderr.strip() == "Error: give a webhook: --alert URL, or set TUNETRACK_ALERT_URL"
    path.write_text('[[rule]]\nname = "high"\nmetric = "eval/loss"\nabove = "x"\n')
    bad = subprocess.run(
        [sys.executable, "-m", "tunetrack", "watch", "--dir", str(root), "--alert", webhook.url]
        + ["--rules", str(path)],
        env=no_hook,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 1
    assert bad.stderr.strip() == f"Error: {path}: rule 'high': above must be a finite number, not 'x'"
