"""Artifacts (data sets, models, evaluation outputs) in a run store, beside its runs: content-addressed,
versioned, with aliases. A folder store and a bucket hold them under the same keys::

    <root>/.artifacts/objects/<sha256[:2]>/<sha256>     a file's bytes, once however many runs log it
    <root>/.artifacts/<name>/v<N>.json                  version N of an artifact: its manifest, written once
    <root>/.artifacts/<name>/<edit>.alias               an alias moved (``best`` to v3), never rewritten
    <root>/.artifacts/<name>/v<N>.used-<run id>         a run used version N (lineage), empty

A name is quoted into one path segment (``Qwen/Qwen2.5-0.5B`` is ``Qwen%2FQwen2.5-0.5B``). Nothing is
ever rewritten, so writers on many machines need no lock: a version is created only if absent (the
loser of a race takes the next number), an alias move is a file of its own (the latest in time wins,
as run edits fold: ``layout.edit_name``), and an object's key is its content. ``latest`` is no file:
it is the highest version. A *reference* (an ``s3://`` or ``hf://`` URL, or a local path logged with
``reference=True``) is a manifest without objects: the store records what it was, not its bytes.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import time
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ..errors import ArtifactNotFound
from . import layout
from .blobs import Blobs, is_url, open_blobs

ROOT = ".artifacts"
OBJECTS = f"{ROOT}/objects"
LATEST = "latest"
_MANIFEST = re.compile(r"v(\d+)\.json")
_USED = re.compile(r"v(\d+)\.used-(.+)")
ALIAS_SUFFIX = ".alias"
_ALIAS = re.compile(r"[A-Za-z][A-Za-z0-9._-]{0,63}")
_VERSION = re.compile(r"v(\d+)")
FORMAT = 1


@dataclass(frozen=True)
class FileEntry:
    """One file of an artifact: its path inside the artifact, size and SHA-256."""

    name: str
    size: int
    sha256: str


@dataclass
class ArtifactVersion:
    """One version of an artifact, as its manifest says (``aliases`` and ``used_by`` are folded in by
    the store when read)."""

    name: str
    version: int
    kind: str | None
    #: what identifies the content: the SHA-256 of its files' names and hashes, or of the reference
    digest: str
    files: list[FileEntry]
    bytes: int
    #: where the bytes are when the store does not hold them (``s3://``, ``hf://``, a local path)
    reference: str | None
    #: the run that logged it (None: logged from the CLI or a script without a run)
    run: str | None
    created: float
    metadata: dict[str, Any] = field(default_factory=dict)
    aliases: list[str] = field(default_factory=list)
    #: the runs that used it (``Tracker.use_artifact``)
    used_by: list[str] = field(default_factory=list)
    #: the store it was read from, for ``download``
    store: ArtifactStore | None = field(default=None, repr=False, compare=False)

    @property
    def spec(self) -> str:
        """``name:vN``, what ``use_artifact`` and the CLI take to name exactly this version."""
        return f"{self.name}:v{self.version}"

    def as_dict(self) -> dict[str, Any]:
        body = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "store"}
        return {**body, "files": [asdict(f) for f in self.files], "spec": self.spec}

    def download(self, dest: str | os.PathLike[str] | None = None) -> Path:
        """The version's files in ``dest`` (default: a folder per version under the user's cache,
        ``~/.cache/tunetrack/artifacts``); for a reference to a local path, that path."""
        if self.store is None:
            raise ValueError(f"{self.spec} was not read from a store")
        return self.store.download(self, dest if dest is not None else cache_dir() / self.digest[:16])

    @classmethod
    def from_manifest(cls, body: dict[str, Any]) -> ArtifactVersion:
        return cls(
            name=str(body["name"]),
            version=int(body["version"]),
            kind=body.get("kind"),
            digest=str(body["digest"]),
            files=[
                FileEntry(str(f["name"]), int(f["size"]), str(f["sha256"])) for f in body.get("files") or []
            ],
            bytes=int(body.get("bytes") or 0),
            reference=body.get("reference"),
            run=body.get("run"),
            created=float(body.get("created") or 0.0),
            metadata=dict(body.get("metadata") or {}),
        )

    def manifest(self) -> dict[str, Any]:
        body = self.as_dict()
        del (
            body["used_by"],
            body["aliases"],
            body["spec"],
        )  # aliases move and users come later: files of their own
        return {"format": FORMAT, **body}


def cache_dir() -> Path:
    """Where downloaded artifacts go by default (``XDG_CACHE_HOME`` or ``~/.cache``)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tunetrack" / "artifacts"


def check_name(name: str) -> str:
    """An artifact's name: any printable text without ``:``, ``@`` or a line break (those name a
    version, a run's step, or end a line), at most 200 characters."""
    if (
        not name
        or len(name) > 200
        or not name.isprintable()
        or any(c in name for c in ":@")
        or name != name.strip()
    ):
        raise ValueError(
            f"{name!r} cannot name an artifact: printable text without ':' or '@', 1 to 200 characters"
        )
    return name


