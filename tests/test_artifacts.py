"""Artifacts kept by ``Tracker.log_artifact``/``log_input`` and read by ``use_artifact``, ``tunetrack
artifacts`` and ``tunetrack lineage``: real files on disk, real hashes, runs that really ran; the
store's objects counted to show content is kept once."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from tunetrack import Tracker
from tunetrack.cli import cli
from tunetrack.errors import ArtifactNotFound
from tunetrack.reader import open_run
from tunetrack.store.artifacts import ArtifactStore, FileEntry


def _folder(path: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_bytes(data)
    return path


WEIGHTS = {"model.safetensors": b"w" * 200_000, "config.json": b'{"layers": 2}', "sub/tokenizer.json": b"{}"}


def _run(root: Path, name: str, body) -> str:
    with Tracker(dir=root, name=name, project="p", system=False) as t:
        t.log({"loss": 1.0}, step=1)
        body(t)
        return str(t.id)


def _events(root: Path, run: str, kind: str) -> list[dict]:
    return [e for e in open_run(run, dir=root).events() if e["kind"] == kind]


def test_two_runs_logging_the_same_weights_store_them_once(root, tmp_path):
    base = _folder(tmp_path / "base", WEIGHTS)
    versions = []
    for i in range(3):
        _run(
            root, f"r{i}", lambda t: versions.append(t.log_artifact(base, name="base", kind="model").result())
        )
    assert [v.spec for v in versions] == ["base:v1"] * 3  # the same content is the same version
    store = ArtifactStore(root)
    assert store.stored_bytes() == sum(len(b) for b in WEIGHTS.values())
    (v,) = store.versions("base")
    assert v.aliases == ["latest"] and v.kind == "model" and v.run is not None
    assert {f.name: f.sha256 for f in v.files} == {
        n: hashlib.sha256(b).hexdigest() for n, b in WEIGHTS.items()
    }
    # each run says which version it logged, at the step it was logged
    (event,) = _events(root, "r2", "artifact")
    assert (event["name"], event["version"], event["step"], event["type"]) == ("base", 1, 1, "model")


def test_new_content_is_a_new_version_and_aliases_move(root, tmp_path):
    data = _folder(tmp_path / "data", {"train.jsonl": b'{"x": 1}\n'})
    _run(root, "a", lambda t: t.log_artifact(data, name="data", kind="dataset", aliases=["best"]).result())
    (data / "train.jsonl").write_bytes(b'{"x": 2}\n')
    _run(root, "b", lambda t: t.log_artifact(data, name="data", kind="dataset").result())
    store = ArtifactStore(root)
    assert [(v.spec, v.aliases) for v in store.versions("data")] == [
        ("data:v1", ["best"]),
        ("data:v2", ["latest"]),
    ]
    store.set_alias("data", 2, "best")
    assert store.resolve("data:best").version == 2 and store.resolve("data:v1").aliases == []
    store.remove_alias("data", "best")
    with pytest.raises(
        ArtifactNotFound, match=r"no version or alias 'best'; it has data:v1, data:v2 \(latest\)"
    ):
        store.resolve("data:best")


def test_use_artifact_records_the_input_and_downloads_the_same_bytes(root, tmp_path):
    base = _folder(tmp_path / "base", WEIGHTS)
    _run(root, "maker", lambda t: t.log_artifact(base, name="base", aliases=["production"]).result())
    got = {}

    def use(t: Tracker) -> None:
        got["v"] = t.use_artifact("base:production")
        got["dir"] = got["v"].download(tmp_path / "dl")

    user = _run(root, "user", use)
    assert got["v"].spec == "base:v1"
    assert {
        p.relative_to(got["dir"]).as_posix(): p.read_bytes() for p in got["dir"].rglob("*") if p.is_file()
    } == WEIGHTS
    (event,) = _events(root, "user", "artifact_used")
    assert (event["name"], event["version"]) == ("base", 1)
    assert ArtifactStore(root).resolve("base").used_by == [user]


def test_references_are_recorded_without_copying(root, tmp_path):
    local = _folder(tmp_path / "shards", {"a.parquet": b"a" * 1000})

    def body(t: Tracker) -> None:
        t.log_artifact("s3://bucket/corpus/", name="corpus", kind="dataset").result()
        t.log_artifact(local, name="shards", reference=True).result()

    _run(root, "refs", body)
    store = ArtifactStore(root)
    corpus, shards = store.resolve("corpus"), store.resolve("shards")
    assert (corpus.reference, corpus.files, corpus.bytes) == ("s3://bucket/corpus/", [], 0)
    assert shards.reference == str(local) and [f.name for f in shards.files] == ["a.parquet"]
    assert store.stored_bytes() == 0  # nothing copied
    assert shards.download() == local  # a local reference is read where it is
    with pytest.raises(ValueError, match="a reference to s3://bucket/corpus/: read it from there"):
        corpus.download(tmp_path / "x")


def test_log_input_with_a_digest_names_one_version_for_the_same_content(root):
    def body(t: Tracker) -> None:
        t.log_input("datasets://alpaca@f00d", name="alpaca", kind="dataset", digest="f" * 64).result()

    a, b = _run(root, "a", body), _run(root, "b", body)
    (v,) = ArtifactStore(root).versions("alpaca")
    assert (v.run, v.used_by, v.reference) == (None, sorted([a, b]), "datasets://alpaca@f00d")
    assert [e["name"] for e in _events(root, a, "artifact_used")] == ["alpaca"]


def test_bad_arguments_fail_at_the_call_and_a_failed_store_never_stops_training(root, tmp_path, monkeypatch):
    folder = _folder(tmp_path / "f", {"x.bin": b"x"})
    with Tracker(dir=root, name="bad", system=False) as t:
        with pytest.raises(ValueError, match="cannot name an artifact"):
            t.log_artifact(folder, name="a:b")
        with pytest.raises(ValueError, match="cannot be an alias"):
            t.log_artifact(folder, aliases=["latest"])
        with pytest.raises(FileNotFoundError, match="no file or folder"):
            t.log_artifact(tmp_path / "missing")
        with pytest.raises(ArtifactNotFound, match="no artifact 'nothing'; artifacts: none"):
            t.use_artifact("nothing")

        def broken(self, sha256, source):
            raise OSError("disk full")

        monkeypatch.setattr(ArtifactStore, "_put_object", broken)
        with pytest.warns(UserWarning, match="artifact 'f' from .* was not stored: .*disk full"):
            future = t.log_artifact(folder)
            with pytest.raises(OSError, match="disk full"):
                future.result()
        t.log({"loss": 0.5}, step=2)  # training goes on
    assert open_run("bad", dir=root).state == "finished"
    with Tracker(store=False, system=False) as t, pytest.raises(ValueError, match="no store"):
        t.log_artifact(folder)


def test_finish_waits_for_an_artifact_still_being_stored(root, tmp_path):
    big = _folder(tmp_path / "big", {"w.bin": b"z" * 20_000_000})
    with Tracker(dir=root, name="quick", system=False) as t:
        future = t.log_artifact(big, name="big")
    assert future.done() and future.result().bytes == 20_000_000
    assert [e["name"] for e in _events(root, "quick", "artifact")] == ["big"]


def test_writers_at_once_never_take_the_same_version(root, tmp_path):
    store = ArtifactStore(root)
    sources = [_folder(tmp_path / f"s{i}", {"f": bytes([i]) * 10}) for i in range(8)]
    barrier = threading.Barrier(8)

    def log(i: int) -> None:
        entry = FileEntry("f", 10, hashlib.sha256(bytes([i]) * 10).hexdigest())
        barrier.wait()
        store.log("raced", [(entry, sources[i] / "f")])

    threads = [threading.Thread(target=log, args=(i,)) for i in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    versions = store.versions("raced")
    assert sorted(v.version for v in versions) == list(range(1, 9))
    assert len({v.digest for v in versions}) == 8


def test_the_cli_lists_promotes_downloads_and_walks_lineage(root, tmp_path):
    base = _folder(tmp_path / "base", WEIGHTS)
    ckpt = _folder(tmp_path / "out" / "checkpoint-2", {"adapter_model.safetensors": b"a" * 100})

    def train(t: Tracker) -> None:
        t.log_input(base, name="base", kind="model").result()
        t.log_checkpoint(ckpt, step=2)
        t.finish()  # the checkpoint's hashes are in before it is kept as an artifact below

    trained = _run(root, "sft", train)
    with Tracker(dir=root, name="sft", resume=trained, system=False) as t:
        t.log_artifact(ckpt, name="sft-adapter", aliases=["best"]).result()
    cli_run = lambda *a: CliRunner().invoke(cli, [*a, "--dir", str(root)])  # noqa: E731
    listed = cli_run("artifacts")
    assert listed.exit_code == 0, listed.output
    assert "base" in listed.output and "sft-adapter" in listed.output and "latest, best" in listed.output
    promoted = cli_run("artifacts", "sft-adapter:v1", "--alias", "production")
    assert promoted.output.strip() == "sft-adapter:v1 is now sft-adapter:production"
    shown = json.loads(cli_run("artifacts", "sft-adapter:production", "--json").output)
    assert [(v["spec"], v["aliases"]) for v in shown] == [
        ("sft-adapter:v1", ["latest", "best", "production"])
    ]
    got = cli_run("artifacts", "sft-adapter:best", "--download", str(tmp_path / "dl"))
    assert got.exit_code == 0 and (tmp_path / "dl" / "adapter_model.safetensors").read_bytes() == b"a" * 100
    lineage = cli_run("lineage", "base")
    assert lineage.exit_code == 0, lineage.output
    assert lineage.output.splitlines() == [
        "artifact base:v1",
        "made from: nothing recorded",
        "made into",
        "└── used by run sft (finished)",
        "    ├── logged artifact sft-adapter:v1 (adapter)",
        "    └── saved checkpoint sft@2 (adapter)",
        "        └── kept as artifact sft-adapter:v1 (adapter)",
    ]
    graph = json.loads(cli_run("lineage", "sft@2", "--json").output)
    assert {(e["source"], e["relation"], e["target"]) for e in graph["edges"]} == {
        ("artifact:base:v1", "used", f"run:{trained}"),
        (f"run:{trained}", "saved", f"checkpoint:{trained}@2"),
        (f"checkpoint:{trained}@2", "kept as", "artifact:sft-adapter:v1"),
    }
    for args, said in [
        (("artifacts", "nope"), "Error: no artifact 'nope'; artifacts: base, sft-adapter"),
        (("lineage", "sft@9"), "Error: run sft saved no checkpoint at step 9; it saved at [2]"),
        (("lineage", "nope"), "nor an artifact (artifacts: base, sft-adapter)"),
        (("artifacts", "--alias", "x"), "need NAME[:VERSION|ALIAS]"),
    ]:
        failed = cli_run(*args)
        assert failed.exit_code != 0 and said in failed.output and "Traceback" not in failed.output


def test_a_fork_is_in_the_lineage_of_the_checkpoint_it_branched_at(root, tmp_path):
    """``fork_from="RUN@STEP"`` at a step with a checkpoint: lineage goes from that checkpoint to the
    fork; the fork's own checkpoints are its own (the parent's stay the parent's)."""
    ckpt = _folder(tmp_path / "checkpoint-2", {"model.safetensors": b"m" * 10})
    mine = _folder(tmp_path / "checkpoint-4", {"model.safetensors": b"n" * 10})
    with Tracker(dir=root, name="parent", system=False) as t:
        for step in (1, 2, 3):
            t.log({"loss": 1.0 / step}, step=step)
        t.log_checkpoint(ckpt, step=2)
    with Tracker(dir=root, name="child", fork_from="parent@2", system=False) as t:
        t.log({"loss": 0.1}, step=4)
        t.log_checkpoint(mine, step=4)
    assert [c.step for c in open_run("child", dir=root).checkpoints()] == [4]
    assert [c.step for c in open_run("parent", dir=root).checkpoints()] == [2]
    out = CliRunner().invoke(cli, ["lineage", "parent@2", "--dir", str(root)]).output
    assert out.splitlines()[-2:] == [
        "└── forked into run child (finished)",
        "    └── saved checkpoint child@4 (model)",
    ]
    up = CliRunner().invoke(cli, ["lineage", "child", "--dir", str(root)]).output
    assert "└── forked from checkpoint parent@2 (model)" in up
