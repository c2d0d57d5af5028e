"""What users read back, on the runs a new user has: a GRPO run, an SFT LoRA sweep with seeds, a
Trainer that dies of PyTorch's real CUDA error and a SIGKILLed loop, recorded by the documented
one-line callback (``real_runs.py``). Every README and docs example that reads runs is run as
written, as a user runs it (``tunetrack`` in a process of its own, the store from
``TUNETRACK_DIR``), and gives the answer it promises; the answers are checked against the runs'
own data (``open_run``), never against numbers written here.

What stands for something in an example is replaced by what it stands for here, and nothing else:
a run (``<id>``, ``RUN``, ``5r0``, ``lora-r16``), a project (``sweep``) and, in the two sweeps
examples that pick runs by their eval loss, the loss threshold (0.7 for a real fine-tune; these tiny
models start near 5.5). ``test_every_example_is_checked`` keeps the list whole: an example added to
the docs fails it until it is checked here or named with the test that checks it.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tunetrack.reader import list_runs, open_run

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
#: the pages whose examples read runs recorded by the Transformers/TRL callback
PAGES = [
    "README.md",
    "docs/index.md",
    "docs/cli.md",
    "docs/console.md",
    "docs/samples.md",
    "docs/sweeps.md",
    "docs/query.md",
    "docs/names.md",
    "docs/agents.md",
    "docs/alerts.md",
    "docs/ui.md",
    "docs/run.md",
    "docs/tui.md",
    "docs/team.md",
]
#: the loss threshold of the sweeps examples, for these tiny models (see the module's docstring)
THRESHOLD = ("eval/loss:min < 0.7", "eval/loss:min < 5.4")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The runs, recorded afresh (``REAL_RUNS_STORE``: a copy of a store ``real_runs.py`` recorded
    before, to iterate on these tests without training again)."""
    root = tmp_path_factory.mktemp("real") / "tunetrack_runs"
    if os.environ.get("REAL_RUNS_STORE"):
        import shutil

        shutil.copytree(os.environ["REAL_RUNS_STORE"], root)
    else:
        subprocess.run([sys.executable, str(HERE / "real_runs.py"), str(root)], check=True, timeout=900)
    return root


@pytest.fixture(scope="module")
def runs(store):
    return {r.name: r for r in list_runs(store)}


