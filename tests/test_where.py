"""``tunetrack ls --where EXPR --sort KEY``: the runs the expression picks and their order, checked
against the same question asked of a pandas frame of the generated 60-run sweep; bad expressions fail
in one line that points at the column."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from test_aggregates import truth
from tunetrack.cli import cli
from tunetrack.reader import list_runs
from tunetrack.reader.where import MISSING, WhereError, parse, select


@pytest.fixture(scope="module")
def sweep(sweep_store):
    root, made = sweep_store
    listed = [r.id for r in list_runs(root)]  # newest first: the order --sort keeps for ties
    rows = []
    for run in sorted(made, key=lambda r: listed.index(r.id)):
        row = {"id": run.id, "name": run.name, "state": run.state, "tags": run.tags}
        row.update({f"config.{k}": v for k, v in run.flat.items()})
        for key, points in run.points.items():
            for agg, value in truth(points, lower=key != "reward").items():
                if agg in ("last", "min", "max", "best"):
                    row[f"{key}:{agg}"] = value
        rows.append(row)
    return root, pd.DataFrame(rows)


def ls(root, *args: str) -> list[str]:
    out = CliRunner().invoke(cli, ["ls", "--dir", str(root), "--json", *args])
    assert out.exit_code == 0, out.output
    return [r["id"] for r in json.loads(out.stdout)]


def cases(df: pd.DataFrame) -> list[tuple[str, pd.Series]]:
    mid = float(df["eval/loss:min"].median())
    reward = float(df["reward:best"].quantile(0.7))
    has = df["tags"].map(lambda tags: "best" in tags)
    baseline = df["tags"].map(lambda tags: "baseline" in tags)
    return [
        ("config.lora.r >= 16", df["config.lora.r"] >= 16),
        (
            f"eval/loss:min < {mid!r} and config.lr = 3e-4",
            (df["eval/loss:min"] < mid) & (df["config.lr"] == 3e-4),
        ),
        ('tag = "best" or state = "failed"', has | (df["state"] == "failed")),
        (
            "not (config.lora.r in [4, 8]) and train/loss < 0.5",
            ~df["config.lora.r"].isin([4, 8]) & (df["train/loss:last"] < 0.5),
        ),
        ('name ~ "^lr0\\.001-" and "baseline" in tags', df["name"].str.match(r"lr0\.001-") & baseline),
        (
            f"reward:best >= {reward!r} or config.seed != 2",
            (df["reward:best"] >= reward) | (df["config.seed"] != 2),
        ),
        ("`eval/loss`:max > 0.9 or not config.model = 'tiny'", df["eval/loss:max"] > 0.9),
    ]


def test_where_picks_what_pandas_picks(sweep):
    root, df = sweep
    for expr, mask in cases(df):
        expected = df[mask]["id"].tolist()
        assert ls(root, "--where", expr) == expected, expr
        assert 0 < len(expected) < 60, expr


@pytest.mark.parametrize(
    "spec, column, descending",
    [
        ("eval/loss:min", "eval/loss:min", False),
        ("reward:best:desc", "reward:best", True),
        ("config.lr:desc", "config.lr", True),
        ("name", "name", False),
        ("train/loss:max", "train/loss:max", False),
    ],
)
def test_sort_orders_as_pandas_does(sweep, spec, column, descending):
    root, df = sweep
    expected = df.sort_values(column, ascending=not descending, kind="stable", na_position="last")
    assert ls(root, "--sort", spec) == expected["id"].tolist()
    top = df[df["config.lora.r"] == 32].sort_values(column, ascending=not descending, kind="stable")
    assert ls(root, "--where", "config.lora.r = 32", "--sort", spec, "--limit", "3") == top["id"].tolist()[:3]


def test_the_api_reads_the_config_only_when_asked(sweep):
    root, df = sweep
    runs = list_runs(root)
    picked = select(runs, "eval/loss:min < 0.6", "eval/loss:min")
    assert all("config" not in r.__dict__ for r in runs)  # the summary came from the end records alone
    assert [r.id for r in picked] == df[df["eval/loss:min"] < 0.6].sort_values("eval/loss:min")["id"].tolist()


@pytest.mark.parametrize(
    "expr, message",
    [
        ("config.lr >> 1", "unexpected '>>' at column 11"),
        ("config.lr >", "unexpected end at column 12"),
        ("(state = 'x'", "unexpected end at column 13"),
        ("loss:median < 1", "unknown aggregate 'median' at column 1 (use last, min, max, best)"),
        ("state = @", "unexpected '@' at column 9"),
        (
            'name ~ "("',
            "bad regular expression at column 6: missing ), unterminated subpattern at position 0",
        ),
        ("and state = 'x'", "unexpected 'and' at column 1"),
    ],
)
def test_a_bad_expression_is_one_line_with_its_column(sweep, expr, message):
    root, _ = sweep
    out = CliRunner().invoke(cli, ["ls", "--dir", str(root), "--where", expr])
    assert out.exit_code == 2
    assert out.stderr.strip().splitlines() == [f"Error: --where: {message}"]
    with pytest.raises(WhereError, match="column"):
        parse(expr)


def test_missing_compares_like_nan_and_python_is_never_evaluated():
    def look(values):
        return lambda f: values.get(str(f), MISSING)

    assert parse("config.a != 1")(look({})) and not parse("config.a = 1")(look({}))
    assert not parse("config.a < 1")(look({})) and parse("config.a not in [1]")(look({}))
    assert not parse("config.flag = 1")(look({"config.flag": True}))  # a bool equals only a bool
    assert parse("config.flag = true")(look({"config.flag": True}))
    assert not parse("config.a < 'b'")(look({"config.a": 1}))  # a number and text do not compare
    with pytest.raises(WhereError):
        parse("__import__('os').system('true')")
