"""One list of run states and one list of loss-like keys, used by every part that needs them: a run
that logs its loss under another framework's spelling is treated alike by the health checks, the
listing, the console and the dashboard's runs table."""

from __future__ import annotations

import io
import math
import warnings

from click.testing import CliRunner

from tunetrack import STATES, Tracker, metric_keys
from tunetrack.backends import ConsoleBackend
from tunetrack.cli import cli
from tunetrack.cli.main import ls_command
from tunetrack.reader import Catalog, open_run, run_json


def test_the_states_are_one_list():
    (state_option,) = [p for p in ls_command.params if p.name == "state"]
    assert tuple(state_option.type.choices) == STATES
    assert STATES == ("running", "finished", "failed", "killed", "crashed", "stopped")


def test_loss_under_any_known_spelling_is_a_loss_everywhere(root):
    stream = io.StringIO()
    t = Tracker(dir=root, name="tl", system=False, backends=[ConsoleBackend(stream=stream)]).start()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(1, 6):
            t.log({"epoch": float(step), "train/loss": 1.0 / step, "eval/loss": 2.0 / step}, step=step)
        t.log({"train/loss": math.nan}, step=6)
        t.finish()
    run = open_run(t.id, dir=root)
    # health: a NaN training loss is an event and one warning
    assert [(e["kind"], e["problem"], e["step"]) for e in run.events()] == [("health", "loss_nonfinite", 6)]
    assert sum("training health: train/loss" in str(w.message) for w in caught) == 1
    # the listing: loss-like columns
    table = CliRunner().invoke(cli, ["ls", "--dir", str(root)]).output
    header = [cell.strip() for cell in table.splitlines()[0].split("┃")]
    assert header[-2:] == ["train/loss", "eval/loss"]
    # the JSON shape (CLI and dashboard): the training loss under its own spelling
    assert run_json(run, run.latest())["loss"] is not None and math.isnan(run_json(run, run.latest())["loss"])
    (row,) = Catalog(root).rows()
    assert set(row["last"]) == {"train/loss", "eval/loss"} and row["last"]["eval/loss"] == 0.4
    # the console: well-known keys first, in the order of the lists
    first = next(line for line in stream.getvalue().splitlines() if "step 1 " in line)
    assert first.split("| ")[1:] == ["train/loss 1.000 ", "eval/loss 2.000 ", "epoch 1.000"]


def test_the_lists_do_not_overlap():
    groups = [metric_keys.LOSS, metric_keys.EVAL_LOSS, metric_keys.LEARNING_RATE, metric_keys.GRAD_NORM]
    keys = [k for group in groups for k in group]
    assert len(keys) == len(set(keys))
    assert (*metric_keys.LOSS, *metric_keys.EVAL_LOSS) == metric_keys.LOSS_LIKE
    assert metric_keys.main_loss({"eval_loss": 1.0, "train/loss": 2.0}) == 2.0
    assert metric_keys.main_loss({"eval_loss": 1.0}) is None


# -- one owner per small vocabulary: the old disagreements are gone ------------------------------------
def _runs_with_lr(root, values: list) -> list[str]:
    ids = []
    for i, lr in enumerate(values):
        t = Tracker(dir=root, project="p", name=f"r{i}", config={"lr": lr, "seed": i}, system=False).start()
        t.log({"eval/loss": 1.0 / (i + 1)}, step=1)
        t.finish()
        ids.append(t.id)
    return ids


def test_one_config_equality_for_diff_groups_and_sweeps(root):
    """``1`` and ``1.0`` are one setting: ``diff`` shows no difference, ``compare --group-by`` puts the
    runs in one group, and a sweep's varying keys leave ``lr`` out; ``True`` stays apart from ``1``."""
    import json

    from tunetrack.config import same, setting
    from tunetrack.reader import sweeps

    a, b, c = _runs_with_lr(root, [1, 1.0, True])
    diff = CliRunner().invoke(cli, ["diff", a, b, "--dir", str(root)])
    assert diff.exit_code == 0, diff.output
    assert "lr" not in diff.output
    assert "lr" in CliRunner().invoke(cli, ["diff", a, c, "--dir", str(root)]).output
    out = CliRunner().invoke(
        cli, ["compare", "--dir", str(root), "--group-by", "lr", "--metric", "eval/loss", "--json"]
    )
    assert out.exit_code == 0, out.output
    groups = json.loads(out.stdout)["groups"]
    assert sorted(sorted(g["runs"]) for g in groups) == sorted([sorted([a, b]), [c]])
    chosen = sweeps.select(Catalog(root), sweeps.Configs(), "config.lr < 2 and config.lr > 0.5")
    assert {r["id"] for r in chosen.rows} == {a, b}  # the filter agrees: True is no number
    values = [1, 1.0, True, math.nan, float("nan"), None, [1, {"x": 2}], [1.0, {"x": 2.0}], "1"]
    for x in values:
        for y in values:
            assert same(x, y) == (setting(x) == setting(y))


