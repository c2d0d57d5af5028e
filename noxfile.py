"""One nox session per environment: the frameworks' pins conflict, so each gets its own venv.

Run everything with ``bash scripts/test`` (what CI runs); one session with ``bash scripts/test -s hf``;
pass pytest arguments after ``--`` (``bash scripts/test -s tests -- -k rewind``). Sessions build fresh
venvs by default (as CI does); ``-R`` reuses them and skips the installs when iterating locally.

Sessions build their venvs with uv (``venv_backend="uv"``): the same requirements install in seconds
where pip took one to two minutes per session. Every session that needs torch asks for
``torch==2.13.0`` in each install call, and uv is pointed at the wheels pip's own configuration points
at (``find-links``), so it takes the local CPU wheel; later requirements that admit 2.13.0 install
nothing more. (A looser torch would download a multi-GB CUDA build.)

The default list holds only sessions whose test folder has tests; ``bench`` (the benchmarks) and
``gpu`` are run by hand. A session whose pytest collects nothing fails, as pytest exits 5 and nox accepts
only 0: no session can pass by testing nothing. The ``gpu`` session (tests/gpu and
benchmarks/gpu_logging.py) is never in it: it needs an NVIDIA GPU, and ``bash scripts/gpu`` runs it
on one, on that machine's own python3.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import nox

ROOT = Path(__file__).parent
TORCH = "torch==2.13.0"
#: set in every session; ``None`` removes a variable inherited from the caller's shell
ENV: dict[str, str | None] = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "WANDB_MODE": "offline",
    "WANDB_SILENT": "true",
    "TOKENIZERS_PARALLELISM": "false",
    "PYTHONHASHSEED": "0",
    "TUNETRACK_SYSTEM": None,
    # uv, unlike pip, compiles nothing at install: with the caller's PYTHONDONTWRITEBYTECODE (set on
    # the CI machines) every process of every test would compile each module it imports again (an
    # `import mlflow` took 8 s instead of 3); unset, a module is compiled once, when first imported
    "PYTHONDONTWRITEBYTECODE": None,
}
nox.options.default_venv_backend = "uv"
nox.options.reuse_existing_virtualenvs = False  # CI: always fresh; `-R` on the command line overrides
nox.options.error_on_missing_interpreters = True  # a missing python 3.11 fails instead of skipping

#: framework environments: session name -> (test folder, requirements installed after torch)
FRAMEWORKS: dict[str, tuple[str, list[str]]] = {
    # the modern Hugging Face stack: Transformers Trainer, TRL (SFT/DPO/GRPO), Accelerate, Optuna trials
    "hf": (
        "tests/e2e/hf",
        [
            "transformers==5.23.*",
            "accelerate==1.15.*",
            "trl==1.16.*",
            "peft",
            "datasets",
            "optuna",
            "pillow",
            "tensorboard",  # the tensorboard backend, read back with TensorBoard's own reader
            "mlflow",  # the mlflow backend, into a real mlflow server
            "trackio",  # the trackio backend, read back through trackio's storage API
            "wandb",  # the wandb backend, offline run files read with W&B's protobuf schema
            "duckdb>=1.2",  # tunetrack query and the mcp tools, on the runs the callback records
            "mcp>=1.2",
            "textual>=1.0",  # tunetrack tui on the real runs (test_real_runs.py)
            "textual-plotext>=1.0",
        ],
    ),
    # the oldest Accelerate we support (no tracker registry: instances only)
    "acc110": ("tests/e2e/acc110", ["accelerate==1.10.*", "pillow"]),
    # torchtune 0.6.1 breaks with torchao >= 0.16
    "torchtune": (
        "tests/e2e/torchtune",
        # a tune run mirrored into all four trackers (metric_logger.backends=[...]), each read back
        [
            "torchtune==0.6.1",
            "torchao==0.15.0",
            "transformers",
            "sentencepiece",
            "tensorboard",
            "trackio",
            "mlflow",
            "wandb",
        ],
    ),
    # DDPO/AlignProp exist only up to TRL 0.23.1; they log through Accelerate
    "ddpo": ("tests/e2e/ddpo", ["trl==0.23.1", "diffusers", "transformers", "accelerate", "peft", "pillow"]),
    # EleutherAI's lm-evaluation-harness on checkpoints a tiny Trainer run saved: evaluations attached
    "lmeval": ("tests/e2e/lmeval", ["lm-eval==0.4.13", "transformers", "accelerate", "datasets"]),
}


def _has_tests(folder: str) -> bool:
    return any((ROOT / folder).rglob("test_*.py"))


def _core_requirements() -> list[str]:
    """tunetrack's own dependencies, from pyproject.toml (for venvs that install it with --no-deps)."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]


