"""``tunetrack skills``: the skill file for coding agents, installed where each agent looks for it
(Claude Code, Codex, Cursor, an AGENTS.md), never over a different file without ``--force``, and
printed as packaged. Run as a user runs it: ``python -m tunetrack`` in a process of its own, in a
project folder of its own, with HOME pointed at a folder of the test's for ``--global``.

That every command the skill teaches works on real runs is checked on the runs the Transformers
and TRL callback records: tests/e2e/hf/test_real_runs.py::test_every_command_of_the_skill."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest
import yaml  # PyYAML: omegaconf's dependency, in the test extra

from support.helpers import SRC

SKILL = Path(SRC) / "tunetrack" / "agents" / "skill" / "SKILL.md"
PATHS = {
    "--claude": ".claude/skills/tunetrack/SKILL.md",
    "--codex": ".agents/skills/tunetrack/SKILL.md",
    "--cursor": ".cursor/rules/tunetrack.mdc",
    "--agents": "AGENTS.md",
}


def skills(*args: str, cwd: Path, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    if home is not None:
        env["HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "tunetrack", "skills", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def front_matter(text: str) -> tuple[dict, str]:
    assert text.startswith("---\n")
    head, _, body = text[4:].partition("\n---\n")
    return yaml.safe_load(head), body


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def test_the_packaged_skill_is_a_claude_code_skill():
    """Front matter that YAML reads (name, description: what an agent matches a task against), a
    body an agent reads whole in a few minutes of context, and the package's copy is the source's."""
    text = files("tunetrack").joinpath("agents/skill/SKILL.md").read_text(encoding="utf-8")
    assert text == SKILL.read_text(encoding="utf-8")
    fields, body = front_matter(text)
    assert fields["name"] == "tunetrack" and set(fields) == {"name", "description"}
    assert "fine-tuning runs" in fields["description"] and len(fields["description"]) <= 1024
    assert len(text.splitlines()) <= 250 and "tunetrack ls" in body


def test_show_prints_the_packaged_file(project):
    done = skills("show", cwd=project)
    assert done.returncode == 0 and done.stdout == SKILL.read_text(encoding="utf-8")


@pytest.mark.parametrize("flag", ["--claude", "--codex"])
def test_a_skill_folder_gets_the_file_as_is(project, flag):
    done = skills("add", flag, cwd=project)
    path = project / PATHS[flag]
    assert done.returncode == 0, done.stderr
    assert path.read_text() == SKILL.read_text()
    assert done.stdout.endswith(f"wrote {PATHS[flag]}\n")


def test_cursor_gets_a_rule_pulled_in_by_its_description(project):
    assert skills("add", "--cursor", cwd=project).returncode == 0
    fields, body = front_matter((project / PATHS["--cursor"]).read_text())
    skill, skill_body = front_matter(SKILL.read_text())
    assert fields == {"description": skill["description"], "globs": None, "alwaysApply": False}
    assert body.strip() == skill_body.strip()


def test_agents_md_gets_a_section_and_keeps_the_rest(project):
    agents_md = project / "AGENTS.md"
    agents_md.write_text("# Our project\n\nRun the tests with nox.\n")
    done = skills("add", "--agents", cwd=project)
    assert done.returncode == 0 and "added tunetrack's section to AGENTS.md" in done.stdout
    text = agents_md.read_text()
    assert text.startswith("# Our project\n\nRun the tests with nox.\n\n<!-- tunetrack skill: start")
    assert "\n## tunetrack: reading fine-tuning runs\n" in text and "\nname: tunetrack\n" not in text
    assert text.count("tunetrack skill: start") == 1 and text.rstrip().endswith(
        "<!-- tunetrack skill: end -->"
    )
    # again: nothing changes; an edited section is replaced only with --force, the rest kept
    again = skills("add", "--agents", cwd=project)
    assert again.returncode == 0 and "already up to date" in again.stdout and agents_md.read_text() == text
    agents_md.write_text(text.replace("## Find runs", "## Find the runs") + "\nMore of ours.\n")
    refused = skills("add", "--agents", cwd=project)
    assert refused.returncode == 1
    assert refused.stderr == "Error: AGENTS.md has a different tunetrack section; --force replaces it\n"
    assert skills("add", "--agents", "--force", cwd=project).returncode == 0
    assert agents_md.read_text() == text + "\nMore of ours.\n"


def test_a_new_agents_md_is_the_section_alone(project):
    assert skills("add", "--agents", cwd=project).returncode == 0
    assert (project / "AGENTS.md").read_text().startswith("<!-- tunetrack skill: start")


def test_without_a_flag_each_agent_the_project_uses(project):
    (project / ".cursor").mkdir()
    (project / ".codex").mkdir()
    done = skills("add", cwd=project)
    assert done.returncode == 0, done.stderr
    assert (project / PATHS["--codex"]).is_file() and (project / PATHS["--cursor"]).is_file()
    assert not (project / ".claude").exists() and not (project / "AGENTS.md").exists()


def test_without_a_flag_or_an_agent_s_folder_claude_code(project):
    done = skills("add", cwd=project)
    assert done.returncode == 0 and done.stdout == f"Claude Code: wrote {PATHS['--claude']}\n"


def test_dir_names_the_project(project, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert skills("add", "--codex", "--dir", str(project), cwd=elsewhere).returncode == 0
    assert (project / PATHS["--codex"]).is_file() and not (elsewhere / ".agents").exists()


def test_global_installs_into_home(project, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    done = skills("add", "--global", "--claude", "--codex", cwd=project, home=home)
    assert done.returncode == 0, done.stderr
    assert (home / PATHS["--claude"]).read_text() == SKILL.read_text()
    assert (home / PATHS["--codex"]).read_text() == SKILL.read_text()
    assert list(project.iterdir()) == []
    # without a flag: the agents whose folder the home has (Codex here), else Claude Code
    other = tmp_path / "other"
    (other / ".codex").mkdir(parents=True)
    assert skills("add", "--global", cwd=project, home=other).returncode == 0
    assert (other / PATHS["--codex"]).is_file() and not (other / ".claude").exists()


def test_refuses_to_overwrite_a_different_file_without_force(project):
    path = project / PATHS["--claude"]
    path.parent.mkdir(parents=True)
    path.write_text("our own notes\n")
    (project / ".cursor").mkdir()
    done = skills("add", "--claude", "--cursor", cwd=project)
    assert done.returncode == 1
    assert done.stderr == (
        f"Error: {PATHS['--claude']} exists and differs from tunetrack's skill; --force replaces it\n"
    )
    assert path.read_text() == "our own notes\n"
    assert not (project / PATHS["--cursor"]).exists()  # a refusal writes nothing at all
    forced = skills("add", "--claude", "--force", cwd=project)
    assert forced.returncode == 0 and f"updated {PATHS['--claude']}" in forced.stdout
    assert path.read_text() == SKILL.read_text()


def test_adding_again_is_a_no_op_that_says_so(project):
    assert skills("add", "--claude", "--cursor", cwd=project).returncode == 0
    before = {p: (project / p).stat().st_mtime_ns for p in (PATHS["--claude"], PATHS["--cursor"])}
    done = skills("add", "--claude", "--cursor", cwd=project)
    assert done.returncode == 0
    assert done.stdout == (
        f"Claude Code: {PATHS['--claude']} is already up to date\n"
        f"Cursor: {PATHS['--cursor']} is already up to date\n"
    )
    assert {p: (project / p).stat().st_mtime_ns for p in before} == before


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--cursor", "--global"],
            "Error: --global is for Claude Code and Codex (Cursor: per project) "
            "(see 'tunetrack skills add --help')",
        ),
        (
            ["--global", "--dir", "."],
            "Error: give --dir or --global, not both (see 'tunetrack skills add --help')",
        ),
        (
            ["--dir", "nowhere"],
            "Error: Invalid value for '--dir': Directory 'nowhere' does not exist. "
            "(see 'tunetrack skills add --help')",
        ),
    ],
)
def test_bad_flags_are_one_line(project, args, message):
    done = skills("add", *args, cwd=project, home=project)
    assert done.returncode == 2 and done.stderr == message + "\n"
    assert list(project.iterdir()) == []
