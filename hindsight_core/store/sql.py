"""SQLite store: the source of truth for memories, edges, embeddings and the outbox.

A single connection guarded by a lock serves the process (async twins run in worker threads);
other processes share the file through WAL mode and a busy timeout. ``synchronous=FULL`` makes a
committed write survive a crash of the process and of the machine."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
from pydantic import BaseModel

from hindsight_core.clock import from_ts, to_ts
from hindsight_core.errors import BackendUnavailableError, EngineClosedError, InvalidInputError
from hindsight_core.namespaces import child_prefix, under
from hindsight_core.store.dialect import SQLITE, Dialect
from hindsight_core.store.migrations import MIGRATIONS
from hindsight_core.types import Activation, Edge, EdgeKind, Kind, Layer, Memory, Status

log = logging.getLogger("hindsight")

_M = TypeVar("_M", bound=BaseModel)

_COLUMNS = (
    "id, namespace, session_id, layer, kind, role, content, occurred_at, created_at, updated_at, importance, "
    "act_log_base, act_ref_time, access_count, source_ids, entities, fingerprint, status, superseded_by, "
    "expires_at, indexed, metadata, external_id"
)
_N_COLUMNS = _COLUMNS.count(",") + 1

#: An outbox row a caller (params: now, owner) may claim: unclaimed, its claim expired, or its own.
_CLAIMABLE = "(claimed_by IS NULL OR claimed_until < ? OR claimed_by = ?)"
#: In ``enqueue``'s upsert: coalesced work may replace the row's claim (with the writer's own, or with
#: none) unless another owner's claim on it is live.
_TAKEOVER = ("(outbox.claimed_by IS NULL OR outbox.claimed_until < excluded.created_at "
             "OR outbox.claimed_by = excluded.claimed_by)")


def _row(m: Memory, external_id: str | None = None) -> tuple[Any, ...]:
    return (
        m.id, m.namespace, m.session_id, m.layer.value, m.kind.value, m.role, m.content,
        to_ts(m.occurred_at), to_ts(m.created_at), to_ts(m.updated_at), m.importance,
        m.activation.log_base, m.activation.ref_time, m.access_count,
        json.dumps(m.source_ids, ensure_ascii=False), json.dumps(m.entities, ensure_ascii=False),
        m.fingerprint, m.status.value, m.superseded_by,
        None if m.expires_at is None else to_ts(m.expires_at), int(m.indexed),
        json.dumps(m.metadata, ensure_ascii=False), external_id,
    )


def _json(text: str) -> Any:
    """A stored JSON list or object; the empty ones (most rows' ``source_ids``, ``entities`` and
    ``metadata``) without the parser, which costs a third of turning a row into a ``Memory``."""
    if text == "[]":
        return []
    if text == "{}":
        return {}
    return json.loads(text)


_LAYERS = {layer.value: layer for layer in Layer}
_KINDS = {kind.value: kind for kind in Kind}
_STATUSES = {status.value: status for status in Status}


def _member(members: Mapping[str, Any], enum: type, value: str) -> Any:
    """``enum(value)`` by lookup (an Enum call costs more than the rest of a field); an unknown value
    still raises the Enum's ``ValueError``."""
    found = members.get(value)
    return enum(value) if found is None else found


def _trusted(cls: type[_M], values: dict[str, Any]) -> _M:
    """A model from values already of its fields' types, without validation: what
    ``BaseModel.model_construct`` builds, minus its per-field default handling (every field is given)."""
    model = object.__new__(cls)
    object.__setattr__(model, "__dict__", values)
    object.__setattr__(model, "__pydantic_fields_set__", set(values))
    object.__setattr__(model, "__pydantic_extra__", None)
    object.__setattr__(model, "__pydantic_private__", None)
    return model


def _memory(r: Sequence[Any]) -> Memory:
    """A stored row as a ``Memory``. Rows were validated as ``Memory`` when written, so they are not
    validated again: every recall reads its candidates' fresh rows, and pydantic's validation was most
    of a row's cost. The values are converted to exactly the types validation gives (enum members,
    aware datetimes, ``float``/``int``/``bool``); ``tests/store/test_rows.py`` holds the two equal."""
    ts = datetime.fromtimestamp
    return _trusted(Memory, {
        "id": r[0], "namespace": r[1], "session_id": r[2], "layer": _member(_LAYERS, Layer, r[3]),
        "kind": _member(_KINDS, Kind, r[4]), "role": r[5], "content": r[6], "occurred_at": ts(r[7], UTC),
        "created_at": ts(r[8], UTC), "updated_at": ts(r[9], UTC), "importance": int(r[10]),
        "activation": _trusted(Activation, {"log_base": float(r[11]), "ref_time": float(r[12])}),
        "access_count": int(r[13]), "source_ids": _json(r[14]), "source_id": r[22], "entities": _json(r[15]),
        "fingerprint": r[16], "status": _member(_STATUSES, Status, r[17]), "superseded_by": r[18],
        "expires_at": None if r[19] is None else ts(r[19], UTC), "indexed": bool(r[20]),
        "metadata": _json(r[21]),
    })


def _json_contains(document: str | None, wanted: str) -> int:
    """SQLite's stand-in for PostgreSQL's ``jsonb @>`` on a flat object of scalars (``find(metadata=...)``):
    every key present with an equal value. JSON keeps ``true`` and ``1`` apart, and so does this (Python's
    ``True == 1`` does not); ``1`` and ``1.0`` are equal, as in ``jsonb``."""
    try:
        stored = json.loads(document) if document else {}
    except ValueError:
        return 0
    if not isinstance(stored, dict):
        return 0
    for key, value in json.loads(wanted).items():
        if key not in stored:
            return 0
        held = stored[key]
        if isinstance(held, bool) != isinstance(value, bool) or isinstance(held, str) != isinstance(value, str):
            return 0
        if held != value or (held is None) != (value is None):
            return 0
    return 1


#: ``LIMIT`` that means "no limit" on both backends (SQLite needs a LIMIT before an OFFSET).
_NO_LIMIT = 2**62


def _scope(namespace: str | None) -> tuple[str, list[Any]]:
    """The WHERE prefix and parameters of an operation over one namespace or (``None``) every one."""
    return ("namespace = ? AND ", [namespace]) if namespace is not None else ("", [])


class OutboxItem:
    __slots__ = ("attempts", "id", "layer", "memory_id", "namespace", "op", "target", "version")

    def __init__(self, row: Sequence[Any]) -> None:
        self.id: int = row[0]
        self.memory_id: str | None = row[1]
        self.namespace: str = row[2]
        self.layer: str | None = row[3]
        self.target: str = row[4]
        self.op: str = row[5]
        self.attempts: int = row[6]
        #: Bumped when later work is coalesced into the row; a drain deletes only the version it applied.
        self.version: int = row[7] if len(row) > 7 else 0


