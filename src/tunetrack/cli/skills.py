"""The ``skills`` commands: ``skills add`` installs tunetrack's skill file (``agents/skill/SKILL.md``,
package data: how a coding agent finds, reads, compares and diagnoses runs with this CLI) where each
agent looks for one, and ``skills show`` prints it.

Each agent reads instructions from its own place, so the one file is written in each one's shape:

- Claude Code: ``.claude/skills/tunetrack/SKILL.md`` (``~/.claude/...`` with ``--global``), as is;
- Codex: ``.agents/skills/tunetrack/SKILL.md`` (``~/.agents/...``), as is: the Agent Skills folder
  Codex's documentation names for a repository and for a user;
- Cursor: ``.cursor/rules/tunetrack.mdc``, a rule the agent pulls in by its description (front matter
  ``description``, ``globs``, ``alwaysApply: false``); Cursor keeps no rule files outside a project;
- any agent that reads ``AGENTS.md`` (Codex, Cursor, Copilot, ...): a section between two markers, so
  that adding it again finds it, and the rest of the file is left as it was; a project file only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

from .errors import Group, friendly

#: the lines around tunetrack's section of an AGENTS.md
SECTION_START = "<!-- tunetrack skill: start (tunetrack skills add) -->"
SECTION_END = "<!-- tunetrack skill: end -->"


@dataclass(frozen=True)
class Agent:
    """Where one agent reads the skill: ``path`` under the project (and under the home folder, for
    ``--global``, when ``home`` is true), and the folders whose presence in a project says it is
    used there (``marks``)."""

    title: str
    path: str
    home: bool
    marks: tuple[str, ...]


AGENTS = {
    "claude": Agent("Claude Code", ".claude/skills/tunetrack/SKILL.md", True, (".claude",)),
    "codex": Agent("Codex", ".agents/skills/tunetrack/SKILL.md", True, (".codex", ".agents")),
    "cursor": Agent("Cursor", ".cursor/rules/tunetrack.mdc", False, (".cursor",)),
    "agents": Agent("AGENTS.md", "AGENTS.md", False, ()),
}


def skill_text() -> str:
    """The packaged SKILL.md (read from the installed package, wheel or source tree alike)."""
    from importlib.resources import files

    return files("tunetrack").joinpath("agents/skill/SKILL.md").read_text(encoding="utf-8")


def split_front_matter(text: str) -> tuple[dict[str, str], str]:
    """The skill's front matter (one ``key: value`` a line, as SKILL.md writes it) and its body."""
    head, sep, body = text.removeprefix("---\n").partition("\n---\n")
    if not text.startswith("---\n") or not sep:
        raise ValueError("the packaged SKILL.md has no front matter")
    fields = dict(line.split(": ", 1) for line in head.splitlines() if ": " in line)
    return fields, body.lstrip("\n")


def cursor_rule(text: str) -> str:
    """The skill as a Cursor rule: Cursor's own front matter, with the skill's description (what its
    agent reads to decide to pull the rule in: no globs, not always applied)."""
    fields, body = split_front_matter(text)
    return f"---\ndescription: {fields['description']}\nglobs:\nalwaysApply: false\n---\n\n{body}"


def agents_section(text: str) -> str:
    """The skill as a section of an AGENTS.md: no front matter (AGENTS.md has none), each heading one
    level down so that it sits under the file's own title, between the markers."""
    _, body = split_front_matter(text)
    lines, fenced = [], False
    for line in body.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        lines.append(f"#{line}" if line.startswith("#") and not fenced else line)
    return "\n".join([SECTION_START, *lines, SECTION_END]) + "\n"


def merged_agents_md(current: str | None, section: str, force: bool, path: Path) -> str:
    """``current`` (an AGENTS.md, None when there is none) with tunetrack's section added at its end,
    or put in place of the one there; a different section there is replaced only with ``force``."""
    if current is None:
        return section
    start, end = current.find(SECTION_START), current.find(SECTION_END)
    if start < 0 or end < start:
        return f"{current.rstrip()}\n\n{section}" if current.strip() else section
    end += len(SECTION_END)
    if current[end : end + 1] == "\n":  # the section's own line end
        end += 1
    if current[start:end] != section and not force:
        raise click.ClickException(f"{path} has a different tunetrack section; --force replaces it")
    return current[:start] + section + current[end:]


