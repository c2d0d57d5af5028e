"""What a process records about itself (git, versions, argv, ranks), and secrets kept out of it, with
real environment variables and a real git."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import asdict

import pytest

from support.helpers import run_script, setenv, torchrun_env
from tunetrack.redact import REDACTED, redact_argv, strip_credentials
from tunetrack.tracker import provenance as tenv
from tunetrack.tracker.launch import RankInfo
from tunetrack.tracker.provenance import git_info, run_metadata

pytestmark = pytest.mark.usefixtures("plain_process")


# -- git ---------------------------------------------------------------------------------------------
def git(repo, *args: str) -> str:
    return subprocess.run(
        [
            "git",
            "-c",
            "user.email=a@b",
            "-c",
            "user.name=a",
            "-c",
            "commit.gpgsign=false",
            "-C",
            str(repo),
            *args,
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A committed repository with a credentialed origin; the user's git config is kept out."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "train.py").write_text("print(1)\n")
    git(path, "add", ".")
    git(path, "commit", "-qm", "first")
    git(path, "remote", "add", "backup", "https://backup.example.com/x.git")
    git(path, "remote", "add", "origin", "https://user:ghp_s3cret@github.com/org/x.git")
    monkeypatch.chdir(path)
    return path


def test_git_clean_then_dirty_with_credentials_stripped(repo):
    head = git(repo, "rev-parse", "HEAD")
    assert git_info() == {
        "commit": head,
        "branch": "main",
        "dirty": False,
        "remote": "https://github.com/org/x.git",
    }
    (repo / "notes.txt").write_text("untracked files do not make the tree dirty")
    assert git_info()["dirty"] is False
    (repo / "train.py").write_text("print(2)\n")
    assert git_info()["dirty"] is True
    meta = run_metadata()
    assert meta["git"] == {**git_info(), "dirty": True}
    assert "ghp_s3cret" not in json.dumps(meta)


def test_git_detached_head_other_remote_and_subdirectory(repo):
    git(repo, "remote", "remove", "origin")
    git(repo, "checkout", "-q", "--detach")
    (repo / "sub").mkdir()
    info = git_info(str(repo / "sub"))
    assert info["branch"] is None and len(info["commit"]) == 40
    assert info["remote"] == "https://backup.example.com/x.git"  # no origin: the first remote


def test_git_in_a_repository_without_commits(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    git(tmp_path, "init", "-q", "-b", "main")
    assert git_info(str(tmp_path)) == {"commit": None, "branch": "main", "dirty": False, "remote": None}


def test_no_repository_no_git_and_a_hung_git(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    outside = tmp_path / "plain"
    outside.mkdir()
    assert git_info(str(outside)) is None
    monkeypatch.setenv("PATH", str(outside))  # no git on PATH
    assert git_info(str(outside)) is None
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text("#!/bin/sh\nsleep 30\n")  # the sleep child keeps stdout open
    (fake / "git").chmod(0o755)
    monkeypatch.setenv("PATH", str(fake))
    monkeypatch.setattr(tenv, "GIT_TIMEOUT", 0.5)
    start = time.monotonic()
    assert git_info(str(outside)) is None
    assert time.monotonic() - start < 3


@pytest.mark.parametrize(
    "url, expected",
    [
        ("https://user:ghp_tok@github.com/org/x.git", "https://github.com/org/x.git"),
        ("https://oauth2:glpat-x@gitlab.example.com:8443/g/x", "https://gitlab.example.com:8443/g/x"),
        ("https://u:p@ss@host/x", "https://host/x"),  # an unencoded @ in the password
        ("https://tok@host", "https://host"),
        ("ssh://git@host:22/x.git", "ssh://host:22/x.git"),
        ("git@github.com:org/x.git", "git@github.com:org/x.git"),  # scp-like: a user name, no secret
        ("https://github.com/org/x.git", "https://github.com/org/x.git"),
        ("/srv/git/x.git", "/srv/git/x.git"),
    ],
)
def test_strip_credentials(url, expected):
    assert strip_credentials(url) == expected


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["train.py", "--hub_token", "hf_abc", "--lr", "3e-4"],
            ["train.py", "--hub_token", REDACTED, "--lr", "3e-4"],
        ),
        (["train.py", "--hub-token=hf_abc"], ["train.py", f"--hub-token={REDACTED}"]),
        (
            ["train.py", "--wandb_api_key", "k", "--api_key=k2"],
            ["train.py", "--wandb_api_key", REDACTED, f"--api_key={REDACTED}"],
        ),
        (["env", "HF_TOKEN=hf_abc", "python", "x.py"], ["env", f"HF_TOKEN={REDACTED}", "python", "x.py"]),
        (
            ["x.py", "--max_new_tokens", "64", "--pad_token=<pad>"],
            ["x.py", "--max_new_tokens", "64", "--pad_token=<pad>"],
        ),
        (
            ["x.py", "--push_to_hub_token"],
            ["x.py", "--push_to_hub_token"],
        ),  # no value follows: nothing to hide
        (["x.py", "--data=https://u:pw@host/d.json"], ["x.py", "--data=https://host/d.json"]),
        (["x.py", "--hub_token="], ["x.py", "--hub_token="]),
    ],
)
def test_redact_argv(argv, expected):
    assert redact_argv(argv) == expected


def test_run_metadata_redacts_the_command_line(repo, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["train.py", "--hub_token", "hf_secret", "--output_dir", "out"])
    meta = run_metadata()
    assert meta["argv"] == ["train.py", "--hub_token", REDACTED, "--output_dir", "out"]
    assert "hf_secret" not in repr(meta)


# -- run_metadata ------------------------------------------------------------------------------------
def test_run_metadata_fields(repo, monkeypatch):
    setenv(monkeypatch, **torchrun_env(1), CUDA_VISIBLE_DEVICES="0,1")
    meta = run_metadata()
    assert meta["host"] and meta["pid"] == os.getpid() and meta["cwd"] == str(repo)
    assert meta["argv"] == sys.argv and meta["argv"] is not sys.argv
    assert meta["python"].count(".") == 2 and meta["platform"].startswith(os.uname().sysname)
    assert meta["git"]["branch"] == "main"
    assert {"torch", "transformers", "numpy", "tunetrack"} <= set(meta["versions"])
    assert "llamafactory" not in meta["versions"]  # not installed: omitted
    assert meta["rank"] == asdict(RankInfo(1, 1, 4, 0, 2, "torchrun"))
    assert meta["cuda_visible_devices"] == "0,1"
    json.dumps(meta)  # stored as JSON as is
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert "cuda_visible_devices" not in run_metadata()


def test_run_metadata_never_raises(tmp_path, monkeypatch):
    import getpass

    def no_user():
        raise KeyError("getpwuid(): uid not found: 1234")

    monkeypatch.setattr(getpass, "getuser", no_user)
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()  # the working directory was deleted under the process
    meta = run_metadata()
    assert meta["user"] is None and meta["cwd"] is None and meta["git"] is None
    assert meta["pid"] == os.getpid() and meta["versions"]


def test_run_metadata_imports_no_framework(tmp_path):
    out = run_script(
        """
        import json, sys
        from tunetrack.tracker.provenance import run_metadata
        meta = run_metadata()
        heavy = [m for m in ("torch", "transformers", "accelerate", "numpy", "deepspeed") if m in sys.modules]
        print(json.dumps([meta["git"], heavy, "torch" in meta["versions"]]))
        """,
        env={"PATH": str(tmp_path)},  # no git on PATH
    )
    git_meta, heavy, has_torch = json.loads(out.stdout)
    assert git_meta is None and heavy == [] and has_torch  # versions come from metadata, not imports
