"""One nox session per environment: the frameworks' pins conflict, so each gets its own venv.

Every session that needs torch installs ``torch==2.13.0`` first, on its own: pip then takes the
local CPU wheel, and later requirements that admit 2.13.0 install nothing more. (A looser torch
would download a multi-GB CUDA build.)

The default list holds only sessions whose test folder has tests, so no session can pass by
collecting nothing (pytest's exit code 5 fails a session).
"""

from __future__ import annotations

from pathlib import Path

import nox

ROOT = Path(__file__).parent
TORCH = "torch==2.13.0"
ENV = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "WANDB_MODE": "offline",
    "WANDB_SILENT": "true",
    "TOKENIZERS_PARALLELISM": "false",
    "PYTHONHASHSEED": "0",
    "TUNETRACK_SYSTEM_INTERVAL": "10",
}
nox.options.reuse_existing_virtualenvs = False
nox.options.error_on_missing_interpreters = True

#: framework environments: session name -> (test folder, requirements installed after torch)
FRAMEWORKS: dict[str, tuple[str, list[str]]] = {
    "hf": (
        "tests/e2e/hf",
        ["transformers==5.23.*", "accelerate==1.15.*", "trl==1.16.*", "peft", "datasets", "optuna", "pillow"],
    ),
    "acc110": ("tests/e2e/acc110", ["accelerate==1.10.*", "pillow"]),
    "torchtune": (
        "tests/e2e/torchtune",
        ["torchtune==0.6.1", "torchao==0.15.0", "transformers", "sentencepiece"],
    ),
    "ddpo": ("tests/e2e/ddpo", ["trl==0.23.1", "diffusers", "transformers", "accelerate", "peft", "pillow"]),
}


def _has_tests(folder: str) -> bool:
    return any((ROOT / folder).glob("test_*.py"))


def _install_core(session: nox.Session, *extra: str) -> None:
    session.install(TORCH)
    session.install("-e", ".[test]", *extra)


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    """ruff (lint and format) and mypy."""
    session.install("-e", ".", "ruff", "mypy", "types-psutil")
    session.run("ruff", "check", "src", "tests", "benchmarks", "examples", "noxfile.py")
    session.run("ruff", "format", "--check", "src", "tests", "benchmarks", "examples", "noxfile.py")
    session.run("mypy", "src/tunetrack")


@nox.session(python="3.11")
def tests(session: nox.Session) -> None:
    """The core: tracker, writer, store, reader, config, system metrics, CLI (no training framework)."""
    _install_core(session, "transformers", "peft")
    session.run(
        "pytest",
        "tests",
        "-m",
        "not e2e",
        "--ignore=tests/e2e",
        "--ignore=tests/ui",
        "--junitxml=test-artifacts/tests.xml",
        *session.posargs,
        env=ENV,
    )


def _framework_session(name: str, folder: str, requirements: list[str]) -> None:
    @nox.session(name=name, python="3.11")
    def run(session: nox.Session) -> None:
        _install_core(session, *requirements)
        session.run(
            "pytest", folder, "-m", "e2e", f"--junitxml=test-artifacts/{name}.xml", *session.posargs, env=ENV
        )

    run.__doc__ = (
        f"End-to-end tests with real training in the {name} environment ({', '.join(requirements)})."
    )


for _name, (_folder, _reqs) in FRAMEWORKS.items():
    _framework_session(_name, _folder, _reqs)


@nox.session(python="3.11")
def llamafactory(session: nox.Session) -> None:
    """LLaMA Factory 0.9.5 in its own venv (its pins conflict with everything else)."""
    session.install(TORCH)
    session.install("llamafactory==0.9.5", TORCH, "torchvision==0.28.0")
    # torchvision/torchaudio from PyPI link CUDA libraries and break CPU torch; LLaMA Factory runs without them.
    session.run("pip", "uninstall", "-y", "torchvision", "torchaudio")
    session.install("-e", ".[test]", "--no-deps")
    session.install(
        "msgpack",
        "click",
        "rich",
        "plotext",
        "psutil",
        "nvidia-ml-py",
        "pytest",
        "pytest-timeout",
        "hypothesis",
    )
    session.run(
        "pytest",
        "tests/e2e/llamafactory",
        "-m",
        "e2e",
        "--junitxml=test-artifacts/llamafactory.xml",
        *session.posargs,
        env=ENV,
    )


@nox.session(python="3.11")
def ui(session: nox.Session) -> None:
    """The dashboard: API tests, and browser tests in Debian's Chromium driven by Playwright."""
    if not Path("/usr/bin/chromium").exists():  # installed by the session itself; never `playwright install`
        session.run("apt-get", "update", "-q", external=True)
        session.run(
            "apt-get",
            "install",
            "-y",
            "-q",
            "chromium",
            external=True,
            env={"DEBIAN_FRONTEND": "noninteractive"},
        )
    session.install("-e", ".[test,ui]", "playwright", "httpx")  # no torch: the dashboard never needs it
    session.run("pytest", "tests/ui", "--junitxml=test-artifacts/ui.xml", *session.posargs, env=ENV)


@nox.session(python="3.11")
def docs(session: nox.Session) -> None:
    """The docs build strictly (broken links and missing pages fail)."""
    session.install("mkdocs>=1.6")
    session.run("mkdocs", "build", "--strict", "--site-dir", "site")


@nox.session(python="3.11")
def bench(session: nox.Session) -> None:
    """tunetrack against the real peer trackers, side by side in one run."""
    session.install(TORCH)
    session.install(
        "-e",
        ".",
        "trackio",
        "wandb",
        "tensorboard",
        "swanlab",
        "mlflow",
        "transformers",
        "accelerate",
        "datasets",
    )
    session.run("python", "benchmarks/run_all.py", *(session.posargs or ["--quick"]), env=ENV)
    session.run("python", "benchmarks/system_overhead.py", *(session.posargs or ["--quick"]), env=ENV)


nox.options.sessions = [
    "lint",
    "tests",
    *[name for name, (folder, _) in FRAMEWORKS.items() if _has_tests(folder)],
    *(["llamafactory"] if _has_tests("tests/e2e/llamafactory") else []),
    *(["ui"] if _has_tests("tests/ui") else []),
    "docs",
    *(["bench"] if (ROOT / "benchmarks" / "run_all.py").exists() else []),
]
