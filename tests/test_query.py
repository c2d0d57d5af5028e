"""``tunetrack query`` and ``tunetrack.query``: every table holds what the read API returns, SQL answers
what pandas does, and anything but one read-only query is refused in one line."""

from __future__ import annotations

import json
import math
import sys

import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import tunetrack
from support.helpers import run_script, wait_until
from tunetrack import Tracker
from tunetrack.cli import cli
from tunetrack.config import text
from tunetrack.metric_keys import minimized
from tunetrack.reader import list_runs, present
from tunetrack.reader.as_json import provenance
from tunetrack.sql import TABLES, QueryError, run_sql

ALPHA = {"lr": 1e-3, "model": {"layers": 2, "name": "tiny"}, "optimizer": {"betas": [0.9, 0.999]}}
BETA = {"lr": 3e-4, "model": {"layers": 4, "name": "tiny"}, "warmup": True}


class Source:
    """A system-metrics source that counts its samples."""

    name = "fake"
    samples = 0

    def sample(self) -> dict[str, float]:
        self.samples += 1
        return {"cpu.percent": 12.5 + self.samples, "gpu.0.util": 80.0}

    def close(self) -> None: ...


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """alpha (p1, system metrics, NaN, None, text and an event), beta (p1, failed), gamma (p2)."""
    root = tmp_path_factory.mktemp("q") / "runs"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TUNETRACK_PARQUET", "1")  # `metrics`, `system`, `params` then come from the copies
        record(root)
    return root


def record(root) -> None:
    source = Source()
    a = Tracker(
        project="p1",
        name="alpha",
        dir=root,
        tags=["base", "lora"],
        config=ALPHA,
        system_sources=[source],
        system_interval=0.05,
    ).start()
    for step in range(1, 201):
        a.log({"loss": 3.0 - step / 100, "eval/accuracy": step / 200}, step=step)
    a.log({"odd": math.nan, "none": None, "note": "done", "eval_loss": 0.5}, step=200)
    a.log({"eval_loss": None}, step=201)
    a.event("checkpoint", step=100, path="/ckpt/100", score=math.nan)
    wait_until(lambda: source.samples >= 3)
    a.finish()
    with (
        pytest.raises(RuntimeError),
        Tracker(project="p1", name="beta", dir=root, system=False, config=BETA) as b,
    ):
        b.log({"loss": 1.5}, step=1)
        b.log({"loss": 1.25}, step=2)
        raise RuntimeError("diverged")
    with Tracker(project="p2", name="gamma", dir=root, system=False, config={"lr": 1e-3}) as c:
        c.log({"loss": 2.0, "lr": 0.1}, step=1)


def sql(query: str, root) -> pd.DataFrame:
    return tunetrack.query(query, dir=root)


def records(frame: pd.DataFrame) -> list[dict]:
    """Rows as dicts with NaN/None/NA all as None (pandas' missing values)."""
    return [
        {k: (None if pd.api.types.is_scalar(v) and pd.isna(v) else v) for k, v in row.items()}
        for row in frame.to_dict("records")
    ]


def test_every_table_has_its_documented_columns(store):
    for table, (_, columns) in TABLES.items():
        got = list(sql(f"SELECT * FROM {table} LIMIT 0", store).columns)
        if table == "params_wide":
            assert got[0] == "run" and "model.layers" in got and "optimizer.betas" in got
        else:
            assert got == [name for name, _, _ in columns]


def test_runs_table_is_the_read_api(store):
    runs = list_runs(store)
    got = {r["id"]: r for r in records(sql("SELECT * FROM runs", store))}
    assert len(got) == 3
    for run in runs:
        row = got[run.id]
        git = provenance(run)["git"] or {}
        assert (row["name"], row["project"], row["state"]) == (run.name, run.project, run.state)
        assert list(row["tags"]) == run.tags and list(row["hosts"]) == run.hosts
        assert row["created"] == run.created and row["ended"] == run.ended
        assert row["duration"] == pytest.approx(run.ended - run.created)
        assert row["last_step"] == run.last_step
        assert (row["git_commit"], row["git_branch"]) == (git.get("commit"), git.get("branch"))
    beta = next(r for r in got.values() if r["name"] == "beta")
    assert beta["state"] == "failed" and beta["error"] == "RuntimeError: diverged"
    assert {r["failure"] for r in got.values()} == {None}  # a RuntimeError of its own: no known failure
    assert "Traceback" in beta["traceback"]
    assert {r["error"] for r in got.values() if r["name"] != "beta"} == {None}