def tt(store: Path, command: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``command`` (a docs line, ``tunetrack ...``) as a user's shell runs it, on ``store``."""
    env = {**os.environ, "TUNETRACK_DIR": str(store), "COLUMNS": "200"}
    return subprocess.run(
        command.replace("tunetrack ", f"{sys.executable} -m tunetrack ", 1),
        shell=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd or store.parent,
        timeout=300,
    )


def ok(store: Path, command: str, cwd: Path | None = None) -> str:
    done = tt(store, command, cwd)
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def sweep(runs) -> list:
    return [r for name, r in runs.items() if name.startswith("sft-")]


def eval_min(run) -> float:
    return float(min(run.series("eval_loss").values))


def table_rows(text: str) -> list[list[str]]:
    """The body rows of a rich table as cells."""
    return [
        [c.strip() for c in line.strip().strip("│").split("│")] for line in text.splitlines() if "│" in line
    ]


# -- the README's "Answers, not only records" -----------------------------------------------------------
def test_ls_shows_each_run_with_its_true_state(store, runs):
    out = ok(store, "tunetrack ls")
    rows = {cells[1]: cells for cells in table_rows(out)}
    assert set(rows) == set(runs) and len(runs) == 12
    assert rows["crash-cuda"][3] == "failed: CUDA error on rank 0"
    assert rows["sigkill-loop"][3] == "crashed"
    assert all(rows[r.name][3] == "finished" for r in sweep(runs))


def test_show_fits_two_screens_and_lists_the_samples(store, runs):
    out = ok(store, "tunetrack show grpo-digit")
    lines = out.splitlines()
    assert len(lines) <= 120, len(lines)  # a Trainer run's 230-odd config keys are behind --full
    samples = next(line for line in lines if line.startswith("samples"))
    index = runs["grpo-digit"].sample_index()["completions"]
    assert f"completions: {sum(index.values())} rows at {len(index)} steps" in samples
    assert "tunetrack samples grpo-digit completions --last" in samples
    assert re.search(r"args\.learning_rate\s+│ 0\.001", out) and "more keys with --full" in out
    full = ok(store, "tunetrack show grpo-digit --full")
    assert "args.output_dir" in full and len(full.splitlines()) > len(lines) + 150
    nolog = ok(store, "tunetrack show grpo-nolog")
    assert "log_completions=True" in next(line for line in nolog.splitlines() if line.startswith("samples"))


def test_show_of_a_failed_run_prints_what_came_before_the_traceback(store):
    out = ok(store, "tunetrack show crash-cuda")
    tail = out[out.index("console lines before the traceback") :]
    assert "step 3: all good so far" in tail and "about to do something risky on the GPU..." in tail
    assert "Traceback" not in tail.split("\n\n")[0]
    assert out.count("Compile with `TORCH_USE_CUDA_DSA`") == 1  # the traceback once, not twice


def test_diff_names_what_differs(store, runs):
    out = ok(store, "tunetrack diff sft-lr0.03-r4-s0 sft-lr0.03-r4-s1")
    keys = {cells[0] for cells in table_rows(out)}
    assert {"args.seed", "args.output_dir", "args.run_name"} <= keys
    assert "args.learning_rate" not in keys and "peft_config.default.r" not in keys


def test_export_csv(store, runs, tmp_path):
    out = ok(store, "tunetrack export sft-lr0.03-r4-s0 --format csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    run = runs["sft-lr0.03-r4-s0"]
    assert len(rows) == len(list(run.rows())) and {"step", "loss", "eval_loss"} <= set(rows[0])
    evals = [float(r["eval_loss"]) for r in rows if r["eval_loss"]]
    assert evals == run.series("eval_loss").values.tolist()
    done = tt(store, "tunetrack export 5r0 --format csv -o run.csv".replace("5r0", run.id[:4]), tmp_path)
    assert done.returncode == 0 and done.stderr == f"wrote {len(rows)} rows to run.csv\n"


def test_logs_tail(store):
    out = ok(store, "tunetrack logs crash-cuda --tail 50")
    assert "about to do something risky on the GPU..." in out
    assert "RuntimeError: CUDA error: an illegal memory access was encountered" in out
    # the killed loop's last lines are its progress up to the kill (it was killed after step 200)
    last = ok(store, "tunetrack logs sigkill-loop --tail 3").splitlines()
    steps = [int(re.search(r"step (\d+) loss", line).group(1)) for line in last]
    assert len(last) == 3 and steps == list(range(steps[0], steps[0] + 30, 10)) and steps[-1] >= 200


def test_samples_last_sorted_by_reward(store, runs):
    """The README's line: TRL's table gets the total reward beside its reward functions' columns."""
    out = ok(store, "tunetrack samples grpo-digit completions --last --sort reward:desc --json")
    rows = json.loads(out)
    last = max(runs["grpo-digit"].sample_index()["completions"])
    assert rows and {r["step"] for r in rows} == {last}
    rewards = [r["row"]["reward"] for r in rows]
    assert rewards == sorted(rewards, reverse=True)
    for r in rows:  # weighed as the trainer weighs them: reward_weights=[1.0, 0.5]
        assert r["row"]["reward"] == pytest.approx(r["row"]["has_digit"] + 0.5 * r["row"]["short"])
    text = ok(store, "tunetrack samples grpo-digit completions --last --sort reward:desc")
    head = next(line for line in text.splitlines() if "reward" in line)
    assert re.search(r"has_digit\s+┃\s+short\s+┃\s+reward\s+┃\s+advantage", head)
    by_sum = json.loads(ok(store, "tunetrack samples grpo-digit --last --sort has_digit+short:desc --json"))
    sums = [r["row"]["has_digit"] + r["row"]["short"] for r in by_sum]
    assert sums == sorted(sums, reverse=True)


def test_the_terminal_view_s_samples_tab_on_the_grpo_run(store, runs):
    """``tunetrack tui``'s samples tab on TRL's real table: its last step's rows with the reward
    functions' columns, sorted by reward, and one prompt's rows at every step it was logged at."""
    import asyncio

    from textual.widgets import DataTable

    from support.tui import tab_key, until
    from tunetrack.tui.app import TunetrackApp
    from tunetrack.tui.panes.samples import Samples

    grpo = runs["grpo-digit"]
    index = grpo.sample_index()["completions"]

    async def drive() -> None:
        app = TunetrackApp(dir=store, project="grpo", where="name = 'grpo-digit'", interval=0.5)
        async with app.run_test(size=(120, 36)) as pilot:
            await until(pilot, lambda: app.model.current == grpo.id)
            await pilot.press(tab_key("samples"))
            pane = app.query_one(Samples)
            await until(pilot, lambda: len(pane.shown.samples) == index[max(index)])
            assert list(pane.shown.columns)[:2] == ["prompt", "completion"]
            assert {"has_digit", "short", "reward", "advantage"} <= set(pane.shown.columns)
            table = app.query_one("#samples-table", DataTable)
            table.focus()
            while pane.sort != "reward":
                await pilot.press("o")
            await pilot.press("O")
            rewards = [s["row"]["reward"] for s in pane.shown.samples]
            assert pane.descending and rewards == sorted(rewards, reverse=True)
            await pilot.press("p")
            await until(pilot, lambda: pane.pinned is not None)
            pinned = [s for s in grpo.samples("completions") if s["row"]["prompt"] == pane.pinned]
            assert sorted(s["step"] for s in pane.shown.samples) == sorted(s["step"] for s in pinned)
            assert len({s["step"] for s in pinned}) > 1  # the prompts take turns: not at every step

    asyncio.run(drive())


def test_the_terminal_view_on_the_real_runs(store, runs):
    """``tunetrack tui`` on what the Trainer callback recorded: the sweep filtered by its LoRA rank
    and sorted by its evaluation loss, two of its runs charted with the Trainer's own key, and the
    run that failed worded in full with its console's last lines (PyTorch's CUDA error)."""
    import asyncio

    from support.tui import cells, until
    from tunetrack.tui.app import TunetrackApp

    def names(app) -> list[str]:
        return [row[2] for row in cells(app)]

    r16 = sorted((r for r in sweep(runs) if r.config["peft_config"]["default"]["r"] == 16), key=eval_min)

    async def drive() -> None:
        app = TunetrackApp(
            dir=store, where="config.lora.r = 16", columns=["eval/loss:min"], sort="eval/loss:min"
        )
        async with app.run_test(size=(160, 40)) as pilot:
            await until(pilot, lambda: names(app) == [r.name for r in r16])
            column = [row[-1] for row in cells(app)]
            assert column == [f"{eval_min(r):.4g}" for r in r16]
            await pilot.press("x", "space", "down", "space")
            chart = app.query_one("#chart")
            await until(pilot, lambda: {line.label for line in chart._lines} == {r16[0].name, r16[1].name})
            assert chart.key == "loss" and all(
                len(line.steps) == len(runs[line.label].series("loss")) for line in chart._lines
            )
            # the failed run: its state in full under the runs, its console's last lines
            await pilot.press("slash", "ctrl+a", "ctrl+k", *"name = 'crash-cuda'", "enter")
            await until(pilot, lambda: names(app) == ["crash-cuda"])
            detail = str(app.query_one("#detail").render())
            assert "failed: CUDA error on rank 0" in detail
            await pilot.press("2")
            log = app.query_one("#console-log")
            await until(pilot, lambda: any("CUDA error" in str(line.text) for line in log.lines))

    asyncio.run(drive())


def test_where_and_sort_on_trainer_names(store, runs):
    """``config.lora.r`` finds PEFT's ``peft_config.default.r`` and ``eval/loss`` the Trainer's
    ``eval_loss``."""
    line = "tunetrack ls --where 'config.lora.r >= 16 and eval/loss:min < 0.7' --sort eval/loss:best --json"
    got = [r["name"] for r in json.loads(ok(store, line.replace(*THRESHOLD)))]
    want = sorted(
        (r for r in sweep(runs) if r.config["peft_config"]["default"]["r"] >= 16 and eval_min(r) < 5.4),
        key=eval_min,
    )
    assert got == [r.name for r in want] and 0 < len(got) < 8


def test_compare_folds_the_seeds_best_first(store, runs):
    out = ok(
        store, "tunetrack compare --project sft-sweep --group-by lr,lora.r --metric eval/loss:best --json"
    )
    answer = json.loads(out)
    assert answer["keys"] == ["lr", "lora.r"]
    groups = answer["groups"]
    assert len(groups) == 4 and all(g["n"] == 2 for g in groups)
    for g in groups:
        members = [runs[open_run(i, dir=store).name] for i in g["runs"]]
        assert {
            (m.config["args"]["learning_rate"], m.config["peft_config"]["default"]["r"]) for m in members
        } == {(g["key"]["lr"], g["key"]["lora.r"])}
        assert g["mean"] == pytest.approx(sum(map(eval_min, members)) / 2)
    assert [g["mean"] for g in groups] == sorted(g["mean"] for g in groups)
    table = ok(store, "tunetrack compare --project sft-sweep --group-by lr,lora.r --metric eval/loss:best")
    assert [cells[:3] for cells in table_rows(table)] == [
        [str(g["key"]["lr"]), str(g["key"]["lora.r"]), "2"] for g in groups
    ]


def test_all_but_seed_folds_trainer_runs(store):
    out = ok(
        store, "tunetrack compare --project sft-sweep --group-by all-but-seed --metric eval_loss:min --json"
    )
    answer = json.loads(out)
    assert len(answer["groups"]) == 4 and all(g["n"] == 2 for g in answer["groups"])
    # only the keys that differ between the groups: learning rate and rank (and what follows from them)
    assert {"args.learning_rate", "peft_config.default.r"} <= set(answer["keys"]) and len(answer["keys"]) <= 6
    assert not any(k.endswith(("output_dir", "run_name", "seed", "logging_dir")) for k in answer["keys"])


def test_query_over_the_runs(store, runs):
    out = ok(
        store,
        "tunetrack query \"SELECT run, min(value) FROM metrics WHERE key = 'eval_loss' GROUP BY run\" --format json",
    )
    got = {row["run"]: value for row in json.loads(out) for value in list(row.values())[1:]}
    assert got == pytest.approx({r.id: eval_min(r) for r in sweep(runs)})


# -- docs/sweeps.md ------------------------------------------------------------------------------
def test_sweeps_examples(store, runs):
    line = "tunetrack ls --project sweep --where 'config.lora.r >= 16 and eval/loss:min < 0.7' --sort eval/loss:min --limit 5"
    out = ok(store, line.replace("--project sweep", "--project sft-sweep").replace(*THRESHOLD) + " --json")
    want = sorted(
        (r for r in sweep(runs) if r.config["peft_config"]["default"]["r"] >= 16 and eval_min(r) < 5.4),
        key=eval_min,
    )
    assert [r["name"] for r in json.loads(out)] == [r.name for r in want][:5]
    failed = json.loads(ok(store, 'tunetrack ls --where \'tag = "best" or state = "failed"\' --json'))
    assert [(r["name"], r["failure"]) for r in failed] == [("crash-cuda", "CUDA error on rank 0")]
    line = 'tunetrack ls --where \'name ~ "^lr1e-4" and not config.optim in ["sgd", "adafactor"]\' --sort reward:best:desc --json'
    picked = json.loads(ok(store, line.replace("^lr1e-4", "^sft-lr0.03")))
    assert sorted(r["name"] for r in picked) == sorted(r.name for r in sweep(runs) if "lr0.03" in r.name)
    bad = tt(store, "tunetrack ls --where 'config.lr >> 1'")
    assert bad.returncode == 2 and bad.stderr.strip().startswith(
        "Error: --where: unexpected '>>' at column 11"
    )


# -- names that no run has: one line, rc 1, the closest names -----------------------------------------
@pytest.mark.parametrize(
    "command, message",
    [
        (
            "tunetrack compare --project sft-sweep --group-by lr,lora.r --metric eval_lossx:min",
            "no run has metric 'eval_lossx:min'; did you mean eval_loss:min",
        ),
        (
            "tunetrack compare --project sft-sweep --group-by lora.rank --metric eval_loss:min",
            "no run has config key 'config.lora.rank'; did you mean config.lora.r",
        ),
        (
            "tunetrack ls --sort eval_lossx:min",
            "no run has metric 'eval_lossx:min'; did you mean eval_loss:min",
        ),
        (
            "tunetrack ls --where 'eval_lossx:min < 5'",
            "no run has metric 'eval_lossx:min'; did you mean eval_loss:min",
        ),
        ("tunetrack ls --where 'state = failed'", "no run has metric 'failed'; did you mean \"failed\""),
        ("tunetrack ls --where 'config.learning_rat > 0'", "did you mean config.learning_rate"),
        (
            "tunetrack samples grpo-digit completions --sort rewrd:desc",
            "no table of samples has column 'rewrd'; did you mean reward",
        ),
        (
            "tunetrack samples grpo-digit completions --sort has_digit:up",
            "'up' is no order: give COLUMN:asc or COLUMN:desc",
        ),
        ("tunetrack samples grpo-nolog", "GRPOConfig(log_completions=True)"),
        ("tunetrack show crash-cdua", "no run 'crash-cdua' in"),
        (
            "tunetrack compare --project sft-swep --group-by lr --metric eval_loss",
            "no runs in project 'sft-swep'",
        ),
        ("tunetrack logs crash-cuda --rank 3", "has no rank 3 (ranks: 0)"),
        # the Trainer's metric is learning_rate and its config args.learning_rate: a bare lr could be either
        (
            "tunetrack ls --project sft-sweep --where 'lr < 1e-4'",
            "'lr' is no metric's own name: write config.lr",
        ),
    ],
)
def test_a_name_no_run_has_is_an_error(store, command, message):
    done = tt(store, command)
    assert done.returncode == 1 and done.stdout == "", done.stdout
    assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr, done.stderr


def test_names_a_wandb_user_types_find_the_trainer_names(store, runs):
    """What W&B's Trainer integration records (a flat ``learning_rate``, ``train/loss``,
    ``eval/loss``) finds what the callback records."""
    by_flat = json.loads(
        ok(store, "tunetrack compare --project sft-sweep --group-by learning_rate --metric train/loss --json")
    )
    assert len(by_flat["groups"]) == 2 and all(g["n"] == 4 for g in by_flat["groups"])
    for g in by_flat["groups"]:
        members = [open_run(i, dir=store) for i in g["runs"]]
        assert {m.config["args"]["learning_rate"] for m in members} == {g["key"]["learning_rate"]}
        assert g["mean"] == pytest.approx(sum(float(m.series("loss").values[-1]) for m in members) / 4)
    run = runs["sft-lr0.03-r4-s0"]
    assert run.series("eval/loss").values.tolist() == run.series("eval_loss").values.tolist()
    # --best names the key as typed, and holds for the spelling the runs recorded
    line = "tunetrack ls --project sft-sweep --sort eval/loss:best --best eval/loss:max --json"
    got = [r["name"] for r in json.loads(ok(store, line))]
    assert got == [
        r.name for r in sorted(sweep(runs), key=lambda r: float(max(r.series("eval_loss").values)))
    ]


# -- why a run died -------------------------------------------------------------------------------
def test_the_trainer_s_checkpoints_with_the_evaluation_before_each(store, runs):
    """The sweep saves every 4 steps keeping one (``save_total_limit=1``): checkpoint-4 is recorded,
    then marked deleted when the Trainer removed it; each carries the eval loss of its step and its
    files' sizes and hashes, read back after the output folders are gone."""
    for run in sweep(runs):
        found = run.checkpoints()
        assert [(c.step, c.kind, c.deleted) for c in found] == [(4, "adapter", True), (8, "adapter", False)]
        losses = run.series("eval_loss")
        at = dict(zip(losses.steps.tolist(), losses.values.tolist()))
        assert [c.metrics["eval_loss"] for c in found] == [at[4], at[8]]
        files = {f["name"]: f for f in found[1].files or []}
        weights = files["adapter_model.safetensors"]
        assert weights["size"] > 0 and re.fullmatch(r"[0-9a-f]{64}", weights["sha256"])
        assert found[1].bytes == sum(f["size"] for f in files.values())


def test_the_sweep_s_data_set_leads_to_every_run_and_checkpoint_made_from_it(store, runs):
    """The callback recorded each run's inputs with no code of the user's: the sweep's eight runs
    trained on one data set (one fingerprint, whatever the seed), so its lineage reaches all eight
    and their sixteen checkpoints; GRPO's prompts are another data set."""
    datasets = json.loads(ok(store, "tunetrack artifacts --kind dataset --json"))
    ids = {r.id for r in sweep(runs)}
    (shared,) = [d for d in datasets if set(d["used_by"]) & ids]
    assert set(shared["used_by"]) == ids and shared["reference"].startswith("datasets://")
    assert shared["metadata"]["rows"] == 48
    graph = json.loads(ok(store, f"tunetrack lineage {shared['spec']} --json"))
    reached = {n["id"] for n in graph["nodes"]}
    assert {f"run:{i}" for i in ids} <= reached
    assert {n["label"] for n in graph["nodes"] if n["type"] == "checkpoint"} == {
        f"{r.name}@{step}" for r in sweep(runs) for step in (4, 8)
    }
    assert not any(n["label"].startswith("grpo") for n in graph["nodes"])


def test_the_cause_is_the_exception_line_in_every_answer(store, runs):
    cause = "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert runs["crash-cuda"].cause == cause and runs["crash-cuda"].failure == "CUDA error on rank 0"
    listed = {r["name"]: r for r in json.loads(ok(store, "tunetrack ls --json"))}
    assert (listed["crash-cuda"]["failure"], listed["crash-cuda"]["cause"]) == ("CUDA error on rank 0", cause)
    assert listed["sigkill-loop"]["state"] == "crashed" and listed["sft-lr0.03-r4-s0"]["failure"] is None
    shown = json.loads(ok(store, "tunetrack show crash-cuda --json"))
    assert (shown["failure"], shown["cause"]) == ("CUDA error on rank 0", cause)
    sql = "tunetrack query \"SELECT name, error FROM runs WHERE state = 'failed'\" --format csv"
    assert ok(store, sql).splitlines()[1:] == [f"crash-cuda,{cause}"]


def test_samples_in_a_terminal_never_send_escape_sequences(store, tmp_path):
    """A completion's bytes reach the terminal written out: tunetrack samples in a real pty."""
    import pty

    out = tmp_path / "tty.txt"
    command = f"{sys.executable} -m tunetrack samples grpo-digit completions"
    env = {**os.environ, "TUNETRACK_DIR": str(store)}
    pid, fd = pty.fork()
    if pid == 0:  # the child: the command on the pty
        os.execvpe("sh", ["sh", "-c", command], env)
    data = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    os.waitpid(pid, 0)
    out.write_bytes(data)
    text = data.decode("utf-8", "replace")
    rows = [s for s in open_run("grpo-digit", dir=store).samples("completions")]
    assert any(re.search(r"[\x00-\x08\x0b-\x1f\x7f]", s["row"]["completion"]) for s in rows)
    # rich's own styling aside (CSI ... m), no control character from the model's output is sent
    bare = re.sub(r"\x1b\[[0-9;]*m", "", text)
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", bare)
    assert "\\x" in bare


# -- SQL and MCP on the same runs ------------------------------------------------------------------
def code_blocks(page: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", (ROOT / page).read_text(), flags=re.S)


def test_every_sql_example_of_the_query_page(store, runs):
    """docs/query.md's examples, each statement run on these runs (its placeholder run ids replaced by
    two sweep runs', its stride by one these short runs reach, its mixture-of-experts keys by the
    Trainer's losses): each answers with rows, but the GPU one on a machine without a GPU."""
    from tunetrack import query

    a, b = runs["sft-lr0.03-r4-s0"].id, runs["sft-lr0.003-r4-s0"].id
    (block,) = [b for b in code_blocks("docs/query.md", "sql") if b.startswith("-- the lowest loss")]
    statements = [x.strip() for x in block.split(";") if x.strip()]
    assert len(statements) == 9
    answers = {}
    for statement in statements:
        comment = statement.splitlines()[0]
        text = statement.replace("a1b2c3d4", a).replace("e5f6g7h8", b).replace("step % 100", "step % 2")
        text = text.replace("moe/layer*/expert*/load", "*loss")
        answers[comment] = query(text, dir=store)
    for comment, frame in answers.items():
        assert len(frame) > 0 or "GPU" in comment, comment
    why = answers["-- runs that did not finish, and why"]
    assert why.set_index("name").loc["crash-cuda", "failure"] == "CUDA error on rank 0"
    best = answers[next(c for c in answers if "highest total reward" in c)]
    assert best["reward"].tolist() == sorted(best["reward"], reverse=True) and best["reward"].iloc[0] == 1.5
    # DuckDB alone, on the runs' Parquet copies in the folder (the page's "without tunetrack")
    (duck,) = [b for b in code_blocks("docs/query.md", "python") if b.startswith("import duckdb")]
    done = subprocess.run(
        [sys.executable, "-c", duck], cwd=store.parent, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert all(name.split("-")[0] in done.stdout for name in (r.id for r in sweep(runs)))


def test_mcp_on_the_real_runs(store, runs):
    """docs/agents.md's client, run as written (the SDK's stdio client starting ``tunetrack mcp``),
    then the questions of the user trial: why a run died and what it printed, which completion scored
    best, the sweep's best run by eval loss."""
    snippet = code_blocks("docs/agents.md", "python")[0]  # the second: over HTTP, tests/ui/test_team_mcp.py
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        [sys.executable, "-c", snippet],
        cwd=store.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    failed, answer = done.stdout.split(" ", 1)
    rows = json.loads(answer)["rows"]
    assert failed == "False" and [r["reward"] for r in rows] == sorted(
        (r["reward"] for r in rows), reverse=True
    )

    from tunetrack.agents.mcp_server import Tools

    tools = Tools(store)
    crash = json.loads(tools.get_run("crash-cuda"))
    assert (crash["failure"], crash["error"]) == (
        "CUDA error on rank 0",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    )
    assert crash["last_lines"][-1].endswith("about to do something risky on the GPU...")
    killed = json.loads(tools.get_logs("sigkill-loop", tail=1))
    assert killed["state"] == "crashed" and killed["lines"][-1]["text"].startswith("step ")
    best = json.loads(tools.get_samples("grpo-digit", sort="reward:desc", limit=1))["rows"][0]
    assert best["reward"] == max(
        s["row"]["reward"] for s in runs["grpo-digit"].samples("completions", step=best["step"])
    )
    nolog = tools.get_run("grpo-nolog")
    assert "log_completions=True" in json.loads(nolog)["samples"]
    top = json.loads(tools.list_runs(project="sft-sweep", sort="eval/loss:min", limit=1))["runs"][0]
    assert top["name"] == min(sweep(runs), key=eval_min).name
    # the best checkpoint of the sweep, and what it was made from, as an agent asks
    found = json.loads(tools.get_checkpoints(project="sft-sweep", best="eval_loss"))
    assert len(found["checkpoints"]) == 16 and sum(c["deleted"] for c in found["checkpoints"]) == 8
    expected = min((c for r in sweep(runs) for c in r.checkpoints()), key=lambda c: c.metrics["eval_loss"])
    assert found["best"] == f"{expected.run}@{expected.step}"
    (data,) = [a for a in json.loads(tools.list_artifacts(kind="dataset")) if len(a["used_by"]) == 8]
    graph = json.loads(tools.get_lineage(found["best"]))
    assert f"artifact:{data['spec']}" in {n["id"] for n in graph["nodes"]}


# -- the skill for coding agents (tunetrack skills add) ---------------------------------------------
#: the marker before the skill's block of ``tunetrack run`` and ``tunetrack stop``
STEERING = "<!-- steering -->"


def skill_commands() -> tuple[list[tuple[str, str]], list[str]]:
    """The command lines of the packaged SKILL.md's bash blocks, each with the section it is in; and
    apart, the lines of the block after ``STEERING``."""
    from tunetrack.cli.skills import skill_text

    found: list[tuple[str, str]] = []
    steering: list[str] = []
    section, inside, marked = "", False, False
    for line in skill_text().splitlines():
        if line.startswith("## "):
            section = line[3:]
        elif line == STEERING:
            marked = True
        elif line.startswith("```"):
            inside = line == "```bash"
            marked = marked and inside
        elif inside and line.strip():
            if marked:
                steering.append(line)
            else:
                found.append((section, line))
    return found, steering


@pytest.mark.parametrize("section, command", skill_commands()[0], ids=lambda x: x)
def test_every_command_of_the_skill(store, runs, section, command):
    """Each command the skill teaches an agent, run as the agent runs it, on these runs: it answers
    (exit status 0, some output), and what ``--json`` prints is JSON. ``RUN`` is the GRPO run (the
    one with samples and checkpoints), and in the section on failed runs, the run that died;
    ``RUN_A`` and ``RUN_B`` are two seeds of the sweep and ``PROJECT`` the sweep's project.

    The block of ``tunetrack run`` and ``tunetrack stop`` (after ``<!-- steering -->``) starts and
    stops live runs: the steering tests check those commands, and this one only that the block is
    there and holds them."""
    here = {
        "RUN": "crash-cuda" if section.startswith("Diagnose") else "grpo-digit",
        "RUN_A": "sft-lr0.03-r4-s0",
        "RUN_B": "sft-lr0.03-r4-s1",
        "PROJECT": "sft-sweep",
    }
    line = re.sub(r"\b(RUN_A|RUN_B|RUN|PROJECT)\b", lambda m: here[m.group(1)], command)
    out = ok(store, line)
    assert out.strip(), line
    if "--json" in line or "--format json" in line:
        answer = (
            [json.loads(x) for x in out.splitlines()]
            if line.startswith("tunetrack logs")
            else json.loads(out)
        )
        assert answer, line
    if section.startswith("Diagnose") and line.startswith("tunetrack show"):
        assert "CUDA error on rank 0" in out


def test_the_skill_s_steering_block():
    found, steering = skill_commands()
    assert len(found) >= 25
    assert [line.split()[:2] for line in steering] == [["tunetrack", "run"], ["tunetrack", "stop"]]


# -- the other examples of the pages ----------------------------------------------------------------
def _json(text: str):
    return json.loads(text)


def _rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


#: docs command -> (placeholders filled: [(as written, here)], check(store, runs, done, cwd))
DOC_EXAMPLES: dict[str, tuple[list[tuple[str, str]], object]] = {
    "tunetrack artifacts --kind dataset": (
        [],
        lambda store, runs, done, cwd: (
            done.returncode == 0
            and any(cells[1] == "dataset" and cells[6] == "8" for cells in table_rows(done.stdout))
        ),
    ),
    "tunetrack lineage sft-lr0.03-r4-s0@8": (
        [],
        lambda store, runs, done, cwd: (
            done.returncode == 0
            and done.stdout.startswith(
                "checkpoint sft-lr0.03-r4-s0@8\nmade from\n└── saved by run sft-lr0.03-r4-s0"
            )
            and all("input: artifact" in line for line in done.stdout.splitlines()[3:6])
            and "(dataset)" in done.stdout
            and "(model)" in done.stdout
            and "(tokenizer)" in done.stdout
            and done.stdout.rstrip().endswith("made into: nothing recorded")
        ),
    ),
    "tunetrack show nope": (
        [],
        lambda store, runs, done, cwd: (
            done.returncode == 1 and done.stderr.startswith("Error: no run 'nope' in")
        ),
    ),
    "tunetrack export 5r0 --format xml": (
        [],
        lambda store, runs, done, cwd: done.returncode == 2 and "Invalid value for '--format'" in done.stderr,
    ),
    "tunetrack ls --json --limit 1": (
        [],
        lambda store, runs, done, cwd: (
            [r["name"] for r in _json(done.stdout)] == ["sigkill-loop"]
            and {"summary", "failure", "cause", "state"} <= set(_json(done.stdout)[0])
        ),
    ),
    "tunetrack ls --state finished --json | python -c \"import json, sys; print([r['id'] for r in json.load(sys.stdin)])\"": (
        [("python -c", f"{sys.executable} -c")],
        lambda store, runs, done, cwd: (
            sorted(eval(done.stdout)) == sorted(r.id for r in runs.values() if r.state == "finished")
        ),
    ),
    "tunetrack show 5r0": (
        [("5r0", "sft-lr0.03-r4-s0")],
        lambda store, runs, done, cwd: (
            f"sft-lr0.03-r4-s0 ({runs['sft-lr0.03-r4-s0'].id})" in done.stdout and "eval_loss" in done.stdout
        ),
    ),
    "tunetrack show 5r0 --json | python -c \"import json, sys; print(json.load(sys.stdin)['summary']['loss'])\"": (
        [("5r0", "sft-lr0.03-r4-s0"), ("python -c", f"{sys.executable} -c")],
        lambda store, runs, done, cwd: (
            eval(done.stdout)["last"] == float(runs["sft-lr0.03-r4-s0"].series("loss").values[-1])
        ),
    ),
    'tunetrack logs 5r0 --rank 3 --grep "Error|error" --since 13:00': (
        [("5r0", "crash-cuda"), ("--rank 3", "--rank 0"), ("13:00", "1d")],
        lambda store, runs, done, cwd: (
            "RuntimeError: CUDA error: an illegal memory access" in done.stdout
            and "all good so far" not in done.stdout
        ),
    ),
    "tunetrack diff lora-r16 lora-r8": (
        [("lora-r16", "sft-lr0.03-r16-s0"), ("lora-r8", "sft-lr0.03-r4-s0")],
        lambda store, runs, done, cwd: (
            {"peft_config.default.r", "peft_config.default.lora_alpha"}
            <= {cells[0] for cells in table_rows(done.stdout)}
        ),
    ),
    "tunetrack diff lora-r16 5r0glusq": (
        [("lora-r16", "sft-lr0.03-r16-s0"), ("5r0glusq", "sft-lr0.03-r16-s0")],
        lambda store, runs, done, cwd: "have the same config" in done.stdout,
    ),
    "tunetrack export 5r0 | head -2": (
        [("5r0", "sft-lr0.03-r4-s0")],
        lambda store, runs, done, cwd: (
            [json.loads(line)["step"] for line in done.stdout.splitlines()] == [1, 2]
        ),
    ),
    "tunetrack export 5r0 --format csv -o run.csv": (
        [("5r0", "sft-lr0.03-r4-s0")],
        lambda store, runs, done, cwd: (
            len(_rows((cwd / "run.csv").read_text())) == len(list(runs["sft-lr0.03-r4-s0"].rows()))
        ),
    ),
    "tunetrack export 5r0 --format parquet": (
        [("5r0", "sft-lr0.03-r4-s0")],
        lambda store, runs, done, cwd: (
            (cwd / f"{runs['sft-lr0.03-r4-s0'].id}.parquet").exists() and done.stderr.startswith("wrote ")
        ),
    ),
    "tunetrack export 5r0 --system > system.jsonl": (
        [("5r0", "grpo-digit")],
        lambda store, runs, done, cwd: (
            len((cwd / "system.jsonl").read_text().splitlines())
            == len(list(runs["grpo-digit"].system_rows()))
            > 0
        ),
    ),
    "tunetrack query \"SELECT run, min(value) AS lowest FROM metrics WHERE key = 'loss' GROUP BY run\"": (
        [],
        lambda store, runs, done, cwd: (
            len(table_rows(done.stdout)) == sum("loss" in r.keys() for r in runs.values()) > 8
        ),
    ),
    "tunetrack query \"SELECT * FROM summary WHERE key = 'eval_loss'\" --format json": (
        [],
        lambda store, runs, done, cwd: (
            sorted(row["min"] for row in _json(done.stdout))
            == pytest.approx(sorted(eval_min(r) for r in sweep(runs)))
        ),
    ),
    'tunetrack query "SELECT * FROM params_wide" --format parquet -o params.parquet': (
        [],
        lambda store, runs, done, cwd: (
            __import__("pandas").read_parquet(cwd / "params.parquet")["run"].nunique() == len(runs)
        ),
    ),
    "tunetrack logs 5r0 --tail 3": (
        [("5r0", "sigkill-loop")],
        lambda store, runs, done, cwd: len(done.stdout.splitlines()) == 3 and "loss" in done.stdout,
    ),
    "tunetrack query \"SELECT r.name, min(m.value) AS lowest FROM metrics m JOIN runs r ON r.id = m.run WHERE m.key = 'loss' GROUP BY r.name ORDER BY lowest\"": (
        [],
        lambda store, runs, done, cwd: (
            [c[0] for c in table_rows(done.stdout)]
            == [
                r.name
                for r in sorted(
                    (r for r in runs.values() if "loss" in r.keys()),
                    key=lambda r: float(min(r.series("loss").values)),
                )
            ]
        ),
    ),
    "tunetrack query \"SELECT run, best, best_step FROM summary WHERE key = 'eval_loss' ORDER BY best LIMIT 5\"": (
        [],
        lambda store, runs, done, cwd: len(table_rows(done.stdout)) == 5,
    ),
    'tunetrack query "DESCRIBE metrics"': (
        [],
        lambda store, runs, done, cwd: (
            [c[0] for c in table_rows(done.stdout)][:7]
            == ["run", "process", "step", "time", "key", "value", "text"]
        ),
    ),
    'tunetrack query "SELECT * FROM params_wide" --format csv -o params.csv': (
        [],
        lambda store, runs, done, cwd: len(_rows((cwd / "params.csv").read_text())) == len(runs),
    ),
    "tunetrack compare --project sft-sweep --group-by lr,lora.r --metric eval/loss:min": (
        [("compare", "compare --json")],
        lambda store, runs, done, cwd: [g["n"] for g in _json(done.stdout)["groups"]] == [2, 2, 2, 2],
    ),
    "tunetrack ls --where 'config.learning_rate = 3e-2' --sort train/loss": (
        [("ls", "ls --json")],
        lambda store, runs, done, cwd: (
            [r["name"] for r in _json(done.stdout)]
            == [
                r.name
                for r in sorted(
                    (r for r in sweep(runs) if r.config["args"]["learning_rate"] == 3e-2),
                    key=lambda r: float(r.series("loss").values[-1]),
                )
            ]
        ),
    ),
    "tunetrack checkpoints --project sft-sweep --best eval_loss": (
        [],
        lambda store, runs, done, cwd: (
            done.returncode == 0
            and done.stdout.strip().splitlines()[-1]
            == "best by eval_loss: {0} step {1.step} ({1.path})".format(
                *min(
                    ((r.name, c) for r in sweep(runs) for c in r.checkpoints()),
                    key=lambda pair: pair[1].metrics["eval_loss"],
                )
            )
        ),
    ),
    "tunetrack compare --project sft-sweep --group-by lora.rank --metric eval_loss:min": (
        [],
        lambda store, runs, done, cwd: (
            done.returncode == 1
            and done.stderr.strip()
            == "Error: no run has config key 'config.lora.rank'; did you mean config.lora.r or config.lora.alpha "
            "or config.args.local_rank?"
        ),
    ),
}


@pytest.mark.parametrize("command", list(DOC_EXAMPLES))
def test_doc_example(store, runs, tmp_path, command):
    filled, check = DOC_EXAMPLES[command]
    for written, here in filled:
        command = command.replace(written, here)
    done = tt(store, command, tmp_path)
    assert check(store, runs, done, tmp_path), f"{command}\n{done.returncode}\n{done.stdout}\n{done.stderr}"


# -- every example is checked ---------------------------------------------------------------------------
#: examples checked elsewhere, and where (a command, or the start of one)
ELSEWHERE = {
    "tunetrack show 5": "an id prefix two runs share: tests/test_cli.py::test_ambiguous_prefix_and_name",
    "tunetrack mcp": "test_mcp_on_the_real_runs (this module)",
    "tunetrack ui": "tests/ui",
    "tunetrack token": "tests/ui/test_team.py (create, revoke, list; sign-in with them in Chromium: "
    "tests/ui/test_team_browser.py)",
    "tunetrack audit": "tests/ui/test_team.py::test_changes_by_role_and_each_one_audited, "
    "tests/test_cli.py::test_rm_asks_and_deletes_only_what_it_was_told",
    "tunetrack ui --read-only": "tests/ui/test_stop_ui.py::test_read_only_offers_no_stop_and_who_asked_renders_as_text",
    "tunetrack sync": "tests/objectstore/test_sync.py",
    "tunetrack tag": "tests/test_manage.py",
    "tunetrack rename": "tests/test_manage.py",
    "tunetrack note": "tests/test_manage.py",
    "tunetrack rm": "tests/test_manage.py",
    "tunetrack report": "tests/test_report.py, tests/ui/test_report_browser.py",
    "tunetrack import": "tests/bridges/test_import.py",
    "tunetrack parquet": "tests/test_parquet.py",
    "tunetrack compact": "tests/test_compact.py, tests/test_purge.py, tests/test_iceberg.py, "
    "tests/objectstore/test_compact.py, tests/objectstore/test_iceberg.py",
    "tunetrack reindex": "tests/test_folder_index.py, tests/objectstore/test_index.py",
    "tunetrack checkpoints sft-llama --suite lm-eval": "tests/test_evaluations.py, tests/e2e/lmeval/test_lm_eval.py",
    "tunetrack watch": "tests/test_alerts.py",
    "tunetrack watch --rules": "tests/test_rules.py::test_tunetrack_watch_rules_command",
    "tunetrack artifacts sft-adapter:v2": "tests/test_artifacts.py::test_the_cli_lists_promotes_downloads_and_walks_lineage",
    "tunetrack artifacts sft-adapter:production": "tests/test_artifacts.py::test_the_cli_lists_promotes_downloads_and_walks_lineage",
    "tunetrack skills": "tests/test_skills.py",
    "tunetrack compare --project moe-sweep": "a pattern of keys folded across (no adapter logs per-expert loads): "
    "tests/test_groups.py::test_a_pattern_of_keys_folded_across",
    "tunetrack tui": "tests/test_tui.py (each docs line as the CLI parses it; Textual's pilot; tmux), "
    "tests/test_tui_panes.py, tests/test_tui_system.py, tests/objectstore/test_tui.py, and "
    "test_the_terminal_view_on_the_real_runs (this module)",
    "tunetrack run": "tests/test_run_command.py; with each framework: tests/e2e/*/ (test_run_command.py, "
    "test_torchtune.py, test_llamafactory.py, test_swift.py)",
    "tunetrack stop": "tests/test_stop.py, tests/test_run_command.py, tests/e2e/hf/test_run_command.py, "
    "tests/objectstore/test_steering.py",
}


def examples() -> list[tuple[str, str]]:
    """Every ``tunetrack ...`` command in a code block of ``PAGES`` (a command that goes on over the
    next lines, inside a quote, joined), but a synopsis (``[--json]``): (page, command)."""
    out: list[tuple[str, str]] = []
    for page in PAGES:
        inside, open_quote = False, False
        for line in (ROOT / page).read_text().splitlines():
            if line.startswith("```"):
                inside, open_quote = not inside, False
                continue
            if inside and open_quote:  # the rest of a quoted statement
                out[-1] = (page, f"{out[-1][1]} {line.strip()}")
                open_quote = out[-1][1].count('"') % 2 == 1
                continue
            m = re.match(r"\s*(?:\$ )?(tunetrack \S.*)", line)
            if inside and m:
                command = re.split(r"\s{2,}#", m.group(1))[0].strip()
                if not re.search(r"\[--|\[RUN|\[KEY|^tunetrack [\w-]+ {2,}|BACKEND", command):  # no synopsis
                    out.append((page, command))
                    open_quote = command.count('"') % 2 == 1
    return out


#: the examples the tests above run, as the docs write them
CHECKED = [
    "tunetrack ls",
    "tunetrack show <id>",
    "tunetrack diff <id> <id>",
    "tunetrack export <id> --format csv",
    "tunetrack logs <id> --tail 50",
    "tunetrack samples <id> completions --last --sort reward:desc",
    "tunetrack ls --where 'config.lora.r >= 16 and eval/loss:min < 0.7' --sort eval/loss:best",
    "tunetrack compare --project sweep --group-by lr,lora.r --metric eval/loss:best",
    "tunetrack query \"SELECT run, min(value) FROM metrics WHERE key = 'eval_loss' GROUP BY run\"",
    "tunetrack ls --project sweep --where 'config.lora.r >= 16 and eval/loss:min < 0.7' --sort eval/loss:min --limit 5",
    'tunetrack ls --where \'tag = "best" or state = "failed"\'',
    'tunetrack ls --where \'name ~ "^lr1e-4" and not config.optim in ["sgd", "adafactor"]\' --sort reward:best:desc',
    "tunetrack ls --where 'config.lr >> 1'",
    "tunetrack compare --project sweep --group-by lr,lora.r --metric eval/loss:min",
]


def test_every_example_is_checked():
    found = examples()
    unchecked = [
        (page, command)
        for page, command in found
        if command not in CHECKED
        and command not in DOC_EXAMPLES
        and not any(command == key or command.startswith(f"{key} ") for key in ELSEWHERE)
    ]
    assert unchecked == []
    gone = [c for c in [*CHECKED, *DOC_EXAMPLES] if c not in {command for _, command in found}]
    assert gone == []  # an example the docs no longer hold is checked no longer