def check_alias(alias: str) -> str:
    """An alias: a word (``best``, ``production``, ``eval-2026``) that is not ``latest`` (the highest
    version, always) nor a version (``v3``)."""
    if not _ALIAS.fullmatch(alias) or alias == LATEST or _VERSION.fullmatch(alias):
        raise ValueError(
            f"{alias!r} cannot be an alias: a word of letters, digits, '.', '_' or '-' "
            "that is not 'latest' or a version such as v3"
        )
    return alias


def parse_spec(spec: str) -> tuple[str, str]:
    """``name[:version|alias]`` as (name, ``vN`` or an alias or ``latest``)."""
    name, _, which = spec.rpartition(":") if ":" in spec else (spec, "", LATEST)
    return check_name(name), which or LATEST


def digest_of(files: Sequence[FileEntry], reference: str | None) -> str:
    """The content's identity: the same files (names and bytes) give the same digest wherever they lie."""
    h = hashlib.sha256()
    if reference is not None and not files:
        h.update(b"reference\0" + reference.encode())
    for f in sorted(files, key=lambda f: f.name):
        h.update(f"{f.name}\0{f.sha256}\n".encode())
    return h.hexdigest()


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        return str(os.getuid())


def _folder(name: str) -> str:
    return f"{ROOT}/{urllib.parse.quote(name, safe='')}"


def _object(sha256: str) -> str:
    return f"{OBJECTS}/{sha256[:2]}/{sha256}"