def _local_wheels() -> str | None:
    """The folders of wheels pip is configured to look in (``find-links``: where this machine keeps
    its CPU build of torch), for uv, which reads no pip configuration; None where pip has none."""
    if links := os.environ.get("PIP_FIND_LINKS"):
        return links
    import subprocess
    import sys

    found = subprocess.run(
        [sys.executable, "-m", "pip", "config", "get", "global.find-links"],
        capture_output=True,
        text=True,
        check=False,
    )
    return found.stdout.strip() or None


def _env(session: nox.Session) -> None:
    """A hermetic environment: offline hubs, fixed hash seed, no tunetrack settings from the caller;
    uv's installs look where pip's do for local wheels."""
    session.env.update(ENV)
    for key in os.environ:
        if key.startswith("TUNETRACK_"):
            session.env[key] = None
    if links := _LOCAL_WHEELS:
        session.env["UV_FIND_LINKS"] = " ".join(links.split())


_LOCAL_WHEELS = _local_wheels()


def _install_core(session: nox.Session, *extra: str) -> None:
    session.install(TORCH, "-e", ".[test]", *extra)  # the local CPU wheel (see the module's docstring)


def _pytest(session: nox.Session, name: str, *args: str) -> None:
    """pytest with a JUnit report in test-artifacts/ and the slowest tests in the log; exit code 5
    (nothing collected) fails the session."""
    junit = f"--junitxml=test-artifacts/{name}.xml"
    session.run("pytest", *args, junit, "--durations=15", *session.posargs)


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    """ruff (lint and format) and mypy."""
    _env(session)
    session.install("-e", ".", "ruff", "mypy", "types-psutil")
    paths = ["src", "tests", "benchmarks", "examples", "noxfile.py"]
    session.run("ruff", "check", *paths)
    session.run("ruff", "format", "--check", *paths)
    session.run("mypy", "src/tunetrack")


@nox.session(python="3.11")
def tests(session: nox.Session) -> None:
    """The core: tracker, writer, store, reader, config, system metrics, CLI, packaging (no training)."""
    _env(session)
    _apt(session, "tmux", "/usr/bin/tmux")  # tunetrack tui in a real terminal
    # transformers and peft: config capture of their config classes; hatchling: the wheel-build test;
    # tensorboard: the tensorboard backend; the example package: a third-party backend by entry point;
    # duckdb and mcp: `tunetrack query` and `tunetrack mcp` (the query and mcp extras); polars: a
    # second engine that reads the runs' Parquet copies and the Iceberg tables without tunetrack;
    # pyiceberg: tunetrack compact's Iceberg tables (the warehouse extra); pip: the wheel is built as
    # `pip install .` builds it (a uv venv has no pip of its own)
    _install_core(
        session,
        "pip",
        "numpy",
        "transformers",
        "peft",
        "hatchling",
        "tensorboard",
        "duckdb>=1.2",
        "polars",
        "pyiceberg[sql-sqlite,pyarrow]>=0.12,<0.13",
        "mcp>=1.2",
        "textual>=1.0",  # tunetrack tui (the tui extra)
        "textual-plotext>=1.0",
        "-e",
        "examples/backend_package",
    )
    _pytest(
        session,
        "tests",
        "tests",
        "-m",
        "not e2e",
        "--ignore=tests/e2e",
        "--ignore=tests/ui",
        "--ignore=tests/gpu",
        "--ignore=tests/objectstore",
        "--ignore=tests/bridges",
        "--ignore=tests/notebook",
    )


def _framework_session(name: str, folder: str, requirements: list[str]) -> None:
    @nox.session(name=name, python="3.11")
    def run(session: nox.Session) -> None:
        _env(session)
        _install_core(session, *requirements)
        _pytest(session, name, folder, "-m", "e2e")

    run.__doc__ = f"End-to-end tests with real training: {', '.join(requirements)}."


for _name, (_folder, _reqs) in FRAMEWORKS.items():
    _framework_session(_name, _folder, _reqs)


