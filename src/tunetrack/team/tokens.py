"""Personal tokens: how a person signs in to a team's dashboard, its API and its MCP endpoint without
an identity provider, and how scripts and agents call them.

A token is ``tt_<id>_<secret>``: the id finds its entry, and only the SHA-256 of the whole text is kept,
so the tokens file can be read without anyone being able to sign in with what it holds (the secret
is 256 random bits: a fast hash is enough, as for GitHub's and PyPI's tokens; a slow password hash
protects guessable passwords, which these are not). ``create`` shows a token once; each has an expiry;
``revoke`` ends it at once, sessions it began included (the server looks the id up on every request,
re-reading the file when it changed).

The file is JSON, readable by its owner only, replaced whole on each change: the server reads it
while the CLI writes it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

PREFIX = "tt_"
_TOKEN = re.compile(r"tt_([0-9a-f]{12})_[A-Za-z0-9_-]{43}")
DAY = 86400.0


@dataclass(frozen=True)
class Token:
    """One token's entry: never the token itself."""

    id: str
    person: str
    name: str  # what it is for ("laptop", "ci"): shown by ``tunetrack token list``
    created: float
    expires: float
    digest: str  # SHA-256 of the token's text, hex
    revoked: float | None = None

    def valid(self, now: float) -> bool:
        return self.revoked is None and now < self.expires


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Tokens:
    """The tokens file at ``path``: created, listed and revoked by the CLI, checked by the server."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen: tuple[int, int] | None = None  # the file's (mtime, size) when last read
        self._entries: dict[str, Token] = {}
        self._lock = threading.Lock()

    def entries(self) -> dict[str, Token]:
        """Every token's entry by id, re-read when the file changed (a revocation counts at once)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return {}
        seen = (st.st_mtime_ns, st.st_size)
        with self._lock:
            if seen != self._seen:
                self._entries = self._read()
                self._seen = seen
            return self._entries

    def _read(self) -> dict[str, Token]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return {t["id"]: Token(**t) for t in data["tokens"]}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"the tokens file {self.path} cannot be read: {exc!r}") from None

    def check(self, text: str, now: float | None = None) -> Token | None:
        """The valid token ``text`` is, or None (unknown, wrong secret, revoked or expired)."""
        match = _TOKEN.fullmatch(text.strip())
        if match is None:
            return None
        entry = self.entries().get(match.group(1))
        if entry is None or not hmac.compare_digest(entry.digest, _digest(text.strip())):
            return None
        return entry if entry.valid(time.time() if now is None else now) else None

    def still_valid(self, token_id: str) -> Token | None:
        """The token ``token_id`` if it is still valid: a session it began ends with it."""
        entry = self.entries().get(token_id)
        return entry if entry is not None and entry.valid(time.time()) else None

    def create(self, person: str, days: float, name: str = "") -> tuple[Token, str]:
        """A new token for ``person``, valid ``days``: its entry and its text, which exists nowhere else."""
        if days <= 0:
            raise ValueError("a token's lifetime is a positive number of days")
        if not person.strip():
            raise ValueError("a token is for a person: give their address")
        token_id, now = secrets.token_hex(6), time.time()
        text = f"{PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
        entry = Token(token_id, person.strip(), name, now, now + days * DAY, _digest(text))
        self._write({**self.entries(), token_id: entry})
        return entry, text

    def revoke(self, ref: str) -> list[Token]:
        """Revoke the token with id ``ref``, or every valid token of the person ``ref``; the revoked.
        ``ValueError`` if ``ref`` names none."""
        entries, now = dict(self.entries()), time.time()
        hit = [t for t in entries.values() if t.id == ref or (t.person.lower() == ref.strip().lower())]
        hit = [t for t in hit if t.revoked is None]
        if not hit:
            raise ValueError(f"no token that is not revoked has the id or person {ref!r}")
        for t in hit:
            entries[t.id] = Token(**{**asdict(t), "revoked": now})
        self._write(entries)
        return [entries[t.id] for t in hit]

    def _write(self, entries: dict[str, Token]) -> None:
        body: dict[str, Any] = {
            "tokens": [asdict(t) for t in sorted(entries.values(), key=lambda t: t.created)]
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(body, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