def chosen_agents(flags: dict[str, bool], root: Path, glob: bool) -> list[str]:
    """The agents named by flags; else those whose folders ``root`` has (with ``--global``: only
    those that keep skills in the home folder), else Claude Code."""
    named = [name for name, on in flags.items() if on]
    if named:
        return named
    found = [
        name
        for name, agent in AGENTS.items()
        if agent.marks and (agent.home or not glob) and any((root / m).is_dir() for m in agent.marks)
    ]
    return found or ["claude"]


@click.group("skills", cls=Group)
def skills_group() -> None:
    """The skill file that teaches a coding agent (Claude Code, Codex, Cursor, ...) tunetrack's CLI:
    finding, reading, comparing and diagnosing runs."""


@skills_group.command("add")
@click.option("--claude", is_flag=True, help="For Claude Code: .claude/skills/tunetrack/SKILL.md.")
@click.option("--codex", is_flag=True, help="For Codex: .agents/skills/tunetrack/SKILL.md.")
@click.option("--cursor", is_flag=True, help="For Cursor: the rule .cursor/rules/tunetrack.mdc.")
@click.option("--agents", is_flag=True, help="A tunetrack section in AGENTS.md (read by many agents).")
@click.option(
    "--global",
    "glob",
    is_flag=True,
    help="Into the home folder (~/.claude, ~/.agents): every project (Claude Code and Codex only).",
)
@click.option(
    "--dir",
    "dir",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="The project folder to install into (default: the current folder). Not a store.",
)
@click.option("--force", is_flag=True, help="Replace a different file (or AGENTS.md section) already there.")
@friendly
def skills_add_command(
    claude: bool, codex: bool, cursor: bool, agents: bool, glob: bool, dir: str | None, force: bool
) -> None:
    """Install the skill where each agent looks for it. Without a flag: for each agent whose folder
    the project has (.claude, .codex or .agents, .cursor), else for Claude Code.

    A file already there is left alone when it is the same, and replaced only with --force when it
    differs (an AGENTS.md keeps everything but tunetrack's section).
    """
    if glob and dir is not None:
        raise click.UsageError("give --dir or --global, not both")
    flags = {"claude": claude, "codex": codex, "cursor": cursor, "agents": agents}
    no_home = [AGENTS[name].title for name, on in flags.items() if on and not AGENTS[name].home]
    if glob and no_home:
        raise click.UsageError(
            f"--global is for Claude Code and Codex ({' and '.join(no_home)}: per project)"
        )
    root = Path.home() if glob else Path(dir or ".")
    text = skill_text()
    planned = []  # every file's new text is decided before any is written: a refusal writes nothing
    for name in chosen_agents(flags, root, glob):
        path = root / AGENTS[name].path
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if name == "agents":
            new = merged_agents_md(current, agents_section(text), force, path)
        else:
            new = cursor_rule(text) if name == "cursor" else text
            if current is not None and current != new and not force:
                raise click.ClickException(
                    f"{path} exists and differs from tunetrack's skill; --force replaces it"
                )
        planned.append((name, path, current, new))
    for name, path, current, new in planned:
        title = AGENTS[name].title
        if current == new:
            click.echo(f"{title}: {path} is already up to date")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(new, encoding="utf-8")
        if current is None:
            done = "wrote"
        elif name == "agents" and SECTION_START not in current:
            done = "added tunetrack's section to"
        else:
            done = "updated"
        click.echo(f"{title}: {done} {path}")


@skills_group.command("show")
@friendly
def skills_show_command() -> None:
    """Print the skill (SKILL.md) to stdout: to read it, or to pipe it where an agent reads it."""
    click.echo(skill_text(), nl=False)