@nox.session(python="3.11")
def llamafactory(session: nox.Session) -> None:
    """LLaMA Factory 0.9.5 in its own venv (its pins conflict with everything else)."""
    _env(session)
    session.install("llamafactory==0.9.5", TORCH, "torchvision==0.28.0")
    # torchvision/torchaudio from PyPI link CUDA libraries and break CPU torch; LLaMA Factory runs
    # without them (the tests stub torchaudio, which it imports at the top of mm_plugin.py).
    session.run("uv", "pip", "uninstall", "torchvision", "torchaudio")
    # --no-deps: leave LLaMA Factory's resolved pins alone
    session.install("-e", ".", "--no-deps")
    session.install(*_core_requirements(), TORCH, "pytest", "pytest-timeout", "hypothesis")
    _pytest(session, "llamafactory", "tests/e2e/llamafactory", "-m", "e2e")


#: ms-swift 4.6 beside tunetrack: its own pins (transformers < 5.20, TRL < 1.0, peft < 0.21), and msgspec,
#: which its GRPO trainer imports without requiring it
SWIFT_PACKAGES = ["ms-swift==4.6.*", "transformers<5.20", "trl<1.0", "peft<0.21", "datasets<4.8.5", "msgspec"]


@nox.session(python="3.11")
def swift(session: nox.Session) -> None:
    """ms-swift 4.6 in its own venv: `swift sft`/`swift rlhf` with tunetrack's plugin and drop-in on CPU,
    and the Megatron-SWIFT callback driven through its hooks (Megatron itself needs CUDA)."""
    _env(session)
    session.env.update({"MODELSCOPE_OFFLINE": "1", "USE_HF": "1"})
    session.install(*SWIFT_PACKAGES, TORCH)
    # --no-deps: leave ms-swift's resolved pins alone
    session.install("-e", ".", "--no-deps")
    session.install(*_core_requirements(), TORCH, "pytest", "pytest-timeout", "hypothesis", "pillow")
    _pytest(session, "swift", "tests/e2e/swift", "-m", "e2e")


@nox.session(python="3.11")
def deepspeed(session: nox.Session) -> None:
    """The real deepspeed launcher, two processes on CPU (gloo), each driving a DeepSpeed engine."""
    _env(session)
    _install_core(session)
    # An sdist whose build imports torch: no build isolation, so it builds against the CPU torch above.
    # DS_BUILD_OPS=0 leaves the C++ ops to DeepSpeed's JIT at run time; on CPU the only one used is
    # the shared-memory allreduce, built once per machine into ~/.cache/torch_extensions.
    session.install("--no-build-isolation", "deepspeed==0.19.*", TORCH, env={"DS_BUILD_OPS": "0"})
    _pytest(session, "deepspeed", "tests/e2e/deepspeed", "-m", "e2e")


def _apt(session: nox.Session, package: str, binary: str) -> None:
    """Debian's ``package``, installed by the session itself when ``binary`` is missing."""
    if not Path(binary).exists():
        session.run("apt-get", "update", "-q", external=True)
        session.run(
            "apt-get",
            "install",
            "-y",
            "-q",
            package,
            external=True,
            env={"DEBIAN_FRONTEND": "noninteractive"},
        )


def _chromium(session: nox.Session) -> None:
    """Debian's Chromium for the browser tests, installed by the session itself (never `playwright install`)."""
    _apt(session, "chromium", "/usr/bin/chromium")


@nox.session(python="3.11")
def ui(session: nox.Session) -> None:
    """The dashboard: API tests, and browser tests in Debian's Chromium driven by Playwright."""
    _env(session)
    _chromium(session)
    # the sign-in tests' identity provider: oidc-provider in Node (tests/ui/idp, npm ci by the tests)
    _apt(session, "nodejs", "/usr/bin/node")
    _apt(session, "npm", "/usr/bin/npm")
    # mcp and query: a team's dashboard serves the MCP server at /mcp, its query tool in DuckDB
    session.install("-e", ".[test,ui,team,mcp,query]", "playwright", "httpx")  # no torch: never needed
    _pytest(session, "ui", "tests/ui")


@nox.session(python="3.11")
def notebook(session: nox.Session) -> None:
    """Notebooks: the example notebook executed by a real kernel (nbclient), and its live panel drawn,
    and growing while a cell trains, in JupyterLab in Debian's Chromium driven by Playwright."""
    _env(session)
    _chromium(session)
    # the example notebook trains a tiny torch model
    session.install(
        TORCH, "-e", ".[test,notebook]", "nbclient", "nbformat", "ipykernel", "jupyterlab", "playwright"
    )
    _pytest(session, "notebook", "tests/notebook")


