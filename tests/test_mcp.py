"""``tunetrack mcp``: the server started as agent clients start it (a command over stdio), driven by the
MCP SDK's own stdio client: the tools listed, each called, edits only with ``--allow-edits``."""

from __future__ import annotations

import json
import math
import os
import sys
import uuid

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from support.helpers import SRC, run_script, spawn_script, wait_until
from tunetrack import Tracker, TunetrackWarning
from tunetrack.reader import open_run

READ_TOOLS = {
    "list_projects",
    "list_runs",
    "get_run",
    "get_metrics",
    "get_logs",
    "get_samples",
    "compare_runs",
    "get_checkpoints",
    "list_artifacts",
    "get_lineage",
    "query",
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("mcp") / "runs"
    # a spike at step 517: the thinned series must keep it (the health monitor warns of it)
    with (
        pytest.warns(TunetrackWarning, match="loss spike"),
        Tracker(project="p1", name="alpha", dir=root, system=False, config={"lr": 1e-3, "m": {"d": 2}}) as a,
    ):
        for step in range(1, 1001):
            a.log({"loss": 3.0 - step / 1000 + (5.0 if step == 517 else 0.0)}, step=step)
        a.log({"odd": math.nan}, step=1000)
    with (
        pytest.raises(RuntimeError),
        Tracker(project="p2", name="beta", dir=root, system=False, config={"lr": 3e-4}) as b,
    ):
        b.log({"loss": 1.5}, step=1)
        raise RuntimeError("diverged")
    return root


def call(root, calls: list[tuple[str, dict]], *flags: str) -> tuple[set[str], list[tuple[bool, str]]]:
    """Start ``tunetrack mcp --dir root *flags``, list its tools and make ``calls``: (tool names,
    [(is an error, the text of the answer)])."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tunetrack", "mcp", "--dir", str(root), *flags],
        env={"PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")},
    )

    async def session() -> tuple[set[str], list[tuple[bool, str]]]:
        with anyio.fail_after(120):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
                return await requests(client)

    async def requests(client: ClientSession) -> tuple[set[str], list[tuple[bool, str]]]:
        await client.initialize()
        names = {t.name for t in (await client.list_tools()).tools}
        answers = []
        for name, args in calls:
            result = await client.call_tool(name, args)
            error = getattr(result, "is_error", getattr(result, "isError", False))  # mcp 2, mcp 1
            answers.append((bool(error), "".join(c.text for c in result.content)))
        return names, answers

    return anyio.run(session)


def test_every_read_tool_answers_compactly(store):
    alpha, beta = open_run("alpha", dir=store), open_run("beta", dir=store)
    names, answers = call(
        store,
        [
            ("list_projects", {}),
            ("list_runs", {"project": "p1"}),
            ("list_runs", {"sort": "loss", "limit": 1}),
            ("get_run", {"run": "beta"}),
            ("get_metrics", {"runs": ["alpha", "beta"], "points": 40}),
            ("compare_runs", {"runs": ["alpha", "beta"]}),
            (
                "query",
                {
                    "sql": "SELECT run, min(value) AS lowest FROM metrics WHERE key = 'loss' GROUP BY run ORDER BY lowest",
                    "limit": 1,
                },
            ),
            ("get_logs", {"run": "beta"}),
        ],
    )
    assert names == READ_TOOLS  # no edits without --allow-edits
    assert not any(error for error, _ in answers), answers
    projects, p1, by_loss, got, metrics, compared, rows, logs = (json.loads(text) for _, text in answers)
    assert {(p["project"], p["runs"]) for p in projects} == {("p1", 1), ("p2", 1)}
    assert [r["id"] for r in p1["runs"]] == [alpha.id]
    assert [r["id"] for r in by_loss["runs"]] == [beta.id] and by_loss["total"] == 2 and by_loss["shown"] == 1
    assert got["error"] == "RuntimeError: diverged" and got["overview"]["state"] == "failed"
    assert got["config"] == {"lr": 3e-4} and got["summary"]["loss"]["last"] == 1.5
    series = metrics[0]["series"]["loss"]
    assert series["count"] == 1000 and len(series["steps"]) <= 40 and 517 in series["steps"]  # the spike kept
    assert metrics[0]["keys"] == alpha.keys() and metrics[1]["run"] == beta.id
    assert compared["config_diff"] == {"lr": ["0.001", "0.0003"], "m.d": ["2", None]}
    assert compared["metrics"]["loss"][1] == {"last": 1.5, "min": 1.5, "max": 1.5, "best": 1.5}
    assert rows["row_count"] == 2 and rows["shown"] == 1 and rows["rows"] == [{"run": beta.id, "lowest": 1.5}]
    assert logs["lines"] == [] and logs["note"].startswith("no console lines recorded")  # console off


def test_errors_reach_the_agent_in_one_line(store):
    _, answers = call(
        store,
        [
            ("get_run", {"run": "nope"}),
            ("query", {"sql": "DROP TABLE runs"}),
            ("tag_run", {"run": "alpha", "add": ["x"]}),
            ("stop_run", {"run": "alpha"}),
        ],
    )
    (e1, no_run), (e2, refused), (e3, no_edits), (e4, no_stop) = answers
    assert e1 and "no run 'nope'" in no_run
    assert e2 and "refused DROP" in refused and "\n" not in refused
    assert e3 and "tag_run" in no_edits
    assert e4 and "stop_run" in no_stop
    assert open_run("alpha", dir=store).tags == []


def test_edits_only_with_allow_edits(store):
    names, answers = call(
        store,
        [
            ("tag_run", {"run": "alpha", "add": ["best"]}),
            ("note_run", {"run": "alpha", "text": "lowest loss"}),
        ],
        "--allow-edits",
    )
    assert names == READ_TOOLS | {"tag_run", "note_run", "stop_run"}
    assert not any(error for error, _ in answers)
    run = open_run("alpha", dir=store)
    assert run.tags == ["best"] and [n["text"] for n in run.notes] == ["lowest loss"]
    assert json.loads(answers[0][1])["tags"] == ["best"]


def test_stop_run_stops_a_live_run_and_refuses_an_ended_one(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNETRACK_CONTROL_INTERVAL", "0.05")  # the live run looks for requests often
    root = tmp_path / "runs"
    done = Tracker(name="done", dir=root, console=False, system=False).start()
    done.finish()
    live = Tracker(name="live", dir=root, console=False, system=False).start()
    try:
        _, answers = call(
            root,
            [
                ("stop_run", {"run": "live", "reason": "loss diverged"}),
                ("stop_run", {"run": "live", "reason": "asked again"}),
                ("stop_run", {"run": "done"}),
            ],
            "--allow-edits",
        )
        wait_until(lambda: live.should_stop, timeout=20)  # the request reached the run's process
    finally:
        live.finish()
    (e1, first), (e2, again), (e3, ended) = answers
    assert not e1 and not e2
    stopped = json.loads(first)
    assert {k: stopped[k] for k in ("id", "name", "state")} == {
        "id": live.id,
        "name": "live",
        "state": "running",
    }
    assert stopped["stop"]["reason"] == "loss diverged" and stopped["stop"]["by"].endswith(" (mcp)")
    assert json.loads(again)["stop"] == stopped["stop"]  # the first request counts
    assert e3 and ended.endswith(f"run {done.id} (done) is finished: there is nothing to stop")
    read = open_run(live.id, dir=root)
    assert read.state == "stopped" and read.stop_request == stopped["stop"]


def test_logs_samples_and_why_a_run_died(root):
    """An agent asked "why did it die, what did it print last, which completion scored best" gets the
    answers: a killed-by-an-error run's failure, cause and last lines before its traceback, the lines
    themselves (by rank, grep, tail), and the samples (last step, sorted by the total reward)."""
    failed = run_script(
        f"""
        from tunetrack import Tracker
        t = Tracker(project="rl", name="grpo", dir={str(root)!r}, system=False).start()
        for step in (1, 2):
            rows = [
                {{"prompt": "p", "completion": f"c{{step}}-{{i}}", "has_digit": float(i % 2), "short": 1.0}}
                for i in range(4)
            ]
            t.log_table("completions", rows, step=step)
            t.log({{"loss": 1.0 / step}}, step=step)
            print(f"step {{step}} done", flush=True)
        raise RuntimeError("CUDA error: an illegal memory access was encountered\\nCUDA kernel errors might be asynchronously reported")
        """,
        env={"TUNETRACK_CONSOLE": "1"},
        check=False,
    )
    assert failed.returncode == 1
    _, answers = call(
        root,
        [
            ("get_run", {"run": "grpo"}),
            ("get_logs", {"run": "grpo", "tail": 2, "grep": "step"}),
            ("get_samples", {"run": "grpo", "sort": "has_digit+short:desc", "limit": 2}),
            ("get_samples", {"run": "grpo", "step": 1, "sort": "completion"}),
            ("list_runs", {"where": "loss:min < 1", "sort": "loss:min"}),
            ("get_samples", {"run": "grpo", "sort": "rewrd"}),
            ("get_logs", {"run": "grpo", "rank": 2}),
            ("get_metrics", {"runs": ["grpo"], "keys": ["train/loss", "los"]}),
            ("list_runs", {"sort": "lossx:min"}),
        ],
    )
    assert [error for error, _ in answers] == [False] * 5 + [True] * 4, answers
    run, logs, best, first, listed = (json.loads(text) for _, text in answers[:5])
    assert run["failure"] == "CUDA error on rank 0"
    assert run["error"] == "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert [line.split("   ")[-1] for line in run["last_lines"]] == ["step 1 done", "step 2 done"]
    assert run["samples"] == {"completions": {"steps": 2, "rows": 8}}
    assert [line["text"] for line in logs["lines"]] == ["step 1 done", "step 2 done"]
    assert best["step"] == 2 and best["matched"] == 4 and best["shown"] == 2
    assert [r["completion"] for r in best["rows"]] == ["c2-1", "c2-3"]
    assert [r["completion"] for r in first["rows"]] == ["c1-0", "c1-1", "c1-2", "c1-3"]
    assert [r["name"] for r in listed["runs"]] == ["grpo"] and listed["runs"][0]["loss:min"] == 0.5
    bad_sort, bad_rank, bad_key, bad_metric = (text for _, text in answers[5:])
    assert "no table of samples has column 'rewrd'" in bad_sort
    assert "has no rank 2 (ranks: 0)" in bad_rank
    assert "no run has metric 'los'; did you mean loss" in bad_key  # train/loss found loss; los is nobody's
    assert "no run has metric 'lossx:min'; did you mean loss:min" in bad_metric


def test_samples_and_logs_write_control_characters_out_and_bad_input_is_one_line(root):
    """TRL's table (its own step column, one column per reward function, the advantage) beside a
    second table: a completion's escape sequence and a printed bell reach the agent written out, and
    each bad argument is an error of one line naming what there is."""
    done = run_script(
        f"""
        from tunetrack import Tracker
        with Tracker(project="rl", name="grpo", dir={str(root)!r}, system=False) as t:
            for step in (5, 10):
                rows = [
                    {{"step": step, "prompt": [{{"role": "user", "content": f"say {{i}}"}}],
                      "completion": f"{{i}}\\x1b[2J" if i == 1 else f"n{{i}}", "has_digit": float(i == 1),
                      "short": 0.5, "advantage": i - 1.0}}
                    for i in range(3)
                ]
                t.log_table("completions", rows, step=step)
                print(f"step {{step}} ding\\x07", flush=True)
            t.log_table("eval", [{{"text": "x"}}], step=10)
        """,
        env={"TUNETRACK_CONSOLE": "1"},
    )
    assert done.returncode == 0
    _, answers = call(
        root,
        [
            ("get_run", {"run": "grpo"}),
            (
                "get_samples",
                {"run": "grpo", "key": "completions", "sort": "has_digit+short:desc", "limit": 1},
            ),
            ("get_samples", {"run": "grpo", "key": "completions", "step": "all", "prompt": "say 2"}),
            ("get_samples", {"run": "grpo", "key": "completions", "step": 5, "grep": "^n", "full": True}),
            ("get_logs", {"run": "grpo"}),
            ("get_logs", {"run": "grpo", "grep": "nothing like it"}),
            ("get_samples", {"run": "grpo"}),
            ("get_samples", {"run": "grpo", "key": "complet"}),
            ("get_samples", {"run": "grpo", "key": "completions", "step": 7}),
            ("get_samples", {"run": "grpo", "key": "completions", "step": "first"}),
            ("get_samples", {"run": "grpo", "key": "completions", "sort": "rewrd:desc"}),
            ("get_samples", {"run": "grpo", "key": "completions", "grep": "[bad"}),
            ("get_logs", {"run": "grpo", "grep": "(unclosed"}),
        ],
    )
    assert [error for error, _ in answers] == [False] * 6 + [True] * 7, answers
    assert all("\x1b" not in text and "\\u001b" not in text for _, text in answers)  # never sent, nor hidden
    run, best, by_prompt, plain, logs, none = (json.loads(text) for _, text in answers[:6])
    assert run["failure"] is None and run["error"] is None and run["last_lines"] is None  # it finished
    assert run["samples"] == {"completions": {"steps": 2, "rows": 6}, "eval": {"steps": 1, "rows": 1}}
    assert best["step"] == 10 and (best["matched"], best["shown"]) == (3, 1)
    assert best["steps"] == {"first": 5, "last": 10, "count": 2, "all": [5, 10]}
    assert best["rows"] == [
        {
            "step": 10,
            "index": 1,
            "prompt": "user: say 1",
            "completion": "1\\x1b[2J",  # written out: printed, it clears nothing
            "has_digit": 1.0,
            "short": 0.5,
            "advantage": 0.0,
        }
    ]
    assert by_prompt["step"] is None and [(r["step"], r["completion"]) for r in by_prompt["rows"]] == [
        (5, "n2"),
        (10, "n2"),
    ]
    assert [r["completion"] for r in plain["rows"]] == ["n0", "n2"] and plain["matched"] == 2
    assert [line["text"] for line in logs["lines"]] == ["step 5 ding\\x07", "step 10 ding\\x07"]
    assert {tuple(line) for line in logs["lines"]} == {("time", "stream", "text")}  # one rank: no rank
    assert none["lines"] == [] and none["note"] == "no line of 2 matches grep 'nothing like it'"
    several, no_key, no_step, bad_step, bad_sort, bad_grep, bad_log_grep = (text for _, text in answers[6:])
    assert "\n" not in "".join(text for _, text in answers[6:])
    assert several.endswith("has several tables of samples: give key (completions, eval)")
    assert "table of samples 'complet'; did you mean completions" in no_key
    assert no_step.endswith("no samples at step 7 (steps 5 to 10, 2 in all)")
    assert bad_step.endswith("step: give a number, 'last' or 'all', not 'first'")
    assert "no table of samples has column 'rewrd'" in bad_sort
    assert "grep: '[bad' is not a regular expression" in bad_grep
    assert "grep: '(unclosed' is not a regular expression" in bad_log_grep


def test_a_killed_runs_last_lines_and_a_run_of_two_ranks(root):
    """A run killed without a word (SIGKILL) shows what it printed last in ``get_run``; a job of two
    ranks gives each line its rank, and ``get_logs`` one rank's lines, or names the ranks there are."""
    killed = run_script(
        f"""
        import os, signal
        from tunetrack import Tracker
        t = Tracker(project="k", name="sigkill-loop", dir={str(root)!r}, system=False).start()
        for step in range(1, 4):
            t.log({{"loss": 1.0 / step}}, step=step)
            print(f"step {{step}} loss {{1.0 / step:.2f}}", flush=True)
        t.flush()
        os.kill(os.getpid(), signal.SIGKILL)
        """,
        env={"TUNETRACK_CONSOLE": "1"},
        check=False,
    )
    assert killed.returncode == -9
    job = uuid.uuid4().hex
    ranks = [
        spawn_script(
            RANKED,
            str(root),
            env={
                "RANK": str(rank),
                "LOCAL_RANK": str(rank),
                "WORLD_SIZE": "2",
                "LOCAL_WORLD_SIZE": "2",
                "TORCHELASTIC_RUN_ID": job,
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": "29556",
                "TUNETRACK_CONSOLE": "1",
            },
        )
        for rank in (1, 0)  # rank 1 first: it waits for rank 0's run
    ]
    for proc in ranks:
        assert proc.wait(timeout=120) == 0, proc.stderr.read()
    wait_until(lambda: len(open_run("sigkill-loop", dir=root).console()) == 3)
    _, answers = call(
        root,
        [
            ("get_run", {"run": "sigkill-loop"}),
            ("get_logs", {"run": "ddp"}),
            ("get_logs", {"run": "ddp", "rank": 1}),
            ("get_logs", {"run": "ddp", "rank": 3}),
        ],
    )
    assert [error for error, _ in answers] == [False] * 3 + [True], answers
    run, both, one = (json.loads(text) for _, text in answers[:3])
    assert run["overview"]["state"] == "crashed" and run["error"] is None
    assert [line.split("   ")[-1] for line in run["last_lines"]] == [
        "step 1 loss 1.00",
        "step 2 loss 0.50",
        "step 3 loss 0.33",
    ]
    assert sorted((x["rank"], x["text"]) for x in both["lines"]) == [
        (0, "hello from rank 0"),
        (1, "hello from rank 1"),
    ]
    assert [(x["rank"], x["text"]) for x in one["lines"]] == [(1, "hello from rank 1")]
    assert answers[3][1].endswith("has no rank 3 (ranks: 0, 1)")


#: a process of a job of two ranks (torchrun's environment): each prints its rank
RANKED = """
import os, sys, time
from tunetrack import Tracker
t = Tracker(dir=sys.argv[1], project="two", name="ddp", system=False).start()
print(f"hello from rank {os.environ['RANK']}", flush=True)
t.log({"loss": 1.0}, step=1)
time.sleep(0.5)
t.finish()
"""


def test_checkpoints_artifacts_and_lineage_through_the_sdk_client(root, tmp_path):
    """A run that used a data set and saved two checkpoints (one rotated away): the agent finds the
    best checkpoint by eval loss and walks from the data set to it, as ``tunetrack lineage`` does."""
    data = tmp_path / "data.jsonl"
    data.write_text('{"text": "hello"}\n')
    with Tracker(project="p", name="sft", dir=root, system=False) as t:
        t.log_input(data, name="corpus", kind="dataset").result()
        for step, loss in ((2, 0.9), (4, 0.7)):
            folder = tmp_path / f"checkpoint-{step}"
            folder.mkdir()
            (folder / "adapter_model.safetensors").write_bytes(b"w" * step)
            t.log({"eval_loss": loss}, step=step)
            t.log_checkpoint(folder, metrics={"eval_loss": loss})
        (tmp_path / "checkpoint-2" / "adapter_model.safetensors").unlink()
        (tmp_path / "checkpoint-2").rmdir()
    run = open_run("sft", dir=root)
    _, answers = call(
        root,
        [
            ("get_checkpoints", {"project": "p", "best": "eval/loss"}),
            ("list_artifacts", {"kind": "dataset"}),
            ("get_lineage", {"ref": "corpus"}),
            ("get_checkpoints", {"run": "sft", "best": "accuracy"}),
            ("get_lineage", {"ref": "sft@3"}),
        ],
    )
    assert [error for error, _ in answers] == [False, False, False, True, True]
    found, artifacts, graph = (json.loads(text) for _, text in answers[:3])
    assert [(c["step"], c["deleted"], c["best"]) for c in found["checkpoints"]] == [
        (2, True, False),
        (4, False, True),
    ]
    assert found["checkpoints"][1]["files"] == 1  # hashed; the rotated one perhaps not before it went
    assert found["best"] == f"{run.id}@4"
    assert [(a["spec"], a["used_by"]) for a in artifacts] == [("corpus:v1", [run.id])]
    assert {(e["source"], e["relation"], e["target"]) for e in graph["edges"]} == {
        ("artifact:corpus:v1", "used", f"run:{run.id}"),
        (f"run:{run.id}", "saved", f"checkpoint:{run.id}@2"),
        (f"run:{run.id}", "saved", f"checkpoint:{run.id}@4"),
    }
    assert "no checkpoint has 'accuracy'; their metrics: eval_loss" in answers[3][1]
    assert "saved no checkpoint at step 3; it saved at [2, 4]" in answers[4][1]


def test_a_run_of_many_keys_folded_for_an_agent(tmp_path):
    """A mixture-of-experts run (4 layers × 16 experts of load, beside its loss): get_run's summary and
    get_metrics' key list hold one entry for the family; a glob reads as the band of its keys'
    percentiles (equal to NumPy's on the raw values), and a glob nothing matches is one line."""
    import numpy as np

    root = tmp_path / "runs"
    loads = np.random.default_rng(0).gamma(2.0, 1.0, size=(30, 64))
    keys = [f"moe/layer{layer}/expert{e}/load" for layer in range(4) for e in range(16)]
    with Tracker(name="moe", dir=root, system=False, console=False) as t:
        for step in range(30):
            t.log({"loss": 1.0 / (step + 1), **dict(zip(keys, loads[step].tolist()))}, step=step)
    pattern = "moe/layer*/expert*/load"
    _, answers = call(
        root,
        [
            ("get_run", {"run": "moe"}),
            ("get_metrics", {"runs": ["moe"]}),
            ("get_metrics", {"runs": ["moe"], "keys": [pattern, "loss"], "points": 200}),
            ("get_metrics", {"runs": ["moe"], "keys": ["moe/layr*/load"]}),
            ("get_run", {"run": "moe", "full": True}),
        ],
    )
    (_, run), (_, listed), (_, band), (failed, missing), (_, full) = answers
    summary = json.loads(run)["summary"]
    assert list(summary) == ["loss", pattern]
    assert summary[pattern] == {
        "keys": 64,
        "median": pytest.approx(float(np.median(loads[-1]))),
        "min": pytest.approx(float(loads.min())),
        "max": pytest.approx(float(loads.max())),
        "step": 29,
    }
    assert len(json.loads(full)["summary"]) == 65  # full: every key
    (metrics,) = json.loads(listed)
    assert metrics["keys"] == ["loss", pattern] and metrics["key_count"] == 65
    assert list(metrics["series"]) == ["loss"]
    (metrics,) = json.loads(band)
    got = metrics["series"][pattern]
    assert got["keys"] == 64 and got["steps"] == list(range(30))
    want = np.percentile(loads, [5, 50, 95, 100], axis=1)
    for i, name in enumerate(("p5", "p50", "p95", "max")):
        assert got[name] == pytest.approx(want[i].tolist())
    assert metrics["series"]["loss"]["count"] == 30
    assert failed and "did you mean moe/layer*/expert*/load" in missing and "\n" not in missing.strip()
