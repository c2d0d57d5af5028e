"""Who may do what with a project's runs: the one vocabulary of roles and the one decision.

A role is a level: ``read`` (see the runs), ``edit`` (rename, tag, note and stop them; implies read)
and ``delete`` (implies edit). A team file's ``[[access]]`` rules each name projects (globs: ``"*"``,
``"llm-*"``) and, per role, people: an address, ``"*"`` (anyone signed in) or ``"@group"``. A person's
role in a project is the highest any rule for that project grants them; a rule's ``deny`` naming
them takes every role away, whatever else grants one (an explicit deny beats a wildcard grant, as in
MLflow's permissions). People are compared case-blind: identity providers and proxies disagree on
the case of an address.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from functools import lru_cache


class Role(IntEnum):
    """What a person may do with a project's runs; each level includes the ones below it."""

    NONE = 0
    READ = 1
    EDIT = 2
    DELETE = 3

    @property
    def word(self) -> str:
        return self.name.lower()


#: a rule's fields that grant a role, by the name a team file gives them
GRANTS = {"read": Role.READ, "edit": Role.EDIT, "delete": Role.DELETE}
ANYONE = "*"


def person_key(person: str) -> str:
    """How people are compared: case-blind, blanks dropped."""
    return person.strip().lower()


@dataclass(frozen=True)
class Rule:
    """One ``[[access]]`` table: the projects (globs) it is about, who it grants each role, whom it denies."""

    projects: tuple[str, ...]
    grants: tuple[tuple[Role, frozenset[str]], ...]
    deny: frozenset[str]

    def about(self, project: str) -> bool:
        return any(fnmatch.fnmatchcase(project, glob) for glob in self.projects)


class Roles:
    """The decisions of one team file: ``role(person, project)``, kept per pair (a page asks for many
    runs of the same few projects)."""

    def __init__(self, rules: Sequence[Rule], groups: Mapping[str, Sequence[str]]) -> None:
        self.rules = tuple(rules)
        self.groups = {name: frozenset(map(person_key, members)) for name, members in groups.items()}
        self.role = lru_cache(maxsize=65536)(self._role)

    def _names(self, person: str) -> frozenset[str]:
        """What a rule may call ``person`` by: the address, ``*``, and ``@group`` of each group."""
        key = person_key(person)
        return frozenset({key, ANYONE} | {f"@{g}" for g, members in self.groups.items() if key in members})

    def _role(self, person: str, project: str | None) -> Role:
        """``person``'s role in ``project`` (a run without one is in the project ``""``, which only
        ``"*"`` rules are about)."""
        names, name = self._names(person), project or ""
        best = Role.NONE
        for rule in self.rules:
            if not rule.about(name):
                continue
            if names & rule.deny:
                return Role.NONE
            for role, people in rule.grants:
                if role > best and names & people:
                    best = role
        return best

    def may(self, person: str, role: Role, project: str | None) -> bool:
        return self.role(person, project) >= role
