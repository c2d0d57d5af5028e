"""Apache Iceberg tables over the compacted data (``tunetrack compact``'s last step), so that Spark,
Trino, DuckDB, Polars and the warehouses read a store's ``metrics``, ``system``, ``params`` and ``runs``
by name, without tunetrack and without listing anything.

A folder's catalog is pyiceberg's SQL catalog on a SQLite file inside the store
(``.warehouse/iceberg/catalog.db``): no server of ours. A bucket's tables are their own catalog, as
Iceberg's Hadoop catalog lays them out (``manage.iceberg_bucket``). The tables' metadata lies in
``.warehouse/iceberg/tunetrack/<table>/metadata``. The compacted data files are registered as they
are (``add_files``: no rewrite); only the ``runs`` rows and the files rewritten when rows are deleted
are written under ``.warehouse/iceberg/tunetrack/<table>/data``.

Each of tunetrack's commits (``store.warehouse``) is applied to each table in order, in one Iceberg
transaction that also records its number (the table property ``tunetrack.commit``): the rows of the
commit's runs that an earlier commit holds are deleted (a run resumed and compacted again: copy-on-write,
the files holding them rewritten without them), then the commit's files are added. An engine reading
the table by name thus sees each run once, as its newest commit has it. The step is idempotent and
resumable: a compaction that died before it, or with nothing new, applies whatever commits the tables
lack; two at once are serialized (a folder's by a lock; a bucket's catalog refuses a transaction built
on an older table, and it is rebuilt on the newer one). pyiceberg is imported only here, and only when a compaction runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import logging
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import TunetrackError
from ..reader import Run
from ..reader.compacted import commits
from ..reader.find import all_runs
from ..reader.sql_tables import BUILDERS, empty
from ..store import Store
from ..store.local import LocalStore
from ..store.warehouse import ICEBERG, WAREHOUSE, Warehouse, warehouse_of

#: the catalog's name (as a JDBC catalog reading the same SQLite file must be named) and the namespace
CATALOG = "tunetrack"
NAMESPACE = "tunetrack"
#: the SQLite file of the catalog, in ``.warehouse/iceberg``, and the lock its publishes take
CATALOG_FILE = "catalog.db"
LOCK = "publish.lock"
#: table -> the column holding the run's id
TABLES = {"metrics": "run", "system": "run", "params": "run", "runs": "id"}
#: the table property holding the number of the newest tunetrack commit the table has
APPLIED = "tunetrack.commit"
#: pyiceberg's own retry of a refused commit is off: it would apply the same tunetrack commit again on
#: top of the compactor's that won; publish rebuilds the transaction from the table's APPLIED instead
NO_RETRY = {"commit.retry.num-retries": "0"}
#: the bucket URL schemes pyiceberg's FileIO writes (s3:// is the one tested)
SCHEMES = ("s3", "s3a", "gs", "abfs", "abfss", "file")
#: transactions rebuilt after another compactor committed first, at most, per table
RETRIES = 50


class IcebergError(TunetrackError):
    """The Iceberg tables could not be written (pyiceberg missing, a store it cannot write, a catalog that
    kept refusing commits)."""


@dataclass
class Published:
    """What one ``publish`` did: tunetrack commits applied (per table, summed) and snapshots made."""

    applied: int = 0
    snapshots: int = 0


def available() -> bool:
    """Whether pyiceberg is installed (the ``warehouse`` extra): ``compact`` then publishes by default."""
    return importlib.util.find_spec("pyiceberg") is not None


def folder(store: LocalStore) -> Path:
    """Where a folder store's catalog and table metadata lie."""
    return store.root.resolve() / WAREHOUSE / ICEBERG


def writable(store: Store) -> str | None:
    """Why the tables cannot be written for ``store`` (a bucket pyiceberg has no FileIO for), or None."""
    if isinstance(store, LocalStore):
        return None
    url = str(getattr(getattr(store, "blobs", None), "url", store))
    if url.split("://", 1)[0].lower() in SCHEMES:
        return None
    return f"Iceberg tables are written for a folder, s3://, gs:// or abfs:// store, not {store}"