def test_params_are_the_flattened_config(store):
    got = records(sql("SELECT * FROM params ORDER BY run, key", store))
    want = sorted(
        (
            {
                "run": run.id,
                "key": key,
                "value": text(value),
                "number": None
                if isinstance(value, (bool, list))
                else float(value)
                if isinstance(value, (int, float))
                else None,
            }
            for run in list_runs(store)
            for key, value in run.flat_config.items()
        ),
        key=lambda r: (r["run"], r["key"]),
    )
    assert got == want
    wide = records(sql('SELECT run, lr, "model.layers", "model.name", warmup FROM params_wide', store))
    by_run = {r["run"]: r for r in wide}
    for run in list_runs(store):
        flat = run.flat_config
        assert by_run[run.id]["lr"] == flat["lr"]
        assert by_run[run.id]["model.layers"] == flat.get("model.layers")
        assert by_run[run.id]["warmup"] == (None if "warmup" not in flat else text(flat["warmup"]))


def test_metrics_are_every_visible_point(store):
    got = sql("SELECT * FROM metrics", store)
    for run in list_runs(store):
        mine = got[got.run == run.id]
        assert set(mine.key) == {k for k in run.keys() if len(present(run.series(k)))}
        assert set(mine.process) == {p["proc"] for p in run.meta["processes"]}
        for key in run.keys():
            s = present(run.series(key))
            rows = mine[mine.key == key].sort_values("time", kind="stable")
            assert rows.step.tolist() == s.steps.tolist() and rows.time.tolist() == s.times.tolist()
            for value, number, txt in zip(s.values, rows.value, rows.text):
                if isinstance(value, str):
                    assert pd.isna(number) and txt == value
                elif isinstance(value, float) and math.isnan(value):
                    assert math.isnan(number) and pd.isna(txt)  # a NaN logged is a NaN, not a NULL
                else:
                    assert number == value and pd.isna(txt)
    # None is no point, NaN is one, text is kept as text
    assert sql("SELECT count(*) n FROM metrics WHERE key = 'none'", store).n[0] == 0
    assert sql("SELECT count(*) n FROM metrics WHERE key = 'eval_loss'", store).n[0] == 1
    assert sql("SELECT count(*) n FROM metrics WHERE isnan(value)", store).n[0] == 1
    assert sql("SELECT text FROM metrics WHERE key = 'note'", store).text.tolist() == ["done"]


def test_system_and_events_tables(store):
    alpha = next(r for r in list_runs(store) if r.name == "alpha")
    got = sql("SELECT * FROM system", store)
    assert set(got.run) == {alpha.id}
    for key in alpha.system_keys():
        for node, s in alpha.system_series(key).items():
            rows = got[(got.key == key) & (got.node == node)].sort_values("time", kind="stable")
            assert rows.time.tolist() == s.times.tolist() and rows.value.tolist() == s.values.tolist()
    events = records(sql("SELECT * FROM events ORDER BY time", store))
    want = [
        {"run": run.id, "step": e["step"], "time": e["time"], "kind": e["kind"]}
        for run in list_runs(store)
        for e in run.events()
    ]
    assert [{k: v for k, v in e.items() if k != "data"} for e in events] == sorted(
        want, key=lambda e: e["time"]
    )
    checkpoint = next(e for e in events if e["kind"] == "checkpoint")
    assert json.loads(checkpoint["data"]) == {"path": "/ckpt/100", "score": "NaN"}
    assert sql("SELECT data->>'path' AS p FROM events WHERE kind = 'checkpoint'", store).p.tolist() == [
        "/ckpt/100"
    ]