class ArtifactStore:
    """The artifacts of the store at ``dir`` (a folder or an object-store URL)."""

    def __init__(self, dir: str | os.PathLike[str]) -> None:
        text = os.fspath(dir)
        url = is_url(text) and not text.startswith("file://")
        self._blobs: Blobs | None = open_blobs(text) if url else None
        self._root = None if url else Path(text[len("file://") :] if text.startswith("file://") else text)
        self.dir = text

    # -- the few operations on keys, for a folder and a bucket ---------------------------------------
    def _read(self, key: str) -> bytes | None:
        if self._blobs is not None:
            return self._blobs.get(key)
        try:
            return (self._root / key).read_bytes()  # type: ignore[operator]
        except FileNotFoundError:
            return None

    def _create(self, key: str, data: bytes) -> bool:
        """Write ``key`` only if absent (False if it was there): whole, never half."""
        if self._blobs is not None:
            return self._blobs.put(key, data, create=True)
        path = self._root / key  # type: ignore[operator]
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        tmp.write_bytes(data)
        try:
            os.link(tmp, path)  # fails if a file is there: create-if-absent, atomically
            return True
        except FileExistsError:
            return False
        finally:
            tmp.unlink()

    def _names_in(self, folder: str) -> list[str]:
        if self._blobs is not None:
            return [b.key.rsplit("/", 1)[-1] for b in self._blobs.list_blobs(folder + "/")]
        path = self._root / folder  # type: ignore[operator]
        return [p.name for p in path.iterdir() if p.is_file()] if path.is_dir() else []

    def _has_object(self, sha256: str) -> bool:
        if self._blobs is not None:
            return self._blobs.head(_object(sha256)) is not None
        return (self._root / _object(sha256)).exists()  # type: ignore[operator]

    def _put_object(self, sha256: str, source: Path) -> None:
        if self._blobs is not None:
            self._blobs.put_file(_object(sha256), source)
            return
        path = self._root / _object(sha256)  # type: ignore[operator]
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{sha256}.{secrets.token_hex(6)}.tmp")
        try:
            shutil.copyfile(source, tmp)  # a copy: a later change to the source must not change the store
            os.replace(tmp, path)  # same content wherever it came from: the last one in is as good
        finally:
            tmp.unlink(missing_ok=True)

    # -- writing -----------------------------------------------------------------------------------
    def log(
        self,
        name: str,
        files: Sequence[tuple[FileEntry, Path]],
        *,
        kind: str | None = None,
        reference: str | None = None,
        run: str | None = None,
        aliases: Iterable[str] = (),
        metadata: dict[str, Any] | None = None,
        digest: str | None = None,
    ) -> ArtifactVersion:
        """Store an artifact's files (each under its hash, skipped where the store has it already) and
        its manifest; the same content as an existing version is that version (its aliases moved).
        With ``reference``, ``files`` are only described (hashed where they are local), never copied;
        ``digest`` names a reference's content where its bytes are not read (a data set's fingerprint)."""
        check_name(name)
        aliases = [check_alias(a) for a in aliases]
        entries = [entry for entry, _ in files]
        digest = digest or digest_of(entries, reference)
        known = self.versions(name)
        same = next((v for v in known if v.digest == digest), None)
        if same is None:
            if reference is None:
                for entry, source in files:
                    if not self._has_object(entry.sha256):
                        self._put_object(entry.sha256, source)
            same = self._new_version(
                ArtifactVersion(
                    name,
                    0,
                    kind,
                    digest,
                    entries,
                    sum(e.size for e in entries),
                    reference,
                    run,
                    time.time(),
                    dict(metadata or {}),
                    aliases,
                ),
                max((v.version for v in known), default=0) + 1,
            )
        for alias in aliases:
            self.set_alias(name, same.version, alias)
        return self.resolve(same.spec)

    def _new_version(self, version: ArtifactVersion, number: int) -> ArtifactVersion:
        folder = _folder(version.name)
        while True:  # another writer took this number: the next one
            version.version = number
            if self._create(f"{folder}/v{number}.json", json.dumps(version.manifest()).encode()):
                return version
            number += 1

    def set_alias(self, name: str, version: int, alias: str) -> None:
        """Point ``alias`` at ``version`` of ``name`` (moved from wherever it was)."""
        self._alias_edit(name, check_alias(alias), version)

    def remove_alias(self, name: str, alias: str) -> None:
        self._alias_edit(name, check_alias(alias), None)

    def _alias_edit(self, name: str, alias: str, version: int | None) -> None:
        """An alias move as a file of its own: what, when and by whom (``user@host``)."""
        now = time.time()
        body = {"alias": alias, "version": version, "time": now, "by": f"{_user()}@{socket.gethostname()}"}
        self._create(
            f"{_folder(check_name(name))}/{layout.edit_name(now)}{ALIAS_SUFFIX}", json.dumps(body).encode()
        )

    def mark_used(self, version: ArtifactVersion, run: str) -> None:
        """Record that ``run`` used ``version``: lineage from an artifact reaches its runs without
        reading every run."""
        self._create(f"{_folder(version.name)}/v{version.version}.used-{run}", b"")

    # -- reading -----------------------------------------------------------------------------------
    def names(self) -> list[str]:
        """Every artifact's name, sorted."""
        if self._blobs is not None:
            folders = self._blobs.list_dirs(ROOT + "/")
        else:
            base = self._root / ROOT  # type: ignore[operator]
            folders = [p.name for p in base.iterdir() if p.is_dir()] if base.is_dir() else []
        return sorted(urllib.parse.unquote(f) for f in folders if f != "objects")

    def versions(self, name: str) -> list[ArtifactVersion]:
        """Every version of ``name``, oldest first, with its aliases (``latest`` on the highest) and
        the runs that used it."""
        folder = _folder(check_name(name))
        files = self._names_in(folder)
        found: dict[int, ArtifactVersion] = {}
        used: dict[int, list[str]] = {}
        moves = []
        for f in files:
            if m := _MANIFEST.fullmatch(f):
                body = self._read(f"{folder}/{f}")
                if body is not None:
                    found[int(m.group(1))] = ArtifactVersion.from_manifest(json.loads(body))
            elif m := _USED.fullmatch(f):
                used.setdefault(int(m.group(1)), []).append(m.group(2))
            elif f.endswith(ALIAS_SUFFIX) and not f.startswith("."):
                moves.append(f)
        where: dict[str, int | None] = {}
        for f in sorted(moves):  # the names sort by time
            body = self._read(f"{folder}/{f}")
            if body is not None:
                move = json.loads(body)
                where[move["alias"]] = move["version"]
        out = sorted(found.values(), key=lambda v: v.version)
        for v in out:
            v.store = self
            v.aliases = sorted(a for a, n in where.items() if n == v.version)
            v.used_by = sorted(used.get(v.version, []))
        if out:
            out[-1].aliases.insert(0, LATEST)
        return out

    def resolve(self, spec: str) -> ArtifactVersion:
        """The version ``name``, ``name:latest``, ``name:v3`` or ``name:best`` names
        (``ArtifactNotFound``, saying what there is, otherwise)."""
        name, which = parse_spec(spec)
        known = self.versions(name)
        if not known:
            others = self.names()
            raise ArtifactNotFound(f"no artifact {name!r}; artifacts: {', '.join(others[:20]) or 'none'}")
        for v in reversed(known):
            if (m := _VERSION.fullmatch(which)) and v.version == int(m.group(1)) or which in v.aliases:
                return v
        said = ", ".join(v.spec + (f" ({', '.join(v.aliases)})" if v.aliases else "") for v in known[-10:])
        raise ArtifactNotFound(f"artifact {name!r} has no version or alias {which!r}; it has {said}")

    def download(self, version: ArtifactVersion, dest: str | os.PathLike[str]) -> Path:
        """The version's files in ``dest`` (made if absent), under their names in the artifact."""
        if version.reference is not None:
            if "://" in version.reference:
                raise ValueError(f"{version.spec} is a reference to {version.reference}: read it from there")
            return Path(version.reference)
        out = Path(dest)
        for f in version.files:
            target = out / f.name
            target.parent.mkdir(parents=True, exist_ok=True)
            if self._blobs is not None:
                self._blobs.get_file(_object(f.sha256), target)
            else:
                shutil.copyfile(self._root / _object(f.sha256), target)  # type: ignore[operator]
        return out

    def stored_bytes(self) -> int:
        """What the objects take in the store: each distinct file counted once."""
        if self._blobs is not None:
            return sum(b.size for b in self._blobs.list_blobs(OBJECTS + "/"))
        base = self._root / OBJECTS  # type: ignore[operator]
        return sum(p.stat().st_size for p in base.rglob("*") if p.is_file()) if base.is_dir() else 0
