"""The few pieces of SQL that differ between SQLite and PostgreSQL.

Every statement in the store is written once with ``?`` placeholders and the ``{…}`` type slots
below; :class:`~hindsight_core.store.postgres.PostgresStore` runs the same statements through
:data:`POSTGRES`, and only its connection plumbing differs from the SQLite store."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Dialect:
    name: str
    autoincrement_pk: str
    real: str
    blob: str
    placeholder: str
    begin_write: str
    #: ``{noindex}col``: a column the planner must not pick an index for (SQLite's unary ``+``), where a
    #: lookup by id would otherwise walk a namespace index.
    noindex: str
    #: ``{metadata_contains}``: a condition true when the row's ``metadata`` JSON holds every key of the
    #: JSON object bound to its one ``?`` with an equal value (``find(metadata=...)``). PostgreSQL has
    #: ``jsonb @>``; SQLite has no containment operator, so its store registers ``hs_json_contains``
    #: (``store/sql.py``) with the same meaning for the scalar values ``find`` accepts.
    metadata_contains: str
    #: ``col{bytewise} >= ?``: compare by code point (a range of names sharing a prefix), whatever the
    #: database's collation; a locale collation orders ``user:ana/x`` after ``user:ana0``.
    bytewise: str

    def sql(self, statement: str) -> str:
        statement = statement.format(
            pk=self.autoincrement_pk, real=self.real, blob=self.blob, noindex=self.noindex,
            metadata_contains=self.metadata_contains, bytewise=self.bytewise,
        )
        if self.placeholder != "?":  # a literal % must be doubled where %s marks a parameter
            statement = statement.replace("%", "%%").replace("?", self.placeholder)
        return statement


SQLITE = Dialect(
    name="sqlite",
    autoincrement_pk="INTEGER PRIMARY KEY AUTOINCREMENT",
    real="REAL",
    blob="BLOB",
    placeholder="?",
    begin_write="BEGIN IMMEDIATE",  # take the write lock up front: no deadlock on lock upgrade
    noindex="+",
    metadata_contains="hs_json_contains(metadata, ?)",
    bytewise="",  # BINARY, SQLite's default collation, already compares code points
)

POSTGRES = Dialect(
    name="postgresql",
    autoincrement_pk="BIGSERIAL PRIMARY KEY",
    real="DOUBLE PRECISION",
    blob="BYTEA",
    placeholder="%s",
    begin_write="BEGIN",  # then PostgresStore takes the store's write lock (see store/postgres.py)
    noindex="",  # the planner picks the primary key for an id list on its own
    metadata_contains="(metadata::jsonb @> ?::jsonb)",
    bytewise=' COLLATE "C"',
)