def test_summary_is_the_runs_summary_with_the_best_value(store):
    got = {(r["run"], r["key"]): r for r in records(sql("SELECT * FROM summary", store))}
    for run in list_runs(store):
        for key, s in run.summary().items():
            row = got[(run.id, key)]
            for field in ("min", "max", "step", "count"):
                assert row[field] == s[field], (key, field)
            assert row["last"] == (
                s["last"] if isinstance(s["last"], float) and not math.isnan(s["last"]) else None
            ) or (isinstance(s["last"], float) and math.isnan(s["last"]))
            if s["min"] is not None:
                assert row["best"] == (s["min"] if minimized(key) else s["max"])
    alpha = next(r for r in list_runs(store) if r.name == "alpha")
    assert got[(alpha.id, "loss")]["best_step"] == 200  # lowest loss, last step
    assert got[(alpha.id, "eval/accuracy")]["best_step"] == 200  # highest accuracy


def test_group_by_and_join_give_the_pandas_answer(store):
    got = sql(
        "SELECT run, min(value) AS lowest FROM metrics WHERE key = 'loss' GROUP BY run ORDER BY run", store
    )
    frames = [r.history(["loss"]).assign(run=r.id) for r in list_runs(store)]
    want = pd.concat(frames).groupby("run")["loss"].min().sort_index()
    assert got.run.tolist() == want.index.tolist() and got.lowest.tolist() == want.tolist()
    joined = sql(
        "SELECT p.number AS lr, min(m.value) AS lowest FROM metrics m JOIN params p ON p.run = m.run "
        "AND p.key = 'lr' WHERE m.key = 'loss' GROUP BY p.number ORDER BY lr",
        store,
    )
    runs = list_runs(store)
    by_lr = pd.DataFrame({"lr": [r.flat_config["lr"] for r in runs], "run": [r.id for r in runs]})
    want_join = (
        by_lr.merge(pd.concat(frames).groupby("run")["loss"].min().reset_index()).groupby("lr")["loss"].min()
    )
    assert joined.lr.tolist() == want_join.index.tolist() and joined.lowest.tolist() == want_join.tolist()


REFUSED = {
    "CREATE TABLE x AS SELECT 1": "refused CREATE",
    "INSERT INTO runs VALUES ('x')": "refused INSERT",
    "UPDATE runs SET name = 'x'": "refused UPDATE",
    "DROP TABLE runs": "refused DROP",
    "ATTACH '/tmp/tunetrack-x.db'": "refused ATTACH",
    "COPY runs TO '/tmp/tunetrack-x.csv'": "refused COPY",
    "INSTALL httpfs": "refused INSTALL",  # DuckDB's parser types it LOAD: named as written
    "LOAD httpfs": "refused LOAD",
    "SET threads = 1": "refused SET",
    "PRAGMA version": "refused PRAGMA",
    "SELECT 1; SELECT 2": "2 statements given",
    "EXPLAIN ANALYZE CREATE TABLE x AS SELECT 1": "refused CREATE",
    "SELECT * FROM read_csv('/etc/passwd')": "file system operations are disabled",
    "SELECT * FROM read_text('/etc/passwd')": "file system operations are disabled",
}