#: a real S3-compatible server for the object-store tests (moto's, started by the tests on 127.0.0.1);
#: these resolve together with obstore (s3fs would pull an ancient release beside the newest boto3)
OBJECTSTORE_TEST_PACKAGES = ["moto[s3]==5.2.5", "flask==3.1.3", "flask-cors==6.0.5", "fsspec"]


@nox.session(python="3.11")
def objectstore(session: nox.Session) -> None:
    """Runs in object storage: tests against moto's S3 server through the client that talks to AWS,
    a fault proxy in front of it, fsspec's memory://, and the dashboard over a bucket in Chromium
    (pytest arguments go after --). benchmarks/objectstore_bench.py runs in this session's venv by hand."""
    _env(session)
    session.env["TUNETRACK_OBJECTSTORE_TESTS"] = "1"  # a missing package is an error, never a skip
    _chromium(session)
    session.install(
        TORCH,  # a real Trainer + LoRA run recorded into the bucket (test_trainer.py)
        "-e",
        ".[test,s3,ui,query,tui,warehouse]",  # tui: the terminal view over a bucket; warehouse: Iceberg
        *OBJECTSTORE_TEST_PACKAGES,
        "transformers",
        "peft",
        "datasets",
        "polars",
        "playwright",
        "httpx",
        "tensorboard",
    )
    _pytest(session, "objectstore", "tests/objectstore")


#: the trackers the bridges mirror into and import from, each the real package its users install
BRIDGES_TEST_PACKAGES = ["mlflow", "wandb", "trackio", "tensorboard", "comet_ml"]


@nox.session(python="3.11")
def bridges(session: nox.Session) -> None:
    """Backends and importers against the real trackers: an ``mlflow server`` on 127.0.0.1 (SQLite),
    W&B offline run files, trackio's local store and TensorBoard event files, each read back with that
    tracker's own reader."""
    _env(session)
    _install_core(session, *BRIDGES_TEST_PACKAGES)
    _pytest(session, "bridges", "tests/bridges")


@nox.session(python="3.11")
def docs(session: nox.Session) -> None:
    """The docs build strictly (broken links, missing pages and pages left out of the nav fail)."""
    _env(session)
    session.install("mkdocs>=1.6")
    session.run("mkdocs", "build", "--strict", "--site-dir", "site")


@nox.session(python="3.11")
def bench(session: nox.Session) -> None:
    """tunetrack against the real peer trackers, side by side in one run: measured by hand, never in
    the default list (a figure from a suite sharing the machine with other sessions says little, and
    the run took four of the suite's minutes).

    Without arguments, a smoke run of run_all (every peer and workload, quick, one repetition); with
    arguments (``bash scripts/test -s bench -- --quick``, or ``-- --reps 5``), run_all, system_overhead
    and bridges_bench all run with them."""
    _env(session)
    session.install(
        TORCH,
        "-e",
        ".",
        "trackio",
        "wandb",
        "tensorboard",
        "swanlab",
        "mlflow",
        "transformers",  # the Trainer-overhead benchmark
        "accelerate",
        "datasets",
    )
    if not session.posargs:
        session.run("python", "benchmarks/run_all.py", "--quick", "--reps", "1")
        return
    session.run("python", "benchmarks/run_all.py", *session.posargs)
    session.run("python", "benchmarks/system_overhead.py", *session.posargs)
    # each tracker direct vs through tunetrack (the bridges); the backends' extras are installed above
    session.run("python", "benchmarks/bridges_bench.py", *session.posargs)


#: the GPU machine's own interpreter: CUDA PyTorch, transformers, accelerate and the rest are already
#: there, and no registry can be reached, so the gpu session makes no venv
GPU_PYTHON = os.environ.get("TUNETRACK_GPU_PYTHON", "python3")
#: where the gpu session installs tunetrack and the carried wheels (--target: the interpreter stays as is)
GPU_SITE = Path(os.environ.get("TUNETRACK_GPU_SITE", "/tmp/tunetrack-gpu-site"))