class ConstraintConflict(Exception):
    """A write hit a unique constraint, typically racing another writer on the same idempotency key
    (``source_id``): the transaction rolled back and the caller may read again and retry. Raised by
    every backend, so callers never catch a driver's own exception."""


class Executed(Protocol):
    """What :meth:`RelationalStore.execute` returns: how many rows the statement changed."""

    @property
    def rowcount(self) -> int: ...


class RelationalStore:
    """The relational store on SQLite (the embedded default). Every operation is written once against
    :meth:`execute` / :meth:`executemany` / :meth:`query` / :meth:`transaction` and the dialect's slots,
    so :class:`hindsight_core.store.postgres.PostgresStore` only replaces this plumbing."""

    def __init__(self, path: str | Path, *, dialect: Dialect = SQLITE, busy_timeout_ms: int = 10_000) -> None:
        self.path = Path(path)
        self.dialect = dialect
        self._lock = threading.RLock()
        self._closed = False
        try:
            self._conn = sqlite3.connect(
                str(self.path), timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise BackendUnavailableError(f"SQLite open failed at {str(self.path)!r}: {exc}") from exc
        with self._connection("open") as conn:
            conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.create_function("hs_json_contains", 2, _json_contains, deterministic=True)
        self.migrate()

    # -- plumbing --------------------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._conn.close()

    @contextmanager
    def _connection(self, operation: str) -> Iterator[sqlite3.Connection]:
        """Every use of the connection goes through here, so callers see the project's errors only.

        After ``close`` the store refuses use with :class:`EngineClosedError`. A failing database (disk
        I/O error, disk full, read-only file, locked past the busy timeout, a corrupt file) raises
        :class:`BackendUnavailableError` naming the operation, cause chained. ``IntegrityError`` becomes
        :class:`ConstraintConflict`: a constraint the caller may be racing on, not an unavailable backend;
        ``ProgrammingError`` and ``InterfaceError`` are bugs in our SQL and stay loud. A string that
        cannot be bound (a lone surrogate the validators did not stop) is bad input."""
        with self._lock:
            if self._closed:
                raise EngineClosedError(f"the relational store at {str(self.path)!r} is closed ({operation})")
            try:
                yield self._conn
            except sqlite3.IntegrityError as exc:
                raise ConstraintConflict(f"SQLite {operation}: {exc}") from exc
            except (sqlite3.ProgrammingError, sqlite3.InterfaceError):
                raise
            except sqlite3.DatabaseError as exc:  # OperationalError, DataError, plain DatabaseError, ...
                raise BackendUnavailableError(f"SQLite {operation} failed at {str(self.path)!r}: {exc}") from exc
            except UnicodeEncodeError as exc:
                raise InvalidInputError(f"a value for SQLite {operation} is not valid Unicode: {exc}") from exc

    def execute(self, statement: str, params: Sequence[Any] = ()) -> Executed:
        with self._connection("execute") as conn:
            return conn.execute(self.dialect.sql(statement), params)

    def executemany(self, statement: str, rows: Iterable[Sequence[Any]]) -> None:
        """Outside a transaction the rows are written in one of their own: in autocommit mode each row
        would be a transaction with its own fsync (``synchronous=FULL``), 4 ms a row here, which made
        settling the outbox of a 2,000-event ``record_many`` take longer than everything else."""
        with self._lock:
            if self._conn.in_transaction:
                with self._connection("write") as conn:
                    conn.executemany(self.dialect.sql(statement), rows)
                return
            with self.transaction(), self._connection("write") as conn:
                conn.executemany(self.dialect.sql(statement), rows)

    def query(self, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._connection("query") as conn:
            return conn.execute(self.dialect.sql(statement), params).fetchall()

    @contextmanager
    def transaction(self) -> Iterator[RelationalStore]:
        """One write transaction; commits on success, rolls back on any exception.

        A failed COMMIT (disk full, locked) can leave the transaction open; it is rolled back before the
        error is raised, so the connection is usable for the next write."""
        with self._lock:
            with self._connection("begin") as conn:
                conn.execute(self.dialect.begin_write)
            try:
                yield self
                with self._connection("commit") as conn:
                    conn.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise

    def _rollback(self) -> None:
        """Roll back what is open; a rollback that fails cannot hide the error that caused it."""
        if self._closed or not self._conn.in_transaction:
            return
        try:
            self._conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            log.warning("SQLite rollback failed at %s: %s", self.path, exc)

    def migrate(self) -> list[str]:
        applied: list[str] = []
        with self.transaction():
            self.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at {real} NOT NULL)"
            )
            done = {r[0] for r in self.query("SELECT name FROM schema_migrations")}
            for name, statements in MIGRATIONS:
                if name in done:
                    continue
                for statement in statements:  # a mapping holds each dialect's own text (or none for it)
                    text = statement if isinstance(statement, str) else statement.get(self.dialect.name)
                    if text:
                        self.execute(text)
                self.execute("INSERT INTO schema_migrations(name, applied_at) VALUES (?, ?)", (name, time.time()))
                applied.append(name)
        return applied

    def tables_with_column(self, column: str) -> list[str]:
        """The tables of the schema that have ``column``, read from the database's own catalogue, so a
        table added by a later migration is found without being listed anywhere."""
        return [
            r[0]
            for r in self.query(
                "SELECT m.name FROM sqlite_master AS m JOIN pragma_table_info(m.name) AS c "
                "WHERE m.type = 'table' AND c.name = ? ORDER BY m.name",
                (column,),
            )
        ]

    def dataset_id(self) -> str:
        """A random id created with the data set, the same for every process that opens it."""
        with self.transaction():
            rows = self.query("SELECT value FROM engine_meta WHERE key = 'dataset_id'")
            if rows:
                return str(rows[0][0])
            value = uuid.uuid4().hex
            self.execute("INSERT INTO engine_meta(key, value) VALUES ('dataset_id', ?)", (value,))
            return value

    def recorded_embedder(self) -> tuple[str, int] | None:
        """``(name, dimension)`` of the embedder the data set's vectors come from: the one recorded in
        ``engine_meta``, else (a data set from before it was recorded) the model holding most cached
        vectors, else ``None`` (nothing embedded yet)."""
        rows = self.query("SELECT value FROM engine_meta WHERE key = 'embedder'")
        if rows:
            recorded = json.loads(rows[0][0])
            return str(recorded["name"]), int(recorded["dim"])
        models = self.query(
            "SELECT model, LENGTH(vector), COUNT(*) AS n FROM embeddings GROUP BY model, LENGTH(vector) "
            "ORDER BY n DESC, model LIMIT 1"
        )
        return (str(models[0][0]), int(models[0][1]) // 4) if models else None

    def record_embedder(self, name: str, dim: int) -> None:
        """Note the data set's embedder; call inside a transaction."""
        self.execute(
            "INSERT INTO engine_meta(key, value) VALUES ('embedder', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (json.dumps({"name": name, "dim": int(dim)}, ensure_ascii=False),),
        )

    def index_noted(self, location: str) -> bool:
        """Whether :meth:`note_index` noted the index at ``location``."""
        return bool(self.query("SELECT 1 FROM engine_meta WHERE key = ?", (f"index:{location}",)))

    def note_index(self, location: str) -> None:
        """Note that the index at ``location`` (an embedded Chroma directory) holds this data set's
        marker, so that opening the engine again need not open the index to look at it."""
        with self.transaction():
            self.execute("INSERT INTO engine_meta(key, value) VALUES (?, '1') ON CONFLICT(key) DO NOTHING",
                         (f"index:{location}",))

    def drop_all_embeddings(self) -> None:
        """Forget every cached vector (the data set moves to another embedder)."""
        self.execute("DELETE FROM embeddings")

    def schema_version(self) -> list[str]:
        return [r[0] for r in self.query("SELECT name FROM schema_migrations ORDER BY name")]

    # -- memories --------------------------------------------------------------------------------
    def insert_memories(self, memories: Sequence[Memory], external_ids: Sequence[str | None] | None = None) -> None:
        placeholders = ", ".join("?" * _N_COLUMNS)
        keys = external_ids if external_ids is not None else [m.source_id for m in memories]
        self.executemany(
            f"INSERT INTO memories ({_COLUMNS}) VALUES ({placeholders})",
            [_row(m, key) for m, key in zip(memories, keys, strict=True)],
        )

    def update_memory(self, m: Memory) -> None:
        """Rewrite every column but ``id`` and ``external_id``."""
        columns = [c.strip() for c in _COLUMNS.split(",")][1:-1]
        sets = ", ".join(f"{c} = ?" for c in columns)
        self.execute(f"UPDATE memories SET {sets} WHERE id = ?", (*_row(m)[1:-1], m.id))

    def by_external_ids(self, namespace: str, layer: str, keys: Sequence[str]) -> dict[str, Memory]:
        found: dict[str, Memory] = {}
        for start in range(0, len(keys), 500):
            chunk = list(keys[start : start + 500])
            marks = ", ".join("?" * len(chunk))
            for r in self.query(
                f"SELECT {_COLUMNS} FROM memories WHERE namespace = ? AND layer = ? AND external_id IN ({marks})",
                [namespace, layer, *chunk],
            ):
                found[r[-1]] = _memory(r)
        return found

    def get(self, memory_id: str) -> Memory | None:
        rows = self.query(f"SELECT {_COLUMNS} FROM memories WHERE id = ?", (memory_id,))
        return _memory(rows[0]) if rows else None

    def get_many(self, ids: Iterable[str]) -> dict[str, Memory]:
        ids = list(dict.fromkeys(ids))
        found: dict[str, Memory] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for r in self.query(f"SELECT {_COLUMNS} FROM memories WHERE id IN ({marks})", chunk):
                found[r[0]] = _memory(r)
        return found

    def get_many_in(self, namespace: str, ids: Iterable[str]) -> dict[str, Memory]:
        """Like :meth:`get_many`, limited to one namespace in SQL: every read that serves a namespace
        resolves ids through this, so an id of another tenant (or a caller string equal to one) finds
        nothing."""
        ids = list(dict.fromkeys(ids))
        found: dict[str, Memory] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for r in self.query(
                # look rows up by id; SQLite otherwise walks a namespace index (O(namespace))
                f"SELECT {_COLUMNS} FROM memories WHERE {{noindex}}namespace = ? AND id IN ({marks})",
                [namespace, *chunk],
            ):
                found[r[0]] = _memory(r)
        return found

    def activations_in(self, namespace: str, ids: Iterable[str]) -> dict[str, tuple[float, float, int]]:
        """``(activation log base, its reference time, access count)`` of each id of ``namespace``: the
        columns every reinforcement rewrites and the change log does not watch, so they are all that a
        current recall snapshot's rows may lack (``get_many_in`` reads whole rows)."""
        ids = list(dict.fromkeys(ids))
        found: dict[str, tuple[float, float, int]] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for r in self.query(
                "SELECT id, act_log_base, act_ref_time, access_count FROM memories "
                f"WHERE {{noindex}}namespace = ? AND id IN ({marks})",
                [namespace, *chunk],
            ):
                found[r[0]] = (float(r[1]), float(r[2]), int(r[3]))
        return found

    def select(self, where: str = "1=1", params: Sequence[Any] = (), *, order: str = "seq",
               limit: int | None = None) -> list[Memory]:
        """Memories matching a WHERE clause written against the ``memories`` columns: for this module and
        for tests that look at rows. The engine calls the named operations below (a test keeps it so)."""
        statement = f"SELECT {_COLUMNS} FROM memories WHERE {where} ORDER BY {order}"
        if limit is not None:
            statement += f" LIMIT {int(limit)}"
        return [_memory(r) for r in self.query(statement, params)]

    def superseded_by_any(self, namespace: str, successor_ids: Sequence[str]) -> list[Memory]:
        """The namespace's superseded memories whose successor is one of ``successor_ids``, oldest first:
        the conflicts a recall shows beside the memories it injects."""
        ids = list(dict.fromkeys(successor_ids))
        found: list[Memory] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            found += self.select(
                f"namespace = ? AND superseded_by IN ({', '.join('?' * len(chunk))}) AND status = ?",
                [namespace, *chunk, Status.SUPERSEDED.value],
            )
        return found

    def expired(self, namespace: str | None, at: float) -> list[Memory]:
        """Active memories (of one namespace, or all) whose ``expires_at`` has passed at ``at``."""
        scope, params = _scope(namespace)
        return self.select(
            f"{scope}status = ? AND expires_at IS NOT NULL AND expires_at <= ?", [*params, Status.ACTIVE.value, at]
        )

    def fading(
        self, namespace: str | None, layer: str, *, rate: float, at: float, cold_log: float, idle_s: float,
        limit: int | None = None,
    ) -> list[Memory]:
        """Active memories of a layer (of one namespace, or all) that ``sweep`` makes cold at time ``at``
        (activation below ``cold_log`` and idle ``idle_s``), lowest activation first: what the memory is
        about to forget. The sweep and the inspector's "fading" panel both ask this."""
        scope, params = _scope(namespace)
        return self.select(
            f"{scope}layer = ? AND status = ? AND act_log_base - ? * (? - act_ref_time) < ? AND act_ref_time <= ?",
            [*params, layer, Status.ACTIVE.value, rate, at, cold_log, at - idle_s],
            order=f"act_log_base - {float(rate)!r} * ({float(at)!r} - act_ref_time), seq",
            limit=limit,
        )

    def cold_since(self, namespace: str | None, before: float) -> list[Memory]:
        """Cold memories (of one namespace, or all) last used at or before ``before``: what the sweep
        archives."""
        scope, params = _scope(namespace)
        return self.select(f"{scope}status = ? AND act_ref_time <= ?", [*params, Status.COLD.value, before])

    def find_memories(
        self, namespace: str, *, session_id: str | None = None, layer: str | Sequence[str] | None = None,
        kind: str | None = None,
        status: str | None = None, external_ids: Sequence[str] | None = None, created_after: float | None = None,
        created_before: float | None = None, metadata: Mapping[str, Any] | None = None, limit: int | None = None,
        offset: int = 0,
    ) -> list[Memory]:
        """``find``: the namespace's memories matching exact attributes, created in ``[created_after,
        created_before)``, whose metadata holds every ``metadata`` item, in write order, a page of
        ``limit`` after skipping ``offset``; ``layer`` may name several. One statement, so a page is
        filtered and cut in the database."""
        where: list[str] = ["namespace = ?"]
        params: list[Any] = [namespace]
        if layer is not None and not isinstance(layer, str):
            if not layer:
                return []
            where.append(f"layer IN ({', '.join('?' * len(layer))})")
            params += list(layer)
            layer = None
        for column, value in (("session_id", session_id), ("layer", layer), ("kind", kind), ("status", status)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if created_after is not None:
            where.append("created_at >= ?")
            params.append(created_after)
        if created_before is not None:
            where.append("created_at < ?")
            params.append(created_before)
        if metadata:
            where.append("{metadata_contains}")
            params.append(json.dumps(dict(metadata), ensure_ascii=False))
        if external_ids is not None:
            if not external_ids:
                return []
            where.append(f"external_id IN ({', '.join('?' * len(external_ids))})")
            params += list(external_ids)
        statement = f"SELECT {_COLUMNS} FROM memories WHERE {' AND '.join(where)} ORDER BY seq"
        if limit is not None or offset:
            statement += " LIMIT ? OFFSET ?"
            params += [_NO_LIMIT if limit is None else int(limit), int(offset)]
        return [_memory(r) for r in self.query(statement, params)]

    # -- edit history (``update`` / ``history`` / ``recall(as_of=...)``) -----------------------------
    def add_history(self, memory_id: str, namespace: str, old: str, new: str, at: float, model: str | None,
                    vector: np.ndarray | None) -> None:
        """Note one edit; call inside the edit's transaction. ``vector`` is the old text's cached vector
        (``model``'s), kept so a point-in-time recall finds the old text without embedding it again."""
        blob = None if vector is None else np.asarray(vector, dtype=np.float32).tobytes()
        self.execute(
            "INSERT INTO memory_history(memory_id, namespace, old_content, new_content, changed_at, model, old_vector) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (memory_id, namespace, old, new, at, None if vector is None else model, blob),
        )

    def history(self, memory_id: str) -> list[tuple[str, str, float]]:
        """``(old text, new text, time)`` of every edit of the memory, oldest first."""
        return [
            (str(r[0]), str(r[1]), float(r[2]))
            for r in self.query(
                "SELECT old_content, new_content, changed_at FROM memory_history WHERE memory_id = ? ORDER BY seq",
                (memory_id,),
            )
        ]

    def namespace_history(self, namespace: str) -> list[tuple[str, str, str, float]]:
        """``(memory id, old text, new text, time)`` of every edit in the namespace, in order (export)."""
        return [
            (str(r[0]), str(r[1]), str(r[2]), float(r[3]))
            for r in self.query(
                "SELECT memory_id, old_content, new_content, changed_at FROM memory_history WHERE namespace = ? "
                "ORDER BY seq",
                (namespace,),
            )
        ]

    def texts_as_of(self, namespace: str, at: float, model: str) -> dict[str, tuple[str, np.ndarray | None]]:
        """``id -> (text, its vector or None)`` of the namespace's memories edited after ``at``: the text
        each had at ``at`` is the one its first later edit replaced. The vector is the one kept with the
        edit when ``model`` computed it."""
        found: dict[str, tuple[str, np.ndarray | None]] = {}
        for mid, old, kept_model, blob in self.query(
            "SELECT memory_id, old_content, model, old_vector FROM memory_history WHERE namespace = ? "
            "AND changed_at > ? ORDER BY seq",
            (namespace, at),
        ):
            if mid not in found:
                vector = np.frombuffer(blob, dtype=np.float32) if blob is not None and kept_model == model else None
                found[mid] = (str(old), vector)
        return found

    def snapshot_as_of(self, namespace: str, statuses: Sequence[str], layers: Sequence[str], at: float) -> list[Memory]:
        """What :meth:`snapshot` held at time ``at``: indexed memories created by then with one of
        ``statuses`` now, or superseded only after ``at`` (the time of the first ``supersedes`` edge onto
        them; ``updated_at`` for a superseded memory that has none), in write order."""
        superseded_at = (
            "COALESCE((SELECT MIN(e.created_at) FROM edges AS e WHERE e.dst = memories.id AND e.kind = ?), "
            "updated_at)"
        )
        where = (
            f"namespace = ? AND indexed = 1 AND layer IN ({', '.join('?' * len(layers))}) AND created_at <= ? "
            f"AND (status IN ({', '.join('?' * len(statuses))}) OR (status = ? AND {superseded_at} > ?))"
        )
        params = [namespace, *layers, at, *statuses, Status.SUPERSEDED.value, EdgeKind.SUPERSEDES.value, at]
        return self.select(where, params, order="seq")

    def session_tail(self, namespace: str, session_id: str | None, limit: int, *,
                     kind: Kind | None = Kind.TURN) -> list[Memory]:
        """The session's latest episodes of ``kind`` (``None``: any), newest first, by the
        ``(namespace, session_id, seq)`` index; ``session_id=None``: the episodes recorded with no session."""
        session = "session_id IS NULL" if session_id is None else "session_id = ?"
        params: list[Any] = [namespace, *([] if session_id is None else [session_id]), Layer.EPISODIC.value]
        where = f"namespace = ? AND {session} AND layer = ?"
        if kind is not None:
            where += " AND kind = ?"
            params.append(kind.value)
        return self.select(where, params, order="seq DESC", limit=limit)

    def delete_memories(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ", ".join("?" * len(chunk))
            self.execute(f"DELETE FROM embeddings WHERE memory_id IN ({marks})", chunk)
            self.execute(f"DELETE FROM edges WHERE src IN ({marks}) OR dst IN ({marks})", chunk + chunk)
            self.execute(f"DELETE FROM memory_history WHERE memory_id IN ({marks})", chunk)
            self.execute(f"DELETE FROM memory_demotions WHERE memory_id IN ({marks})", chunk)
            self.execute(f"DELETE FROM memories WHERE id IN ({marks})", chunk)

    def activations(self, ids: Sequence[str]) -> list[tuple[str, str, str, float, float]]:
        """``(id, namespace, layer, act_log_base, act_ref_time)`` of the stored ones among ``ids``."""
        found: list[tuple[str, str, str, float, float]] = []
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ", ".join("?" * len(chunk))
            found += [
                (r[0], r[1], r[2], float(r[3]), float(r[4]))
                for r in self.query(
                    f"SELECT id, namespace, layer, act_log_base, act_ref_time FROM memories WHERE id IN ({marks})",
                    chunk,
                )
            ]
        return found

    def reinforce(self, rows: Sequence[tuple[float, float, int, str]]) -> None:
        """New activations ``(act_log_base, act_ref_time, added accesses, id)``; call inside a transaction."""
        self.executemany(
            "UPDATE memories SET act_log_base = ?, act_ref_time = ?, access_count = access_count + ? WHERE id = ?",
            rows,
        )

    def indexed_ids(self, namespace: str, layer: str, *, order: str = "seq", limit: int | None = None) -> list[str]:
        """Ids of the active indexed memories of a namespace's layer — what its indexes should hold —
        in write order (``order="seq"``), newest first (``"newest"``) or a random draw (``"random"``)."""
        orders = {"seq": "seq", "newest": "id DESC", "random": "RANDOM()"}  # ULIDs sort by time
        statement = (
            "SELECT id FROM memories WHERE namespace = ? AND layer = ? AND status = ? AND indexed = 1 "
            f"ORDER BY {orders[order]}"
        )
        params: list[Any] = [namespace, layer, Status.ACTIVE.value]
        if limit is not None:
            statement += " LIMIT ?"
            params.append(int(limit))
        return [r[0] for r in self.query(statement, params)]

    def by_activation_key(
        self, namespace: str, layer: str, rate: float, epoch: float, limit: int
    ) -> list[tuple[str, float]]:
        """``(id, key)`` of the ``limit`` active indexed memories of a layer with the highest activation
        key ``act_log_base + rate * (act_ref_time - epoch)``: the activation index's order, computed from
        the rows (the degraded activation channel)."""
        return [
            (r[0], float(r[1]))
            for r in self.query(
                "SELECT id, act_log_base + ? * (act_ref_time - ?) AS k FROM memories WHERE namespace = ? AND layer = ? "
                "AND status = ? AND indexed = 1 ORDER BY k DESC, id DESC LIMIT ?",
                (rate, epoch, namespace, layer, Status.ACTIVE.value, int(limit)),
            )
        ]

    def _snapshot_where(self, statuses: Sequence[str], layers: Sequence[str]) -> str:
        return (
            f"namespace = ? AND indexed = 1 AND status IN ({', '.join('?' * len(statuses))}) "
            f"AND layer IN ({', '.join('?' * len(layers))})"
        )

    def snapshot(self, namespace: str, statuses: Sequence[str], layers: Sequence[str]) -> tuple[list[Memory], int]:
        """The namespace's indexed memories with one of ``statuses`` in ``layers``, in write order, and
        the last ``seq`` among them (0 for none): a snapshot grows from there."""
        where, params = self._snapshot_where(statuses, layers), [namespace, *statuses, *layers]
        memories = self.select(where, params, order="seq")
        return memories, int(self.query(f"SELECT MAX(seq) FROM memories WHERE {where}", params)[0][0] or 0)

    def snapshot_rows(
        self, namespace: str, statuses: Sequence[str], layers: Sequence[str], ids: Sequence[str]
    ) -> list[Memory]:
        """Those of ``ids`` that :meth:`snapshot` would hold, in write order, looked up by id rather
        than by walking the namespace's index."""
        where = "{noindex}" + self._snapshot_where(statuses, layers)
        rows: list[Memory] = []
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            rows += self.select(f"{where} AND id IN ({', '.join('?' * len(chunk))})",
                                [namespace, *statuses, *layers, *chunk], order="seq")
        return rows

    def latest_change(self, namespace: str) -> int:
        """The namespace's latest change number in the memory change log (``store/changes.py``; 0 when
        nothing was ever written): one index seek."""
        row = self.query("SELECT MAX(seq) FROM memory_changes WHERE namespace = ?", (namespace,))
        return int(row[0][0] or 0) if row else 0

    def changed_since(self, namespace: str, after: int) -> tuple[int, list[tuple[str, int | None]]]:
        """``(latest change number, [(memory id, its seq in memories or None when gone)])`` of the
        memories of ``namespace`` changed after change number ``after``; a deletion appears as
        ``changes.DELETED``."""
        rows = self.query(
            "SELECT c.seq, c.memory_id, m.seq FROM memory_changes c LEFT JOIN memories m ON m.id = c.memory_id "
            "WHERE c.namespace = ? AND c.seq > ? ORDER BY c.seq",
            (namespace, int(after)),
        )
        latest = max((int(r[0]) for r in rows), default=int(after))
        return latest, [(str(r[1]), None if r[2] is None else int(r[2])) for r in rows]

    def has_status(self, namespace: str, status: str) -> bool:
        """Whether any memory of the namespace has ``status``."""
        rows = self.query("SELECT 1 FROM memories WHERE namespace = ? AND status = ? LIMIT 1", (namespace, status))
        return bool(rows)

    def memory_counts(self, namespace: str | None = None) -> list[tuple[str, str, str, bool, int]]:
        """``(namespace, layer, status, indexed, count)`` of every group of memories (of one namespace)."""
        where, params = ("namespace = ?", [namespace]) if namespace is not None else ("1=1", [])
        return [
            (r[0], r[1], r[2], bool(r[3]), int(r[4]))
            for r in self.query(
                f"SELECT namespace, layer, status, indexed, COUNT(*) FROM memories WHERE {where} "
                "GROUP BY namespace, layer, status, indexed",
                params,
            )
        ]

    def external_ids(self, ids: Sequence[str]) -> dict[str, str | None]:
        """``id -> external_id`` (the caller's ``source_id``) of the stored ones among ``ids``."""
        found: dict[str, str | None] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ", ".join("?" * len(chunk))
            for mid, ext in self.query(f"SELECT id, external_id FROM memories WHERE id IN ({marks})", chunk):
                found[mid] = ext
        return found

    def ids_in(self, namespace: str) -> list[str]:
        """Every memory id of the namespace, in write order."""
        return [r[0] for r in self.query("SELECT id FROM memories WHERE namespace = ? ORDER BY seq", (namespace,))]

    def namespaces(self) -> list[str]:
        return [r[0] for r in self.query("SELECT DISTINCT namespace FROM memories ORDER BY namespace")]

    def active_fingerprints(self, namespace: str, fingerprints: Sequence[str]) -> set[str]:
        """Which of ``fingerprints`` an active memory of the namespace has (the namespace's fingerprint
        index): a fact promoted into a shared namespace that holds it already is not written twice."""
        if not fingerprints:
            return set()
        marks = ", ".join("?" for _ in fingerprints)
        rows = self.query(f"SELECT DISTINCT fingerprint FROM memories WHERE namespace = ? AND status = 'active' "
                          f"AND fingerprint IN ({marks})", (namespace, *fingerprints))
        return {str(r[0]) for r in rows}

    def has_namespace(self, namespace: str) -> bool:
        return bool(self.query("SELECT 1 FROM memories WHERE namespace = ? LIMIT 1", (namespace,)))

    def namespaces_under(self, root: str, tables: Sequence[str] = ("memories",)) -> list[str]:
        """The namespaces of ``tables`` in ``root``'s subtree (``root`` itself and ``root/…``; see
        ``hindsight_core/namespaces.py``), root first. A code-point range over the namespace index: one
        seek per table, and ``user:anabel`` can never fall in the range of ``user:ana/``."""
        low = child_prefix(root)
        high = low[:-1] + chr(ord(low[-1]) + 1)  # the first name past every "root/…"
        found: set[str] = set()
        for table in tables:
            found |= {
                r[0]
                for r in self.query(
                    f"SELECT DISTINCT namespace FROM {table} WHERE namespace = ? "
                    "OR (namespace{bytewise} >= ? AND namespace{bytewise} < ?)",
                    (root, low, high),
                )
            }
        return under(found, root)  # the range is exact; this re-check keeps the wall if it ever is not

    # -- edges -----------------------------------------------------------------------------------
    def add_edges(self, edges: Iterable[Edge]) -> None:
        self.executemany(
            "INSERT INTO edges(src, dst, kind, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [(e.src, e.dst, e.kind.value, to_ts(e.created_at)) for e in edges],
        )

    def edges(self, memory_id: str, *, kind: EdgeKind | None = None, direction: str = "out") -> list[Edge]:
        column = "src" if direction == "out" else "dst"
        statement = f"SELECT src, dst, kind, created_at FROM edges WHERE {column} = ?"
        params: list[Any] = [memory_id]
        if kind is not None:
            statement += " AND kind = ?"
            params.append(kind.value)
        return [
            Edge(src=r[0], dst=r[1], kind=EdgeKind(r[2]), created_at=from_ts(r[3]))
            for r in self.query(statement, params)
        ]

    # -- embeddings ------------------------------------------------------------------------------
    def put_embeddings(self, model: str, vectors: dict[str, np.ndarray]) -> None:
        """Cache vectors of stored memories only: a vector computed for a memory erased meanwhile (a
        recall snapshot or another process still held it) must not bring the erased content back."""
        self.executemany(
            "INSERT INTO embeddings(memory_id, model, vector) SELECT ?, ?, ? "
            "WHERE EXISTS (SELECT 1 FROM memories WHERE id = ?) "
            "ON CONFLICT(memory_id) DO UPDATE SET model = excluded.model, vector = excluded.vector",
            [(mid, model, np.asarray(v, dtype=np.float32).tobytes(), mid) for mid, v in vectors.items()],
        )

    def get_embeddings(self, model: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ", ".join("?" * len(chunk))
            for mid, blob in self.query(
                f"SELECT memory_id, vector FROM embeddings WHERE model = ? AND memory_id IN ({marks})",
                [model, *chunk],
            ):
                found[mid] = np.frombuffer(blob, dtype=np.float32)
        return found

    # -- outbox ----------------------------------------------------------------------------------
    def enqueue(
        self, items: Iterable[tuple[str | None, str, str | None, str, str]], now: float,
        claims: Mapping[str, tuple[str, float]] | None = None,
    ) -> None:
        """Outbox rows ``(memory_id, namespace, layer, target, op)``; call inside the write's transaction.

        A memory has at most one pending sync row per target (a row means "bring it in step", whatever
        happened before): new work coalesces into the existing row, un-parks it, clears its failure count
        and bumps its version so a drain in flight does not delete it. ``claims`` maps a target to
        ``(owner, claimed_until)``: the writer claims its sync rows in the same transaction, so applying them
        right after the commit needs no second write; a row another owner's live claim holds keeps
        that claim (the holder applies the newer version after its own, never concurrently)."""
        claims = claims or {}
        self.executemany(
            "INSERT INTO outbox(memory_id, namespace, layer, target, op, created_at, claimed_by, claimed_until) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(memory_id, target) WHERE op = 'sync' AND memory_id IS NOT NULL DO UPDATE SET "
            "namespace = excluded.namespace, layer = excluded.layer, attempts = 0, last_error = NULL, "
            "parked = 0, version = outbox.version + 1, "
            f"claimed_by = CASE WHEN {_TAKEOVER} THEN excluded.claimed_by ELSE outbox.claimed_by END, "
            f"claimed_until = CASE WHEN {_TAKEOVER} THEN excluded.claimed_until ELSE outbox.claimed_until END",
            [(*item, now, *(claims.get(item[3], (None, None)) if item[4] == 'sync' else (None, None)))
             for item in items],
        )

    def pending(
        self, *, memory_ids: Sequence[str] | None = None, target: str | None = None, limit: int = 500,
        after: int = 0,
    ) -> list[OutboxItem]:
        """Outbox rows in order, parked ones excepted; all rows of ``memory_ids`` when given, else the first
        ``limit`` with an id above ``after`` (a drain's cursor, so rows that failed are not re-read at once)."""
        where, params = ("target = ? AND parked = 0", [target]) if target else ("parked = 0", [])
        rows = self._outbox_rows("id, memory_id, namespace, layer, target, op, attempts, version", where, params,
                                 memory_ids, after, limit)
        return [OutboxItem(r) for r in rows]

    def _outbox_rows(
        self, columns: str, where: str, params: list[Any], memory_ids: Sequence[str] | None, after: int, limit: int
    ) -> list[tuple[Any, ...]]:
        """Rows matching ``where``: all of ``memory_ids`` when given, else the first ``limit`` above ``after``."""
        if memory_ids is None:
            return self.query(
                f"SELECT {columns} FROM outbox WHERE {where} AND id > ? ORDER BY id LIMIT {int(limit)}",
                [*params, int(after)],
            )
        rows: list[tuple[Any, ...]] = []
        for start in range(0, len(memory_ids), 500):
            chunk = list(memory_ids[start : start + 500])
            marks = ", ".join("?" * len(chunk))
            rows += self.query(
                f"SELECT {columns} FROM outbox WHERE {where} AND memory_id IN ({marks}) ORDER BY id",
                [*params, *chunk],
            )
        return rows

    def claim(
        self, owner: str, now: float, until: float, *, target: str, memory_ids: Sequence[str] | None = None,
        after: int = 0, limit: int = 500,
    ) -> tuple[list[OutboxItem], int | None]:
        """Claim pending rows of ``target`` for ``owner`` until ``until``: the rows of ``memory_ids``, or
        the first ``limit`` with an id above ``after``. A row is claimable when nobody claims it, its
        claim expired before ``now`` (its applier died or gave up), or it is ``owner``'s already; rows
        under another owner's live claim are left to it. Returns the rows now ``owner``'s and the drain's
        next cursor (None when no row was left to look at).

        Rows the writer claimed in its own transaction (``enqueue(claims=...)``) are read, not written
        again: the per-write fast path costs one read. Otherwise the claim is one conditional UPDATE,
        atomic on both backends (the row lock on PostgreSQL, the writer lock on SQLite), so of two
        appliers racing for a row exactly one gets it."""
        columns = "id, memory_id, namespace, layer, target, op, attempts, version, claimed_by, claimed_until"
        claimable = f"target = ? AND parked = 0 AND {_CLAIMABLE}"
        rows = self._outbox_rows(columns, claimable, [target, now, owner], memory_ids, after, limit)
        if not rows:
            return [], None
        cursor = int(rows[-1][0])
        if all(r[8] == owner and r[9] is not None and r[9] >= now for r in rows):
            return [OutboxItem(r) for r in rows], cursor
        ids = [int(r[0]) for r in rows]
        claimed: list[OutboxItem] = []
        with self.transaction() as tx:
            for start in range(0, len(ids), 500):
                batch = ids[start : start + 500]
                marks = ", ".join("?" * len(batch))
                tx.execute(
                    f"UPDATE outbox SET claimed_by = ?, claimed_until = ? WHERE id IN ({marks}) AND {claimable}",
                    [owner, until, *batch, target, now, owner],
                )
                claimed += [OutboxItem(r) for r in tx.query(
                    f"SELECT {columns} FROM outbox WHERE id IN ({marks}) AND claimed_by = ? ORDER BY id",
                    [*batch, owner],
                )]
        return claimed, cursor

    def release(self, outbox_ids: Sequence[int], owner: str) -> int:
        """Give up ``owner``'s claims on rows it leaves pending; returns how many it held."""
        released = 0
        for start in range(0, len(outbox_ids), 500):
            chunk = list(outbox_ids[start : start + 500])
            marks = ", ".join("?" * len(chunk))
            released += self.execute(
                f"UPDATE outbox SET claimed_by = NULL, claimed_until = NULL WHERE id IN ({marks}) AND claimed_by = ?",
                [*chunk, owner],
            ).rowcount
        return released

    def release_claims(self, owner: str | None = None) -> int:
        """End ``owner``'s claims on outbox rows (an applier closing), or every claim, for an engine that
        knows it is the only applier (it owns the data directory): the claims are a dead process's.
        Returns how many there were."""
        if owner is None:
            return int(self.execute(
                "UPDATE outbox SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by IS NOT NULL").rowcount)
        return int(self.execute(
            "UPDATE outbox SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by = ?", (owner,)).rowcount)

    def pending_count(self) -> int:
        """Rows still to apply (parked rows are counted by :meth:`parked`)."""
        return int(self.query("SELECT COUNT(*) FROM outbox WHERE parked = 0")[0][0])

    def parked(self) -> list[tuple[int, str | None, str, str, int, str | None]]:
        """Parked rows ``(id, memory_id, target, op, attempts, last_error)``: work that failed on its own
        too often and waits for ``reconcile()``."""
        return [
            (r[0], r[1], r[2], r[3], int(r[4]), r[5])
            for r in self.query(
                "SELECT id, memory_id, target, op, attempts, last_error FROM outbox WHERE parked = 1 ORDER BY id"
            )
        ]

    def unpark(self) -> int:
        """Give every parked row a fresh set of attempts; returns how many."""
        return int(self.execute("UPDATE outbox SET parked = 0, attempts = 0 WHERE parked = 1").rowcount)

    def settle(self, items: Sequence[OutboxItem], owner: str | None = None) -> int:
        """Delete applied rows, unless newer work was coalesced into one since it was read; such a row
        stays pending and ``owner``'s claim on it is given up (so any applier takes the newer work).
        Returns how many rows stayed."""
        self.executemany("DELETE FROM outbox WHERE id = ? AND version = ?", [(i.id, i.version) for i in items])
        if owner is None or not items:
            return 0
        ids = [i.id for i in items]
        kept: list[int] = []
        for start in range(0, len(ids), 500):  # a read: the common case (nothing kept) writes nothing more
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            kept += [int(r[0]) for r in self.query(
                f"SELECT id FROM outbox WHERE id IN ({marks}) AND claimed_by = ?", [*chunk, owner])]
        if kept:
            self.release(kept, owner)
        return len(kept)

    def charge(self, items: Sequence[OutboxItem], error: str, max_attempts: int) -> int:
        """Count one failed attempt for rows that failed on their own; a row reaching ``max_attempts`` is
        parked. The rows' claims end: the next attempt is anyone's. Returns how many were parked."""
        with self._lock:
            self.executemany(
                "UPDATE outbox SET attempts = attempts + 1, last_error = ?, claimed_by = NULL, claimed_until = NULL, "
                "parked = CASE WHEN attempts + 1 >= ? THEN 1 ELSE 0 END WHERE id = ? AND version = ?",
                [(error[:2000], int(max_attempts), i.id, i.version) for i in items],
            )
            marks = ", ".join("?" * len(items)) or "NULL"
            ids = [i.id for i in items]
            rows = self.query(f"SELECT COUNT(*) FROM outbox WHERE parked = 1 AND id IN ({marks})", ids)
            return int(rows[0][0])

    def note_error(self, outbox_ids: Sequence[int], error: str, owner: str | None = None) -> None:
        """Record the error of an unreachable target without charging an attempt: the rows are not at fault.
        ``owner``'s claims on them end, so whichever process reaches the target first drains them."""
        for start in range(0, len(outbox_ids), 500):
            chunk = list(outbox_ids[start : start + 500])
            marks = ", ".join("?" * len(chunk))
            self.execute(
                "UPDATE outbox SET last_error = ?, "
                "claimed_by = CASE WHEN claimed_by = ? THEN NULL ELSE claimed_by END, "
                "claimed_until = CASE WHEN claimed_by = ? THEN NULL ELSE claimed_until END "
                f"WHERE id IN ({marks})",
                [error[:2000], owner, owner, *chunk],
            )

    # -- inspector reads (hindsight_core/ui) -----------------------------------------------------
    def search_memories(
        self, namespace: str, *, text: str | None = None, layer: str | None = None, status: str | None = None,
        limit: int = 200,
    ) -> list[Memory]:
        """A namespace's memories whose content contains ``text`` (case-insensitive for ASCII), newest
        first: what an operator types to find one memory, with no embedding and no side effect."""
        where, params = ["namespace = ?"], [namespace]
        if text:
            escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            where.append("content LIKE ? ESCAPE '\\'")
            params.append(f"%{escaped}%")
        for column, value in (("layer", layer), ("status", status)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        return self.select(" AND ".join(where), params, order="seq DESC", limit=limit)

    def injections(self, namespace: str, memory_id: str) -> list[tuple[float, float]]:
        """``(time, relevance)`` of each logged recall that injected the memory, oldest first; relevance
        is its score over the best score of that recall, what reinforcement adds (``recall/log.py``)."""
        found: list[tuple[float, float]] = []
        for at, injected, scores in self.query(
            "SELECT at, injected, scores FROM recall_log WHERE namespace = ? AND injected LIKE ? ORDER BY at, id",
            (namespace, f'%"{memory_id}"%'),
        ):
            if memory_id not in json.loads(injected):
                continue
            values: dict[str, float] = json.loads(scores)
            top = max(values.values(), default=1.0) or 1.0
            found.append((float(at), float(values.get(memory_id, top)) / top))
        return found

    # -- export / import of a namespace ------------------------------------------------------------
    def namespace_edges(self, namespace: str) -> list[Edge]:
        """Every edge touching a memory of the namespace (edges never cross namespaces), oldest first."""
        return [
            Edge(src=r[0], dst=r[1], kind=EdgeKind(r[2]), created_at=from_ts(r[3]))
            for r in self.query(
                "SELECT src, dst, kind, created_at FROM edges WHERE src IN (SELECT id FROM memories WHERE "
                "namespace = ?) OR dst IN (SELECT id FROM memories WHERE namespace = ?) "
                "ORDER BY created_at, src, dst, kind",
                (namespace, namespace),
            )
        ]

    def transcripts_of(self, namespace: str) -> list[tuple[str, float, float, list[str]]]:
        """The namespace's transcripts ``(key, created_at, updated_at, encoded entries)`` in creation order."""
        out: list[tuple[str, float, float, list[str]]] = []
        for key, created, updated in self.query(
            "SELECT tkey, created_at, updated_at FROM transcripts WHERE namespace = ? ORDER BY seq", (namespace,)
        ):
            entries = self.query(
                "SELECT entry FROM transcript_entries WHERE namespace = ? AND tkey = ? ORDER BY pos",
                (namespace, key),
            )
            out.append((key, float(created), float(updated), [r[0] for r in entries]))
        return out

    def put_transcript(self, namespace: str, key: str, created_at: float, updated_at: float,
                       entries: Sequence[str]) -> bool:
        """Insert a whole transcript unless the key exists; returns whether it was inserted. Call inside
        a transaction."""
        if self.query("SELECT 1 FROM transcripts WHERE namespace = ? AND tkey = ?", (namespace, key)):
            return False
        self.execute(
            "INSERT INTO transcripts(namespace, tkey, created_at, updated_at) VALUES (?, ?, ?, ?)",
            (namespace, key, created_at, updated_at),
        )
        self.executemany(
            "INSERT INTO transcript_entries(namespace, tkey, pos, entry) VALUES (?, ?, ?, ?)",
            [(namespace, key, pos, entry) for pos, entry in enumerate(entries)],
        )
        return True

    def consolidated_of(self, namespace: str) -> list[tuple[str, float]]:
        """Episodes of the namespace already distilled ``(memory_id, consolidated_at)``."""
        return [
            (r[0], float(r[1]))
            for r in self.query(
                "SELECT memory_id, consolidated_at FROM consolidated_episodes WHERE namespace = ? "
                "ORDER BY consolidated_at, memory_id",
                (namespace,),
            )
        ]

    def mark_consolidated(self, namespace: str, rows: Sequence[tuple[str, float]]) -> None:
        """Mark imported episodes as distilled (no job: the export came from another data set)."""
        self.executemany(
            "INSERT INTO consolidated_episodes(memory_id, namespace, job_id, consolidated_at) VALUES (?, ?, NULL, ?) "
            "ON CONFLICT DO NOTHING",
            [(mid, namespace, at) for mid, at in rows],
        )

    def existing_ids(self, ids: Sequence[str]) -> dict[str, str]:
        """``id -> namespace`` for the ids that are stored (in any namespace)."""
        found: dict[str, str] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ", ".join("?" * len(chunk))
            for mid, ns in self.query(f"SELECT id, namespace FROM memories WHERE id IN ({marks})", chunk):
                found[mid] = ns
        return found

    def indexed_active_ids(self, namespace: str | None = None) -> list[tuple[str, str, str]]:
        """``(id, namespace, layer)`` of every memory the indexes should hold, in write order."""
        where, params = ("namespace = ? AND ", [namespace]) if namespace is not None else ("", [])
        return [
            (r[0], r[1], r[2])
            for r in self.query(
                f"SELECT id, namespace, layer FROM memories WHERE {where}status = ? AND indexed = 1 ORDER BY seq",
                [*params, Status.ACTIVE.value],
            )
        ]

    def drop_embeddings(self, ids: Sequence[str]) -> None:
        """Forget cached vectors so the next index sync embeds again with the current embedder."""
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ", ".join("?" * len(chunk))
            self.execute(f"DELETE FROM embeddings WHERE memory_id IN ({marks})", chunk)

    def latest(self, namespace: str, *, limit: int, layer: str | None = None, kind: str | None = None,
               status: str | None = None, session_id: str | None = None) -> list[Memory]:
        """The namespace's ``limit`` most recent memories matching exact attributes, in write order."""
        where, params = ["namespace = ?"], [namespace]
        for column, value in (("layer", layer), ("kind", kind), ("status", status), ("session_id", session_id)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        return self.select(" AND ".join(where), params, order="seq DESC", limit=limit)[::-1]


def memory_ids_among(store: RelationalStore, table: str, ids: Iterable[str], *, where: str = "") -> set[str]:
    """Which of ``ids`` have a row in ``table`` (that also meets ``where``), in chunks of 500: SQLite
    caps the parameters of one statement."""
    wanted = list(dict.fromkeys(ids))
    condition = f"{where} AND " if where else ""
    found: set[str] = set()
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        statement = f"SELECT memory_id FROM {table} WHERE {condition}memory_id IN ({marks})"
        found |= {str(r[0]) for r in store.query(statement, chunk)}
    return found