@pytest.mark.parametrize("statement", list(REFUSED))
def test_anything_but_one_read_only_query_is_refused_in_one_line(store, statement):
    with pytest.raises(QueryError) as caught:
        run_sql(statement, store)
    assert REFUSED[statement] in str(caught.value) and "\n" not in str(caught.value)
    result = CliRunner().invoke(cli, ["query", statement, "--dir", str(store)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.count("\n") == 1 and result.output.startswith("Error: ")


def test_read_only_queries_of_every_kind_run(store):
    assert "metrics" in sql("SHOW TABLES", store).name.tolist()
    assert "best_step" in sql("DESCRIBE summary", store).column_name.tolist()
    assert len(sql("EXPLAIN SELECT * FROM runs", store))
    assert sql("WITH l AS (FROM metrics WHERE key = 'loss') SELECT count(*) n FROM l", store).n[0] == 203


def test_a_sql_error_is_one_line(store):
    result = CliRunner().invoke(cli, ["query", "SELECT nope FROM runs", "--dir", str(store)])
    assert result.exit_code == 1 and result.output.count("\n") == 1
    assert result.output.startswith("Error: Binder Error:") and "nope" in result.output
    # DuckDB's hint stays on the line
    hinted = CliRunner().invoke(cli, ["query", "SELECT * FROM summry", "--dir", str(store)])
    assert (
        hinted.output
        == 'Error: Catalog Error: Table with name summry does not exist!; Did you mean "summary"?\n'
    )
    bound = CliRunner().invoke(cli, ["query", "SELECT rn FROM runs", "--dir", str(store)])
    assert 'Candidate bindings: "' in bound.output and bound.output.count("\n") == 1


def test_formats_round_trip(store, tmp_path):
    query = "SELECT run, key, step, value FROM metrics WHERE key = 'loss' ORDER BY run, step"
    want = sql(query, store)
    out = CliRunner().invoke(cli, ["query", query, "--dir", str(store), "--format", "csv"]).stdout
    assert pd.read_csv(pd.io.common.StringIO(out)).equals(want)
    as_json = CliRunner().invoke(cli, ["query", query, "--dir", str(store), "--format", "json"]).stdout
    assert pd.DataFrame(json.loads(as_json)).equals(want)
    path = tmp_path / "out.parquet"
    result = CliRunner().invoke(
        cli, ["query", "SELECT * FROM runs", "--dir", str(store), "--format", "parquet", "-o", str(path)]
    )
    assert result.exit_code == 0 and "wrote 3 rows" in result.stderr
    back = pq.read_table(path).to_pandas()
    assert back.drop(columns=["duration"]).equals(sql("SELECT * FROM runs", store).drop(columns=["duration"]))
    table = CliRunner().invoke(
        cli, ["query", "SELECT name, tags FROM runs ORDER BY name", "--dir", str(store)]
    )
    assert "alpha" in table.stdout and "base, lora" in table.stdout
    missing = CliRunner().invoke(cli, ["query", "SELECT 1", "--dir", str(store), "--format", "parquet"])
    assert missing.exit_code == 2 and "-o FILE" in missing.output


def test_only_the_tables_named_are_built(store, monkeypatch):
    from tunetrack.sql import schema as tables

    built = []
    for name, builder in list(tables.BUILDERS.items()):
        monkeypatch.setitem(
            tables.BUILDERS,
            name,
            lambda runs, name=name, builder=builder: (built.append(name), builder(runs))[1],
        )
    assert sql("SELECT count(*) n FROM runs", store).n[0] == 3
    assert built == ["runs"]


def test_without_duckdb_the_error_is_the_pip_command(store, monkeypatch):
    monkeypatch.setitem(sys.modules, "duckdb", None)  # import duckdb -> ImportError
    result = CliRunner().invoke(cli, ["query", "SELECT 1", "--dir", str(store)])
    assert result.exit_code == 1
    assert (
        result.output
        == "Error: tunetrack query needs duckdb, pandas and pyarrow: pip install 'tunetrack[query]'\n"
    )


def test_the_docs_list_the_tables_as_the_code_does():
    from pathlib import Path

    from tunetrack.sql.schema import markdown

    assert markdown() in (Path(__file__).resolve().parents[1] / "docs" / "query.md").read_text()


def test_the_copies_and_the_records_give_the_same_tables(store, monkeypatch):
    """The store's runs ended with pyarrow loaded, so ``metrics``, ``system`` and ``params`` come from
    their Parquet copies; read from the records instead, every row is the same."""
    from tunetrack.reader import parquet

    order = {"metrics": "run, key, process, step", "system": "run, key, node, time", "params": "run, key"}
    from_copies = {t: sql(f"SELECT * FROM {t} ORDER BY {o}", store) for t, o in order.items()}
    assert all(parquet.current_file(run, "metrics") is not None for run in list_runs(store))
    monkeypatch.setattr("tunetrack.sql.engine.split", lambda runs, table: ([], list(runs)))
    for table, o in order.items():
        pd.testing.assert_frame_equal(sql(f"SELECT * FROM {table} ORDER BY {o}", store), from_copies[table])
    assert len(from_copies["metrics"]) > 400 and len(from_copies["system"]) >= 6


def test_samples_and_console_tables(root):
    """What the model wrote and what the job printed, in SQL: the samples as ``samples`` rows (prompt,
    completion, the total reward, the whole row as JSON), the console as ``console`` lines."""
    done = run_script(
        f"""
        from tunetrack import Tracker
        with Tracker(project="rl", name="grpo", dir={str(root)!r}, system=False) as t:
            print("step 1 reward 0.5", flush=True)
            rows = [
                {{"prompt": "say a number:", "completion": "4\\x1b]0;T\\x07", "has_digit": 1.0, "short": 1.0, "reward": 1.5}},
                {{"prompt": "say a number:", "completion": "four", "has_digit": 0.0, "short": 1.0, "reward": 0.5}},
            ]
            t.log_table("completions", rows, step=1)
            t.log({{"reward": 1.0}}, step=1)
            print("done", flush=True)
        """,
        env={"TUNETRACK_CONSOLE": "1"},
    )
    assert done.returncode == 0
    best = sql(
        "SELECT step, index, prompt, completion, reward, data->>'has_digit' AS d FROM samples ORDER BY reward DESC",
        root,
    )
    assert records(best) == [
        {
            "step": 1,
            "index": 0,
            "prompt": "say a number:",
            "completion": "4\x1b]0;T\x07",
            "reward": 1.5,
            "d": "1.0",
        },
        {"step": 1, "index": 1, "prompt": "say a number:", "completion": "four", "reward": 0.5, "d": "0.0"},
    ]
    lines = sql("SELECT rank, stream, text FROM console ORDER BY time", root)
    assert records(lines) == [
        {"rank": 0, "stream": "stdout", "text": "step 1 reward 0.5"},
        {"rank": 0, "stream": "stdout", "text": "done"},
    ]
    # a terminal gets the completion's control characters written out, never sent
    shown = CliRunner().invoke(cli, ["query", "SELECT completion FROM samples", "--dir", str(root)]).output
    assert "\\x1b]0;T\\x07" in shown and "\x1b" not in shown


def test_a_failed_grpo_runs_samples_console_and_failure(root):
    """A run shaped as TRL's GRPO writes it (a chat prompt, one column per reward function and no
    total ``reward``) that printed progress in colour, then died of a CUDA error: ``runs.failure``
    classifies it, ``samples`` has no reward but the row's every column in ``data``, and ``console``
    holds the progress without its escapes, then the traceback on stderr."""
    failed = run_script(
        f"""
        import socket
        from tunetrack import Tracker
        t = Tracker(project="rl", name="grpo", dir={str(root)!r}, system=False).start()
        rows = [
            {{"step": 3, "prompt": [{{"role": "user", "content": "say a number"}}], "completion": c,
              "has_digit": d, "advantage": d - 0.5}}
            for c, d in (("4", 1.0), ("four", 0.0))
        ]
        t.log_table("completions", rows, step=3)
        print("\\x1b[32mstep 3\\x1b[0m reward 0.5", flush=True)
        print("host", socket.gethostname(), flush=True)
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
        """,
        env={"TUNETRACK_CONSOLE": "1"},
        check=False,
    )
    assert failed.returncode == 1
    (run,) = records(sql("SELECT id, state, failure, error FROM runs", root))
    assert (run["state"], run["failure"]) == ("failed", "CUDA error on rank 0")
    assert run["error"] == "RuntimeError: CUDA error: an illegal memory access was encountered"
    got = sql(
        "SELECT run, key, step, index, prompt, completion, reward, data->>'has_digit' AS d, "
        "(data->>'advantage')::DOUBLE AS a, data->>'step' AS own_step FROM samples ORDER BY a DESC",
        root,
    )
    assert records(got) == [
        {
            "run": run["id"],
            "key": "completions",
            "step": 3,
            "index": i,
            "prompt": "user: say a number",
            "completion": c,
            "reward": None,  # no total reward column: NULL, not a reward function's
            "d": d,
            "a": a,
            "own_step": "3",
        }
        for i, c, d, a in ((0, "4", "1.0", 0.5), (1, "four", "0.0", -0.5))
    ]
    lines = records(sql("SELECT run, host, rank, stream, text FROM console ORDER BY time", root))
    host = lines[1]["text"].removeprefix("host ")
    assert lines[0] == {
        "run": run["id"],
        "host": host,
        "rank": 0,
        "stream": "stdout",
        "text": "step 3 reward 0.5",
    }
    assert [x["text"] for x in lines if x["stream"] == "stderr"][0] == "Traceback (most recent call last):"
    assert lines[-1]["text"] == "RuntimeError: CUDA error: an illegal memory access was encountered"
