"""The memory change log's schema: which memories of a namespace changed since a point, for any writer.

Recall keeps a per-namespace snapshot (``hindsight_core/recall/corpus.py``). Finding out whether it is
still current used to cost an aggregate over the whole namespace (139 ms at 100k memories), and a change
meant rebuilding it. SQLite triggers now note each memory inserted, deleted, or updated in a column the
snapshot reads, in the writer's own transaction, so another process's writes are seen too: "has the
namespace changed" is one index seek, and "what changed" is the rows after the snapshot's point."""

from __future__ import annotations

#: The columns whose change matters to recall's snapshot; activation and access counts, which every
#: reinforcement rewrites, are left out (recall reads them fresh for its candidates).
WATCHED_COLUMNS = (
    "namespace", "session_id", "layer", "kind", "role", "content", "occurred_at", "updated_at", "importance",
    "source_ids", "entities", "fingerprint", "status", "superseded_by", "expires_at", "indexed", "metadata",
    "external_id",
)


#: The memory id noted for a deletion: none (see the delete trigger).
DELETED = ""


def _note(row: str) -> str:
    # one row per memory: the previous note of the same memory goes, so the log stays as big as the table
    return (f"DELETE FROM memory_changes WHERE memory_id = {row}.id; "
            f"INSERT INTO memory_changes(namespace, memory_id) VALUES ({row}.namespace, {row}.id);")


_DELETE_NOTE = (
    "DELETE FROM memory_changes WHERE memory_id = OLD.id; "
    f"DELETE FROM memory_changes WHERE namespace = OLD.namespace AND memory_id = '{DELETED}'; "
    f"INSERT INTO memory_changes(namespace, memory_id) VALUES (OLD.namespace, '{DELETED}');"
)

#: SQLite and PostgreSQL write triggers differently (statement bodies against one trigger function); the
#: log they keep is the same. PostgreSQL's change numbers follow commit order because its store admits
#: one write transaction at a time (``store/postgres.py``).
CHANGE_LOG_STATEMENTS: list[str | dict[str, str]] = [
    "CREATE TABLE memory_changes (seq {pk}, namespace TEXT NOT NULL, memory_id TEXT NOT NULL)",
    "CREATE INDEX ix_memory_changes_ns ON memory_changes(namespace, seq)",
    "CREATE INDEX ix_memory_changes_memory ON memory_changes(memory_id)",
    {"sqlite": f"CREATE TRIGGER tr_memory_changes_insert AFTER INSERT ON memories BEGIN {_note('NEW')} END"},
    {"sqlite": f"CREATE TRIGGER tr_memory_changes_update AFTER UPDATE OF {', '.join(WATCHED_COLUMNS)} "
               f"ON memories BEGIN {_note('NEW')} END"},
    # a deletion keeps no trace of the memory (forget erases its id everywhere but the tombstones): the
    # namespace gets an anonymous marker, one at most, which makes a reader rebuild its snapshot
    {"sqlite": f"CREATE TRIGGER tr_memory_changes_delete AFTER DELETE ON memories BEGIN {_DELETE_NOTE} END"},
    {"postgresql": "CREATE FUNCTION hs_note_memory_change() RETURNS trigger AS $$ BEGIN "
                   f"IF TG_OP = 'DELETE' THEN {_DELETE_NOTE} RETURN OLD; END IF; {_note('NEW')} RETURN NEW; "
                   "END $$ LANGUAGE plpgsql"},
    {"postgresql": "CREATE TRIGGER tr_memory_changes_insert AFTER INSERT ON memories "
                   "FOR EACH ROW EXECUTE FUNCTION hs_note_memory_change()"},
    {"postgresql": f"CREATE TRIGGER tr_memory_changes_update AFTER UPDATE OF {', '.join(WATCHED_COLUMNS)} "
                   "ON memories FOR EACH ROW EXECUTE FUNCTION hs_note_memory_change()"},
    {"postgresql": "CREATE TRIGGER tr_memory_changes_delete AFTER DELETE ON memories "
                   "FOR EACH ROW EXECUTE FUNCTION hs_note_memory_change()"},
]
