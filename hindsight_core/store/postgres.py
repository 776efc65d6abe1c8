"""The relational store on PostgreSQL (psycopg 3 with a connection pool), for deployments where several
processes share one data set.

Every operation is the SQLite store's own (inherited: the same statements, through the
:data:`~hindsight_core.store.dialect.POSTGRES` slots) and the schema comes from the same migrations;
only the plumbing differs:

- Each thread takes a pooled connection per statement, or holds one for a whole transaction, so
  threads and processes run reads in parallel.
- A write transaction starts with a transaction-scoped advisory lock: writers take turns, as they do on
  SQLite (``BEGIN IMMEDIATE``). That is the isolation the store's read-modify-writes were written for
  (upsert by ``source_id``, transcript edits, leases, outbox coalescing, erase closures): each sees the
  latest committed state and none can lose another's update, under READ COMMITTED and without retry
  loops at every call site. The lock dies with the transaction, and with the connection of a process
  that died. Unique constraints still refuse a duplicate idempotency key (``ConstraintConflict``).
- Times are the caller's clock (the engine's), as on SQLite, so leases expire the same way on both.
- Driver errors map to the project's: a server that is down, restarting or refusing connections raises
  :class:`BackendUnavailableError`; a unique violation raises :class:`ConstraintConflict`; a value the
  server cannot take (a NUL character in text) raises :class:`InvalidInputError`."""

from __future__ import annotations

import logging
import threading
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from hindsight_core.errors import BackendUnavailableError, EngineClosedError, InvalidInputError
from hindsight_core.optional import require
from hindsight_core.store.dialect import POSTGRES
from hindsight_core.store.sql import ConstraintConflict, Executed, RelationalStore

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger("hindsight")

#: The advisory lock key of the store's write lock: one per database and schema (search_path), so two
#: data sets in one database do not wait on each other.
_LOCK_NAMESPACE = "hindsight-store-write"


class _Done:
    """The row count of a statement whose cursor is gone (its connection went back to the pool)."""

    __slots__ = ("rowcount",)

    def __init__(self, rowcount: int) -> None:
        self.rowcount = rowcount


class PostgresStore(RelationalStore):
    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 8, timeout_s: float = 10.0) -> None:
        require("psycopg", "postgres")
        pool_module = require("psycopg_pool", "postgres")
        self.url = url
        self.where = _redacted(url)  # what error messages name
        self.dialect = POSTGRES
        self._lock = threading.RLock()
        self._closed = False
        self._local = threading.local()
        self._timeout_s = timeout_s
        self._pool = pool_module.ConnectionPool(
            url, min_size=min_size, max_size=max_size, timeout=timeout_s, open=False,
            kwargs={"autocommit": True}, name="hindsight",
        )
        try:
            self._pool.open(wait=True, timeout=timeout_s)
        except Exception as exc:  # PoolTimeout, OperationalError: nothing answers at that URL
            self._pool.close()
            raise BackendUnavailableError(f"PostgreSQL open failed at {self.where!r}: {exc}") from exc
        with self._pooled("open") as conn:
            schema = conn.execute("SELECT current_schema()").fetchone()
        if schema is None or schema[0] is None:
            self._pool.close()
            raise BackendUnavailableError(f"PostgreSQL at {self.where!r} has no schema on its search_path")
        self._schema = str(schema[0])
        self._lock_key = zlib.crc32(f"{_LOCK_NAMESPACE}:{self._schema}".encode())
        self.migrate()

    # -- plumbing --------------------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._pool.close()

    @contextmanager
    def _pooled(self, operation: str) -> Iterator[psycopg.Connection[Any]]:
        """The thread's transaction connection, or a pooled one for this statement alone; driver errors
        become the project's (see the module docstring)."""
        import psycopg

        if self._closed:
            raise EngineClosedError(f"the relational store at {self.where!r} is closed ({operation})")
        held = getattr(self._local, "conn", None)
        try:
            if held is not None:
                yield held
            else:
                with self._pool.connection(timeout=self._timeout_s) as conn:
                    yield conn
        except psycopg.errors.IntegrityError as exc:
            raise ConstraintConflict(f"PostgreSQL {operation}: {exc}") from exc
        except (psycopg.errors.DataError, psycopg.errors.UntranslatableCharacter) as exc:
            raise InvalidInputError(f"a value for PostgreSQL {operation} was refused: {exc}") from exc
        except (psycopg.ProgrammingError, psycopg.InterfaceError):
            raise  # bugs in our SQL stay loud
        except (psycopg.Error, self._pool_errors()) as exc:  # OperationalError, pool timeout, ...
            raise BackendUnavailableError(f"PostgreSQL {operation} failed at {self.where!r}: {exc}") from exc
        except UnicodeEncodeError as exc:
            raise InvalidInputError(f"a value for PostgreSQL {operation} is not valid Unicode: {exc}") from exc

    @staticmethod
    def _pool_errors() -> type[Exception]:
        from psycopg_pool import PoolTimeout

        return PoolTimeout

    def execute(self, statement: str, params: Sequence[Any] = ()) -> Executed:
        with self._pooled("execute") as conn:
            cursor = conn.execute(self.dialect.sql(statement), list(params))
            return _Done(cursor.rowcount)

    def executemany(self, statement: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = [list(r) for r in rows]
        if not rows:
            return
        with self._pooled("write") as conn, conn.cursor() as cursor:
            cursor.executemany(self.dialect.sql(statement), rows)

    def query(self, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._pooled("query") as conn:
            return conn.execute(self.dialect.sql(statement), list(params)).fetchall()

    @contextmanager
    def transaction(self) -> Iterator[RelationalStore]:
        """One write transaction on a connection this thread holds until it ends; commits on success,
        rolls back on any exception (a failed COMMIT included)."""
        if getattr(self._local, "conn", None) is not None:
            raise RuntimeError("PostgresStore transactions do not nest")
        import psycopg

        with self._pooled("begin") as conn:  # a pooled connection, held for the whole transaction
            self._local.conn = conn
            try:
                conn.execute(self.dialect.begin_write)
                conn.execute("SELECT pg_advisory_xact_lock(%s)", [self._lock_key])
                yield self
                conn.execute("COMMIT")
            except BaseException:
                try:
                    if not conn.closed and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                        conn.execute("ROLLBACK")
                except psycopg.Error as exc:  # a rollback that fails cannot hide the error that caused it
                    log.warning("PostgreSQL rollback failed at %s: %s", self.where, exc)
                raise
            finally:
                self._local.conn = None

    def tables_with_column(self, column: str) -> list[str]:
        return [
            r[0]
            for r in self.query(
                "SELECT c.table_name FROM information_schema.columns AS c JOIN information_schema.tables AS t "
                "ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
                "WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' AND c.column_name = ? "
                "ORDER BY c.table_name",
                (column,),
            )
        ]


def _redacted(url: str) -> str:
    """The URL without its password, for messages and logs."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))