@nox.session(python=False)
def gpu(session: nox.Session) -> None:
    """GPU machine only (not a default session: CI has no GPU): tests/gpu and benchmarks/gpu_logging.py.

    Runs on that machine's own python3 (``TUNETRACK_GPU_PYTHON``) with no venv and no registry:
    tunetrack is installed from the working tree (--no-deps --no-index, built with the carried
    hatchling) and the wheels in .whl/ (``bash scripts/gpu --prepare``) into ``TUNETRACK_GPU_SITE``.
    ``bash scripts/gpu`` is the one command that runs this session on a bare GPU machine. Arguments
    after ``--`` go to the benchmark. Without a GPU the tests fail at collection unless
    TUNETRACK_GPU_TESTS_ON_CPU=1 (a dry run); the benchmark then measures CPU figures and says so.
    """
    _env(session)
    for key, value in os.environ.items():  # TUNETRACK_GPU_*: the dry run, scripts/gpu's deadline
        if key.startswith("TUNETRACK_GPU_"):
            session.env[key] = value
    session.env["PYTHONPATH"] = os.pathsep.join(
        [str(GPU_SITE), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    pip = [GPU_PYTHON, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile"]
    pip += ["--no-cache-dir", "--upgrade", "--target", str(GPU_SITE)]
    # wheels scripts/gpu already installed into the same folder are not installed twice; a CPU dry
    # run installs only the pure-Python ones (the others are built for the GPU image's CPython 3.12)
    dry_run = os.environ.get("TUNETRACK_GPU_TESTS_ON_CPU") == "1"
    wheels = [
        str(w)
        for w in sorted((ROOT / ".whl").glob("*-none-any.whl" if dry_run else "*.whl"))
        if not (GPU_SITE / ("-".join(w.name.split("-")[:2]) + ".dist-info")).is_dir()
    ]
    if wheels:
        session.run(*pip, *wheels, external=True)
    # the build hook's uPlot download (npm) fails at once offline: the dashboard is not tested here
    session.run(*pip, "--no-build-isolation", ".", external=True, env={"npm_config_offline": "true"})
    session.run(GPU_PYTHON, "-c", _GPU_REPORT, external=True)
    # the tests first; a failure is reported after the benchmark has run, so one call gives both
    junit = ROOT / "test-artifacts" / "gpu.xml"
    junit.unlink(missing_ok=True)
    session.run(
        GPU_PYTHON,
        "-m",
        "pytest",
        "tests/gpu",
        "-m",
        "gpu",
        f"--junitxml={junit.relative_to(ROOT)}",
        "--timeout=300",  # a hung GPU test must leave time for the benchmark
        external=True,
        success_codes=[0, 1],  # 1: tests failed (reported below); no GPU, or nothing collected, stops here
    )
    session.run(GPU_PYTHON, "benchmarks/gpu_logging.py", *session.posargs, external=True)
    failed = _junit_failures(junit)
    if failed:
        session.error(f"tests/gpu: {failed} test(s) failed or errored (see above and {junit.name})")


#: printed by the gpu session before the tests: what is installed where, and the device
_GPU_REPORT = """
import importlib.metadata as md, sys
import torch, tunetrack
print("python", sys.version.split()[0], sys.executable)
print("tunetrack", tunetrack.__version__, tunetrack.__file__)
for name in ("torch", "transformers", "accelerate", "nvidia-ml-py", "trackio", "wandb", "plotext"):
    try:
        print(name, md.version(name))
    except md.PackageNotFoundError:
        print(name, "not installed")
print("CUDA available:", torch.cuda.is_available(), "| torch built with CUDA", torch.version.cuda)
if torch.cuda.is_available():
    print("device 0:", torch.cuda.get_device_name(0), "| devices:", torch.cuda.device_count())
"""


def _junit_failures(path: Path) -> int:
    """Failures plus errors in a JUnit report (every test counts: pytest writes one <testsuite>)."""
    import xml.etree.ElementTree as ET

    if not path.exists():
        return 1  # pytest wrote no report: count it as a failure
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    return sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)


def _default_sessions() -> list[str]:
    """Sessions with something to run right now, in a fixed order (cheap ones first). Never ``gpu``:
    it needs an NVIDIA GPU, which CI does not have (``bash scripts/gpu`` runs it on one)."""
    sessions = ["lint", "tests"]
    sessions += [name for name, (folder, _) in FRAMEWORKS.items() if _has_tests(folder)]
    sessions += [name for name in ("llamafactory", "swift", "deepspeed") if _has_tests(f"tests/e2e/{name}")]
    if _has_tests("tests/ui"):
        sessions.append("ui")
    if _has_tests("tests/notebook"):
        sessions.append("notebook")
    if _has_tests("tests/objectstore"):
        sessions.append("objectstore")
    if _has_tests("tests/bridges"):
        sessions.append("bridges")
    sessions.append("docs")
    return sessions  # never ``bench``: benchmarks run by hand (see the session)


nox.options.sessions = _default_sessions()