def test_key_agg_is_parsed_and_worded_once(root):
    """``KEY:AGG``: the filter, ``--sort``, ``--metric``, the dashboard's columns and the agents' tools
    read it alike, and a bad aggregate is one error worded the same by the CLI and the MCP tools."""
    from tunetrack.agents.mcp_server import Tools
    from tunetrack.aggregates import parse_spec
    from tunetrack.reader.groups import metric_field
    from tunetrack.reader.where import field
    from tunetrack.reader.where import sort as parse_sort

    _runs_with_lr(root, [1])
    assert parse_spec("eval/loss:min") == ("eval/loss", "min") and parse_spec("lr") == ("lr", None)
    assert field("eval/loss:min") == metric_field("eval/loss:min") == parse_sort("eval/loss:min:desc").field
    cli_error = CliRunner().invoke(cli, ["ls", "--dir", str(root), "--sort", "eval/loss:median"])
    assert cli_error.exit_code != 0
    try:
        Tools(root).list_runs(sort="eval/loss:median")
    except ValueError as exc:
        mcp_error = str(exc)
    assert mcp_error == "unknown aggregate 'median' at column 1 (use last, min, max, best)"
    assert cli_error.output.strip().splitlines()[-1] == f"Error: --sort: {mcp_error}"


def test_one_number_and_one_chat_predicate():
    """A bool is no number anywhere (the filter, the charts, the SQL tables); a conversation is a list
    of messages with a role for the writer and every reader alike."""
    from tunetrack.reader.samples import cell_text
    from tunetrack.values import is_chat, is_finite_number, is_number

    assert [is_number(v) for v in (1, 1.5, True, "1", None, math.nan)] == [
        True,
        True,
        False,
        False,
        False,
        True,
    ]
    assert [is_finite_number(v) for v in (1, 10**400, math.inf, math.nan, False)] == [
        True,
        True,
        False,
        False,
        False,
    ]
    chat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    assert is_chat(chat) and not is_chat([]) and not is_chat([{"content": "no role"}])
    assert cell_text(chat) == "user: hi\nassistant: yo"


def test_missing_sorts_last_the_same_way_everywhere():
    """``ls --sort``, ``samples --sort`` and ``compare --group-by``'s groups put what has no value last
    in either direction, through one ordering (``values.missing_last``)."""
    from tunetrack.reader.groups import Group
    from tunetrack.reader.samples import sort_samples
    from tunetrack.reader.where import MISSING, ordered
    from tunetrack.reader.where import sort as parse_sort
    from tunetrack.values import missing_last

    values = [2.0, None, math.nan, 1.0, 3.0]
    for descending in (False, True):
        want = [*sorted([1.0, 2.0, 3.0], reverse=descending), "none", "nan"]
        named = [("none" if v is None else "nan" if v != v else v) for v in values]
        assert [named[i] for i in missing_last(range(5), lambda i: values[i], descending)] == want
        by_sort = parse_sort("eval/loss:min:desc" if descending else "eval/loss:min")
        runs = ordered(
            list(range(5)), by_sort, lambda i: lambda f: MISSING if values[i] is None else values[i]
        )
        samples = sort_samples([{"row": {"r": v}, "step": 0} for v in values], "r", descending)
        assert [named[i] for i in runs] == want
        assert [s["row"]["r"] for s in samples][:3] == want[:3] and samples[3]["row"]["r"] is None
    groups = [Group({"lr": i}, values=[] if v is None or v != v else [v]) for i, v in enumerate(values)]
    assert [g.mean for g in missing_last(groups, lambda g: g.mean)] == [1.0, 2.0, 3.0, None, None]


def test_the_agents_tools_read_best_as_the_cli_does(root):
    """``list_runs`` and ``compare_runs`` take ``--where``'s language and each key's best direction
    (``best``: ``KEY:min|max``) the way ``ls`` and ``compare`` do, and answer the same runs in the
    same order with the same best."""
    import json

    from tunetrack.agents.mcp_server import Tools

    ids = []
    for i, rewards in enumerate([[1.0, 5.0], [2.0, 3.0], [0.5, 4.0]]):
        t = Tracker(dir=root, name=f"g{i}", config={"lr": i}, system=False).start()
        for step, r in enumerate(rewards):
            t.log({"reward": r}, step=step)
        t.finish()
        ids.append(t.id)
    tools = Tools(root)
    orders = []
    for flags in ([], ["reward:min"]):
        best = [f for way in flags for f in ("--best", way)]
        ls = CliRunner().invoke(
            cli,
            ["ls", "--dir", str(root), "--where", "config.lr < 2", "--sort", "reward:best", *best, "--json"],
        )
        assert ls.exit_code == 0, ls.output
        by_cli = [r["id"] for r in json.loads(ls.stdout)]
        answer = json.loads(tools.list_runs(where="config.lr < 2", sort="reward:best", best=flags))
        assert [r["id"] for r in answer["runs"]] == by_cli
        orders.append(by_cli)
        compared = json.loads(tools.compare_runs(ids, ["reward"], best=flags))
        listed = {r["id"]: r["summary"]["reward"]["best"] for r in json.loads(ls.stdout)}
        assert [c["best"] for c in compared["metrics"]["reward"][:2]] == [listed[i] for i in ids[:2]]
    assert orders == [[ids[1], ids[0]], [ids[0], ids[1]]]  # best 3 < 5 by max; 1 < 2 by min
