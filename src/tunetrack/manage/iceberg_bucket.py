"""The Iceberg catalog of a bucket store. No SQLite file can live in a bucket, and a catalog server
would be a server of ours, so a bucket's tables are their own catalog, laid out as Iceberg's Hadoop
catalog lays out a table (what Spark's ``hadoop`` catalog, DuckDB's ``iceberg_scan``, pyiceberg's
``StaticTable`` and Trino's ``register_table`` read)::

    <store>/.warehouse/iceberg/tunetrack/<table>/metadata/v<N>.metadata.json   version N of the table
    <store>/.warehouse/iceberg/tunetrack/<table>/metadata/version-hint.text     N, the newest (a hint)

A transaction on version N is committed as version N+1 by a create-only put, so two compactors never
both commit it: the second's put is refused, ``CommitFailedException`` is raised as a SQL catalog
raises it, and ``publish`` rebuilds its transaction on the newer table. The newest version is the
hint's, or any later one put by a compactor that died before moving the hint. pyiceberg does the rest (manifests, snapshots, data
files) over the bucket through its own FileIO, pointed at the endpoint and region the store's client
reads from the environment.
"""

from __future__ import annotations

import os
from typing import Any

from pyiceberg.catalog import Catalog
from pyiceberg.catalog.noop import NoopCatalog
from pyiceberg.exceptions import CommitFailedException, NoSuchTableError
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.serializers import FromInputFile
from pyiceberg.table import CommitTableResponse, Table
from pyiceberg.table.metadata import TableMetadata, new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.table.update import update_table_metadata

from ..store.blobs import Blobs

#: the hint file of a table, and its versions' names, in ``<table>/metadata``
HINT = "version-hint.text"


def version_name(number: int) -> str:
    return f"v{number}.metadata.json"


def version_of(location: str) -> int:
    """The version number of a ``.../v<N>.metadata.json`` location."""
    return int(location.rsplit("/", 1)[1].removeprefix("v").split(".", 1)[0])


def io_properties() -> dict[str, str]:
    """pyiceberg's FileIO settings for what the store's client takes from the environment (the
    credentials pyarrow's S3 client finds itself, as boto3 does)."""
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    found = {"s3.endpoint": endpoint, "s3.region": region}
    return {key: value for key, value in found.items() if value}


class BucketCatalog(NoopCatalog):
    """The tables under ``<blobs.url>/<base>``, their versions committed by create-only puts; what a
    compactor never asks of a catalog (listing, renaming, views) stays pyiceberg's "not implemented"."""

    def __init__(self, name: str, blobs: Blobs, base: str) -> None:
        self.blobs, self.base = blobs, base.strip("/")
        super().__init__(name, warehouse=f"{blobs.url}/{self.base}", **io_properties())

    def _key(self, identifier: str | tuple[str, ...]) -> str:
        """The table's folder, relative to the store: ``<base>/<namespace>/<table>``."""
        namespace = Catalog.namespace_to_string(Catalog.namespace_from(identifier))
        return f"{self.base}/{namespace}/{Catalog.table_name_from(identifier)}"

    def _url(self, key: str) -> str:
        return f"{self.blobs.url}/{key}"

    def newest(self, key: str) -> int:
        """The table's newest version (0: none): the hint's, or a later one a compactor put after it."""
        hint = self.blobs.get(f"{key}/metadata/{HINT}")
        text = hint.decode(errors="replace").strip() if hint is not None else ""
        number = int(text) if text.isdigit() else 0
        while self.blobs.head(f"{key}/metadata/{version_name(number + 1)}") is not None:
            number += 1
        return number

    def create_namespace(self, namespace: str | tuple[str, ...], properties: Any = None) -> None:
        """Nothing to do: a namespace is the folder its tables lie in."""

    def load_table(self, identifier: str | tuple[str, ...]) -> Table:
        """The table at its newest version in the bucket."""
        key = self._key(identifier)
        number = self.newest(key)
        if not number:
            raise NoSuchTableError(f"no Iceberg table at {self._url(key)}")
        location = self._url(f"{key}/metadata/{version_name(number)}")
        metadata = FromInputFile.table_metadata(self._load_file_io(location=location).new_input(location))
        return Table(
            identifier=Catalog.identifier_to_tuple(identifier),
            metadata=metadata,
            metadata_location=location,
            io=self._load_file_io(metadata.properties, location),
            catalog=self,
        )

    def create_table_if_not_exists(
        self, identifier: Any, schema: Any, properties: dict[str, str] | None = None
    ) -> Table:
        """The table (unpartitioned, unsorted), put as version 1 unless another compactor put it first."""
        key = self._key(identifier)
        if not self.newest(key):
            metadata = new_table_metadata(
                schema=self._convert_schema_if_needed(schema),
                partition_spec=UNPARTITIONED_PARTITION_SPEC,
                sort_order=UNSORTED_SORT_ORDER,
                location=self._url(key),
                properties=dict(properties or {}),
            )
            self._put_version(key, 1, metadata)
        return self.load_table(identifier)

    def commit_table(
        self, table: Table, requirements: tuple[Any, ...], updates: tuple[Any, ...]
    ) -> CommitTableResponse:
        """The updates applied to the version ``table`` was loaded at and put as the next version;
        ``CommitFailedException`` if another compactor put that version first (so a transaction is
        never applied on top of a table it did not read)."""
        key = self._key(table.name())
        number = version_of(table.metadata_location)
        for requirement in requirements:
            requirement.validate(table.metadata)
        metadata = update_table_metadata(
            base_metadata=table.metadata, updates=updates, metadata_location=table.metadata_location
        )
        if metadata == table.metadata:
            return CommitTableResponse(metadata=metadata, metadata_location=table.metadata_location)
        if not self._put_version(key, number + 1, metadata):
            raise CommitFailedException(f"{self._url(key)} was committed by another compactor")
        location = self._url(f"{key}/metadata/{version_name(number + 1)}")
        return CommitTableResponse(metadata=metadata, metadata_location=location)

    def _put_version(self, key: str, number: int, metadata: TableMetadata) -> bool:
        """``metadata`` put as version ``number`` only if there is none yet, and the hint moved to it;
        False if one was there."""
        body = metadata.model_dump_json().encode()
        if not self.blobs.put(f"{key}/metadata/{version_name(number)}", body, create=True):
            return False
        self.blobs.put(f"{key}/metadata/{HINT}", str(number).encode())
        return True


__all__ = ["HINT", "BucketCatalog", "io_properties", "version_name", "version_of"]