def open_catalog(store: Store) -> Any:
    """The store's catalog: pyiceberg's ``SqlCatalog`` on a folder's SQLite file (created with its
    tables if new), or a bucket's tables as their own catalog (``manage.iceberg_bucket``)."""
    try:
        from pyiceberg.catalog.sql import SqlCatalog
    except ImportError:
        raise IcebergError("Iceberg tables need pyiceberg: pip install 'tunetrack[warehouse]'") from None
    if (why := writable(store)) is not None:
        raise IcebergError(f"{why} (docs/compact.md)")
    if not isinstance(store, LocalStore):
        from .iceberg_bucket import BucketCatalog

        return BucketCatalog(CATALOG, store.blobs, f"{WAREHOUSE}/{ICEBERG}")  # type: ignore[attr-defined]
    where = folder(store)
    where.mkdir(parents=True, exist_ok=True)
    # plain paths, not file:// URIs: a store's path or a project's quoted name may hold '%' or spaces
    return SqlCatalog(CATALOG, uri=f"sqlite:///{where / CATALOG_FILE}", warehouse=str(where))


@contextlib.contextmanager
def _one_at_a_time(store: Store) -> Iterator[None]:
    """A folder's publishes one at a time (``flock``): pyiceberg's SQL catalog checks a commit against
    the table as it is when committing, not as the transaction read it, so two compactors could each
    apply one tunetrack commit. A bucket's catalog refuses a stale commit itself."""
    if not isinstance(store, LocalStore):
        yield
        return
    where = folder(store)
    where.mkdir(parents=True, exist_ok=True)
    with open(where / LOCK, "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def publish(store: Store) -> Published:
    """Apply to each Iceberg table every tunetrack commit it does not have yet (see the module)."""
    warehouse = warehouse_of(store)
    found = commits(warehouse)
    if not found:  # nothing compacted (perhaps no store at all): no catalog made
        return Published()
    catalog = open_catalog(store)
    with _one_at_a_time(store):
        return _publish(store, catalog, warehouse, found)


def _publish(store: Store, catalog: Any, warehouse: Warehouse, found: list[dict[str, Any]]) -> Published:
    from pyiceberg.exceptions import CommitFailedException

    catalog.create_namespace_if_not_exists(NAMESPACE)
    listing: list[Run] | None = None
    out = Published()
    logging.getLogger("pyiceberg.io.pyarrow").setLevel(logging.ERROR)  # "statistics missing": by design
    for name in TABLES:
        ident = f"{NAMESPACE}.{name}"
        catalog.create_table_if_not_exists(ident, schema=empty(name).schema, properties=NO_RETRY)
        refused = 0
        while True:
            table = catalog.load_table(ident)
            done = int(table.properties.get(APPLIED, "0"))
            todo = [c for c in found if c["number"] > done]
            if not todo:
                break
            if name == "runs" and listing is None:
                listing = all_runs(store)
            before = len(table.metadata.snapshots)
            try:
                _apply(table, name, todo[0], found, warehouse, listing or [])
            except CommitFailedException:
                refused += 1
                if refused > RETRIES:
                    raise IcebergError(f"the Iceberg table {ident} kept refusing commits") from None
                continue
            table = catalog.load_table(ident)
            out.applied += 1
            out.snapshots += len(table.metadata.snapshots) - before
    return out


def _apply(
    table: Any,
    name: str,
    commit: dict[str, Any],
    found: Sequence[dict[str, Any]],
    warehouse: Warehouse,
    runs: list[Run],
) -> None:
    """One tunetrack commit as one transaction of ``table``: the rows of its runs an earlier commit
    holds deleted, and those of the runs it records as deleted from the store, its files added (a file that also holds runs this commit does not count, after a
    race between compactors, is appended filtered instead), its number recorded."""
    from pyiceberg.expressions import In

    number = commit["number"]
    mine = commit.get("runs") or {}
    earlier = {r for c in found if c["number"] < number for r in c.get("runs") or {}}
    replaced = sorted((set(mine) | set(commit.get("deleted") or [])) & earlier)
    props = {APPLIED: str(number)}
    with table.transaction() as tx:
        if replaced:
            with warnings.catch_warnings():  # a run with no rows in this table: nothing to delete
                warnings.filterwarnings("ignore", "Delete operation did not match any records")
                tx.delete(In(TABLES[name], replaced), snapshot_properties=props)
        if name == "runs":
            rows = BUILDERS["runs"]([run for run in runs if run.id in mine])
            if rows.num_rows:
                tx.append(rows, snapshot_properties=props)
        else:
            whole = []
            for file in commit.get("files") or []:
                if file["table"] != name or not warehouse.has_data(file["path"]):
                    continue  # another table's, or purged: a later commit holds its runs' rows
                path = warehouse.location(file["path"])
                if set(file["runs"]) <= set(mine):
                    whole.append(path)
                elif rows := _only(table, path, set(mine)):
                    tx.append(rows, snapshot_properties=props)
            if whole:
                tx.add_files(whole, snapshot_properties=props)
        tx.set_properties({**props, **NO_RETRY})  # NO_RETRY: for tables made before it was set


def exists(store: Store) -> bool:
    """Whether the store has Iceberg tables (a purge must then wait for them to hold every commit)."""
    if isinstance(store, LocalStore):
        return (folder(store) / CATALOG_FILE).exists()
    blobs = getattr(store, "blobs", None)
    return blobs is not None and bool(blobs.list_dirs(f"{WAREHOUSE}/{ICEBERG}/{NAMESPACE}/"))


def tidy(store: Store, warehouse: Warehouse, before: float) -> tuple[set[str], int]:
    """Expire each table's snapshots made before ``before`` (unix time; the current one is kept),
    remove what Iceberg wrote before then that no remaining snapshot names (data files, manifests,
    manifest lists), and return every data file the remaining snapshots name, with how many files
    were removed. A table another compactor changed meanwhile is left for the next compaction."""
    from datetime import UTC, datetime

    from pyiceberg.exceptions import CommitFailedException, NoSuchTableError

    catalog = open_catalog(store)
    named: set[str] = set()
    removed = 0
    with _one_at_a_time(store):
        for name in TABLES:
            try:
                table = catalog.load_table(f"{NAMESPACE}.{name}")
                when = datetime.fromtimestamp(before, tz=UTC)
                table.maintenance.expire_snapshots().older_than(when).commit()
            except NoSuchTableError:
                continue
            except CommitFailedException:
                pass
            table = catalog.load_table(f"{NAMESPACE}.{name}")
            data = set(table.inspect.all_data_files().column("file_path").to_pylist())
            kept = data | set(table.inspect.all_manifests().column("path").to_pylist())
            kept |= {snapshot.manifest_list for snapshot in table.snapshots()}
            named |= data
            for part in ("data", "metadata"):
                for key, written in warehouse.data_files(f"{ICEBERG}/{NAMESPACE}/{name}/{part}"):
                    if part == "metadata" and not key.endswith(".avro"):
                        continue  # the table's versions: the newest is what readers open
                    if written < before and warehouse.location(key) not in kept:
                        warehouse.delete(key)
                        removed += 1
    return named, removed


def _only(table: Any, path: str, runs: set[str]) -> Any:
    """The rows of ``runs`` in the data file at ``path`` (None if there are none)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    with table.io.new_input(path).open() as stream:
        data = pq.read_table(stream)
    data = data.filter(pc.is_in(data.column("run"), value_set=pa.array(sorted(runs), pa.string())))
    return data.replace_schema_metadata(None) if data.num_rows else None


__all__ = [
    "APPLIED",
    "CATALOG",
    "CATALOG_FILE",
    "NAMESPACE",
    "TABLES",
    "IcebergError",
    "Published",
    "available",
    "exists",
    "open_catalog",
    "publish",
    "tidy",
    "writable",
]
