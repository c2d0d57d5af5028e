"""The team file (TOML) that ``tunetrack ui --team FILE`` serves a team by: its groups, its
``[[access]]`` rules (``roles``), where its personal tokens are kept (``tokens``), and the ways in
besides tokens: an identity provider by OpenID Connect (``[oidc]``) and a reverse proxy that passes
an identity header (``[proxy]``). Secrets are never in the file: it names the environment variables
that hold them.

It is a security boundary, so it is read strictly: an unknown table or key, a rule that names a
group no ``[groups]`` defines, or a file that grants nobody anything is a one-line ``ValueError``
that says where, never a server that quietly lets everyone in or nobody.
"""

from __future__ import annotations

import ipaddress
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .roles import ANYONE, GRANTS, Roles, Rule, person_key

#: the header oauth2-proxy passes (``--pass-user-headers``, ``--set-xauthrequest``)
PROXY_HEADER = "X-Forwarded-Email"
_TABLES = {"groups", "access", "tokens", "proxy", "oidc", "session"}
_RULE_KEYS = {"projects", "deny", *GRANTS}


@dataclass(frozen=True)
class Proxy:
    """A reverse proxy that signs people in: ``header`` names the person, trusted only on a request
    whose peer address is in ``trusted``."""

    header: str
    trusted: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]

    def trusts(self, address: str | None) -> bool:
        try:
            ip = ipaddress.ip_address(address or "")
        except ValueError:
            return False
        return any(ip in net for net in self.trusted)


@dataclass(frozen=True)
class Oidc:
    """An OpenID Connect provider: ``issuer`` (its discovery document is under it), the client, and
    the ID token's claim that names the person."""

    issuer: str
    client_id: str
    client_secret: str = field(repr=False)
    claim: str = "email"


@dataclass(frozen=True)
class Team:
    """A team file, read and checked."""

    path: Path
    roles: Roles
    tokens: Path  # the personal tokens' file (``tokens.Tokens``)
    proxy: Proxy | None
    oidc: Oidc | None
    session_secret: str | None = field(repr=False)  # None: a new one per server start
    session_hours: float = 12.0
    secure_cookies: bool = False  # the session cookie only over HTTPS (a server behind TLS)


def load_team(path: str | os.PathLike[str]) -> Team:
    """The team file at ``path``; ``ValueError`` saying what is wrong and where."""
    where = Path(path)
    try:
        data = tomllib.loads(where.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"cannot read the team file {where}: {exc}") from None
    try:
        return _team(where, data)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _team(where: Path, data: dict[str, Any]) -> Team:
    _only(data, _TABLES, "the team file")
    groups = _groups(data.get("groups", {}))
    rules = [_rule(i, table, groups) for i, table in enumerate(_list(data.get("access", []), "[[access]]"))]
    if not any(people for rule in rules for _, people in rule.grants):
        raise ValueError("no [[access]] rule grants anyone anything: nobody could read a run")
    tokens = _table(data, "tokens", {"file"})
    session = _table(data, "session", {"secret_env", "hours", "secure"})
    return Team(
        path=where,
        roles=Roles(rules, groups),
        tokens=(where.parent / str(tokens.get("file", f"{where.stem}.tokens.json"))).resolve(),
        proxy=_proxy(_table(data, "proxy", {"header", "trusted"})),
        oidc=_oidc(_table(data, "oidc", {"issuer", "client_id", "client_secret_env", "claim"})),
        session_secret=_secret(session, "secret_env", "[session]") if "secret_env" in session else None,
        session_hours=_positive(session.get("hours", 12.0), "[session] hours"),
        secure_cookies=bool(session.get("secure", False)),
    )


def _only(table: Mapping[str, Any], known: set[str], what: str) -> None:
    unknown = sorted(set(table) - known)
    if unknown:
        raise ValueError(f"{what} has no {unknown[0]!r} (it knows {', '.join(sorted(known))})")


def _table(data: Mapping[str, Any], name: str, keys: set[str]) -> dict[str, Any]:
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise ValueError(f"[{name}] is a table")
    _only(table, keys, f"[{name}]")
    return table


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{what} is a list")
    return value


def _people(value: Any, what: str) -> list[str]:
    items = [value] if isinstance(value, str) else _list(value, what)
    if not all(isinstance(p, str) and p.strip() for p in items):
        raise ValueError(f"{what} lists people as text")
    return [p.strip() for p in items]


def _groups(table: Any) -> dict[str, list[str]]:
    if not isinstance(table, dict):
        raise ValueError("[groups] is a table of lists of people")
    return {str(name): _people(members, f"[groups] {name}") for name, members in table.items()}


def _rule(i: int, table: Any, groups: Mapping[str, Any]) -> Rule:
    what = f"[[access]] #{i + 1}"
    if not isinstance(table, dict):
        raise ValueError(f"{what} is a table")
    _only(table, _RULE_KEYS, what)
    if "projects" not in table:
        raise ValueError(f'{what} names no projects (projects = "*" for all)')
    projects = tuple(_people(table["projects"], f"{what} projects"))

    def names(field_name: str) -> frozenset[str]:
        people = _people(table.get(field_name, []), f"{what} {field_name}")
        for p in people:
            if p.startswith("@") and p[1:] not in groups:
                raise ValueError(f"{what} {field_name} names the group {p}, which [groups] does not define")
        return frozenset(p if p == ANYONE or p.startswith("@") else person_key(p) for p in people)

    grants = tuple((role, names(word)) for word, role in GRANTS.items() if word in table)
    return Rule(projects, grants, names("deny"))


def _proxy(table: dict[str, Any]) -> Proxy | None:
    if not table:
        return None
    trusted = _people(table.get("trusted", []), "[proxy] trusted")
    if not trusted:
        raise ValueError("[proxy] trusted names no address: the proxy's header would be trusted from nobody")
    try:
        nets = tuple(ipaddress.ip_network(a, strict=False) for a in trusted)
    except ValueError as exc:
        raise ValueError(f"[proxy] trusted: {exc}") from None
    return Proxy(str(table.get("header", PROXY_HEADER)), nets)


def _oidc(table: dict[str, Any]) -> Oidc | None:
    if not table:
        return None
    for key in ("issuer", "client_id", "client_secret_env"):
        if not isinstance(table.get(key), str) or not table[key]:
            raise ValueError(f"[oidc] needs {key}")
    return Oidc(
        issuer=table["issuer"].rstrip("/"),
        client_id=table["client_id"],
        client_secret=_secret(table, "client_secret_env", "[oidc]"),
        claim=str(table.get("claim", "email")),
    )


def _secret(table: Mapping[str, Any], key: str, what: str) -> str:
    name = table[key]
    value = os.environ.get(str(name), "")
    if not value:
        raise ValueError(f"{what} {key} names ${name}, which is not set")
    return value


def _positive(value: Any, what: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{what} is a positive number")
    return float(value)
