"""Artifacts in a bucket (moto's S3 server on 127.0.0.1): kept by content once for several runs,
streamed up in parts and back down, versions and aliases made by conditional writes, and read by the
CLI from the bucket alone."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from tunetrack import Tracker
from tunetrack.cli import cli
from tunetrack.store.artifacts import OBJECTS, ArtifactStore
from tunetrack.store.blobs import open_blobs


@pytest.fixture(autouse=True)
def local_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUNETRACK_SPOOL", str(tmp_path / "spool"))
    monkeypatch.setenv("TUNETRACK_CACHE", str(tmp_path / "cache"))


def test_runs_on_a_bucket_keep_one_copy_and_read_it_back(s3_url, tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    weights = os.urandom(12 << 20)  # above obstore's part size: a multipart upload
    (base / "model.safetensors").write_bytes(weights)
    (base / "config.json").write_text('{"layers": 2}')
    specs = []
    for name in ("a", "b"):
        with Tracker(dir=s3_url, name=name, system=False) as t:
            t.log({"loss": 1.0}, step=1)
            specs.append(t.log_artifact(base, name="base", kind="model", aliases=["best"]).result().spec)
    assert specs == ["base:v1", "base:v1"]
    objects = open_blobs(s3_url).list_blobs(OBJECTS + "/")
    assert sorted(b.size for b in objects) == sorted([len(weights), len(b'{"layers": 2}')])  # once
    with Tracker(dir=s3_url, name="user", system=False) as t:
        got = t.use_artifact("base:best").download(tmp_path / "dl")
    assert (
        hashlib.sha256((got / "model.safetensors").read_bytes()).digest() == hashlib.sha256(weights).digest()
    )
    store = ArtifactStore(s3_url)
    assert [(v.spec, v.aliases, len(v.used_by)) for v in store.versions("base")] == [
        ("base:v1", ["latest", "best"], 1)
    ]

    def cli_run(*args: str) -> str:
        done = CliRunner().invoke(cli, [*args, "--dir", s3_url])
        assert done.exit_code == 0, done.output
        return done.output

    (base / "config.json").write_text('{"layers": 3}')
    with Tracker(dir=s3_url, name="c", system=False) as t:
        t.log_artifact(base, name="base").result()
    assert (
        cli_run("artifacts", "base:v1", "--alias", "production").strip() == "base:v1 is now base:production"
    )
    listed = json.loads(cli_run("artifacts", "base", "--json"))
    assert [(v["spec"], v["aliases"]) for v in listed] == [
        ("base:v1", ["best", "production"]),
        ("base:v2", ["latest"]),
    ]
    graph = json.loads(cli_run("lineage", "base:v1", "--json"))
    assert {n["label"] for n in graph["nodes"] if n["type"] == "run"} == {"a", "b", "user"}
