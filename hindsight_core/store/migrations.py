"""Versioned schema migrations, applied in order and recorded by name in ``schema_migrations``.

Append new migrations at the end with a new name; never edit one that has shipped. A statement is
written once with the dialect's ``{…}`` slots (``store/dialect.py``); the rare one whose SQL differs
between backends beyond those (JSON functions, triggers) is a ``{dialect name: statement}`` mapping; a
dialect missing from it skips the statement."""

from __future__ import annotations

from hindsight_core.store.changes import CHANGE_LOG_STATEMENTS

Statement = str | dict[str, str]

MIGRATIONS: list[tuple[str, list[Statement]]] = [
    (
        "0001_core",
        [
            """CREATE TABLE memories (
                seq {pk},
                id TEXT NOT NULL UNIQUE,
                namespace TEXT NOT NULL,
                session_id TEXT,
                layer TEXT NOT NULL,
                kind TEXT NOT NULL,
                role TEXT,
                content TEXT NOT NULL,
                occurred_at {real} NOT NULL,
                created_at {real} NOT NULL,
                updated_at {real} NOT NULL,
                importance INTEGER NOT NULL,
                act_log_base {real} NOT NULL,
                act_ref_time {real} NOT NULL,
                access_count INTEGER NOT NULL DEFAULT 0,
                source_ids TEXT NOT NULL,
                entities TEXT NOT NULL,
                fingerprint TEXT NOT NULL,
                status TEXT NOT NULL,
                superseded_by TEXT,
                expires_at {real},
                indexed INTEGER NOT NULL,
                metadata TEXT NOT NULL,
                external_id TEXT
            )""",
            # ``source_id`` given to record() is an idempotency key: a re-run import adds nothing twice.
            "CREATE UNIQUE INDEX ux_memories_ns_external ON memories(namespace, layer, external_id)",
            "CREATE INDEX ix_memories_ns_layer_status ON memories(namespace, layer, status)",
            "CREATE INDEX ix_memories_ns_session ON memories(namespace, session_id, seq)",
            "CREATE INDEX ix_memories_ns_occurred ON memories(namespace, occurred_at)",
            "CREATE INDEX ix_memories_ns_fingerprint ON memories(namespace, fingerprint)",
            """CREATE TABLE edges (
                src TEXT NOT NULL, dst TEXT NOT NULL, kind TEXT NOT NULL, created_at {real} NOT NULL,
                PRIMARY KEY (src, dst, kind)
            )""",
            "CREATE INDEX ix_edges_dst ON edges(dst, kind)",
            """CREATE TABLE embeddings (
                memory_id TEXT PRIMARY KEY, model TEXT NOT NULL, vector {blob} NOT NULL
            )""",
            """CREATE TABLE outbox (
                id {pk},
                memory_id TEXT,
                namespace TEXT NOT NULL,
                layer TEXT,
                target TEXT NOT NULL,
                op TEXT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                last_error TEXT,
                created_at {real} NOT NULL
            )""",
            "CREATE INDEX ix_outbox_memory ON outbox(memory_id)",
            """CREATE TABLE activation_index (
                namespace TEXT NOT NULL, layer TEXT NOT NULL, memory_id TEXT NOT NULL, score {real} NOT NULL,
                PRIMARY KEY (namespace, layer, memory_id)
            )""",
            "CREATE INDEX ix_activation_rank ON activation_index(namespace, layer, score)",
        ],
    ),
    (
        # Verbatim ordered logs per (namespace, key) for framework adapters (hindsight_core/transcripts.py).
        "0004_transcripts",
        [
            """CREATE TABLE transcripts (
                seq {pk},
                namespace TEXT NOT NULL,
                tkey TEXT NOT NULL,
                created_at {real} NOT NULL,
                updated_at {real} NOT NULL,
                UNIQUE (namespace, tkey)
            )""",
            """CREATE TABLE transcript_entries (
                namespace TEXT NOT NULL, tkey TEXT NOT NULL, pos INTEGER NOT NULL, entry TEXT NOT NULL,
                PRIMARY KEY (namespace, tkey, pos)
            )""",
        ],
    ),
    (
        # Consolidation jobs and the episodes already distilled (hindsight_core/lifecycle/).
        "0003_lifecycle",
        [
            """CREATE TABLE consolidation_jobs (
                id {pk},
                namespace TEXT NOT NULL,
                session_id TEXT,
                trigger TEXT NOT NULL,
                status TEXT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                episodes INTEGER NOT NULL DEFAULT 0,
                last_error TEXT,
                report TEXT,
                created_at {real} NOT NULL,
                updated_at {real} NOT NULL
            )""",
            "CREATE INDEX ix_consolidation_jobs_ns ON consolidation_jobs(namespace, status)",
            """CREATE TABLE consolidated_episodes (
                memory_id TEXT PRIMARY KEY,
                namespace TEXT NOT NULL,
                job_id INTEGER,
                consolidated_at {real} NOT NULL
            )""",
            "CREATE INDEX ix_consolidated_ns ON consolidated_episodes(namespace)",
        ],
    ),
    (
        # The recall log and the memories ever injected (hindsight_core/recall/log.py: health figures).
        "0002_recall_log",
        [
            """CREATE TABLE recall_log (
                id {pk},
                namespace TEXT NOT NULL,
                session_id TEXT,
                query TEXT NOT NULL,
                at {real} NOT NULL,
                candidates TEXT NOT NULL,
                injected TEXT NOT NULL,
                scores TEXT NOT NULL,
                idle TEXT NOT NULL,
                n_injected INTEGER NOT NULL,
                n_idle INTEGER NOT NULL
            )""",
            "CREATE INDEX ix_recall_log_ns ON recall_log(namespace, at)",
            """CREATE TABLE recall_injected (
                namespace TEXT NOT NULL, memory_id TEXT NOT NULL, first_at {real} NOT NULL,
                PRIMARY KEY (namespace, memory_id)
            )""",
        ],
    ),
    (
        # Erase (``forget``): a tombstone per erased memory — its id, namespace and when, never content
        # or vector — so index deletes still pending and late writers (a recall log flushed after the
        # forget) can tell an erased id from an unknown one. Then provenance is separated from callers'
        # ids: ``record(source_id=...)`` used to copy the caller's id into ``source_ids`` (and
        # consolidation copied it on into facts), where it was later resolved as a memory id across
        # namespaces. Episodes keep the caller's id in ``external_id`` only; other memories keep only
        # entries that are not a caller's id of their own namespace.
        "0005_erase_tombstones",
        [
            """CREATE TABLE erased_memories (
                memory_id TEXT PRIMARY KEY, namespace TEXT NOT NULL, erased_at {real} NOT NULL
            )""",
            "CREATE INDEX ix_erased_ns ON erased_memories(namespace)",
            "UPDATE memories SET source_ids = '[]' WHERE layer = 'episodic' AND source_ids != '[]'",
            {
                "sqlite": """UPDATE memories SET source_ids = (
                SELECT COALESCE(json_group_array(j.value), '[]') FROM json_each(memories.source_ids) AS j
                WHERE j.value IN (SELECT o.id FROM memories AS o WHERE o.namespace = memories.namespace)
                   OR j.value NOT IN (
                       SELECT o.external_id FROM memories AS o
                       WHERE o.namespace = memories.namespace AND o.external_id IS NOT NULL
                   )
            ) WHERE layer != 'episodic' AND source_ids != '[]'""",
                "postgresql": """UPDATE memories SET source_ids = (
                SELECT COALESCE(json_agg(j.value), '[]'::json)::text
                FROM json_array_elements_text(memories.source_ids::json) AS j(value)
                WHERE j.value IN (SELECT o.id FROM memories AS o WHERE o.namespace = memories.namespace)
                   OR j.value NOT IN (
                       SELECT o.external_id FROM memories AS o
                       WHERE o.namespace = memories.namespace AND o.external_id IS NOT NULL
                   )
            ) WHERE layer != 'episodic' AND source_ids != '[]'""",
            },
        ],
    ),
    (
        # Outbox work coalesces per (memory, target) and a row that keeps failing while others apply is
        # parked with its error instead of blocking the queue (hindsight_core/write/outbox.py).
        # ``version`` lets a drain delete only the row state it applied: a write coalesced into the row
        # meanwhile bumps it, so the newer work is kept.
        "0006_outbox_coalesce_park",
        [
            "ALTER TABLE outbox ADD COLUMN parked INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE outbox ADD COLUMN version INTEGER NOT NULL DEFAULT 0",
            """DELETE FROM outbox WHERE op = 'sync' AND memory_id IS NOT NULL AND id NOT IN (
                SELECT MIN(id) FROM outbox WHERE op = 'sync' AND memory_id IS NOT NULL GROUP BY memory_id, target
            )""",
            "CREATE UNIQUE INDEX ux_outbox_sync ON outbox(memory_id, target) WHERE op = 'sync' "
            "AND memory_id IS NOT NULL",
            "CREATE INDEX ix_outbox_target ON outbox(target, parked, id)",
            # Facts about the data set itself; ``dataset_id`` names it in shared backends (the activation
            # index's "still intact" marker in Redis is per data set).
            "CREATE TABLE engine_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        ],
    ),
    (
        # Leases (hindsight_core/store/leases.py): one owner at a time for work on a namespace, such as
        # consolidation, across processes; a job row names the owner whose lease covers it.
        "0007_leases",
        [
            "CREATE TABLE leases (name TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at {real} NOT NULL)",
            "ALTER TABLE consolidation_jobs ADD COLUMN owner TEXT",
        ],
    ),
    (
        # A change log for recall's namespace snapshots (hindsight_core/store/changes.py): triggers note
        # every memory inserted, deleted, or updated in a column recall reads (not the activation columns
        # reinforcement moves), whichever process wrote it; one row per memory, the latest change.
        "0009_memory_changes",
        CHANGE_LOG_STATEMENTS,
    ),
    (
        # Edit history of ``update()`` (hindsight_core/memories.py): the text each edit replaced, when, and
        # the vector that text had (with its model), so ``history()`` lists the edits and a point-in-time
        # recall (``recall(as_of=...)``) searches the text as it stood then without re-embedding it. The
        # ``namespace`` column puts the rows under ``forget_namespace``'s generic purge; ``forget`` and an
        # archive delete drop a memory's rows with it (``RelationalStore.delete_memories``).
        "0010_memory_history",
        [
            """CREATE TABLE memory_history (
                seq {pk},
                memory_id TEXT NOT NULL,
                namespace TEXT NOT NULL,
                old_content TEXT NOT NULL,
                new_content TEXT NOT NULL,
                changed_at {real} NOT NULL,
                model TEXT,
                old_vector {blob}
            )""",
            "CREATE INDEX ix_memory_history_memory ON memory_history(memory_id, seq)",
            "CREATE INDEX ix_memory_history_ns ON memory_history(namespace, changed_at)",
        ],
    ),
    (
        # Outbox claims (hindsight_core/write/outbox.py): a row being applied names the applier and until
        # when, so two processes never apply the same row at once and a dead applier's rows are taken
        # over once the claim expires.
        "0011_outbox_claims",
        [
            "ALTER TABLE outbox ADD COLUMN claimed_by TEXT",
            "ALTER TABLE outbox ADD COLUMN claimed_until {real}",
        ],
    ),
    (
        # Forgetting on request (``demote`` / ``reinstate``, hindsight_core/lifecycle/api.py): who demoted a
        # memory, when and why, and the activation and status it had before, so the demotion can be undone
        # until the sweep archives the memory (hindsight_core/store/demotions.py).
        "0012_memory_demotions",
        [
            """CREATE TABLE memory_demotions (
                seq {pk},
                memory_id TEXT NOT NULL,
                namespace TEXT NOT NULL,
                demoted_at {real} NOT NULL,
                demoted_by TEXT,
                reason TEXT,
                log_base_before {real} NOT NULL,
                ref_time_before {real} NOT NULL,
                status_before TEXT NOT NULL,
                reinstated_at {real}
            )""",
            "CREATE INDEX ix_memory_demotions_memory ON memory_demotions(memory_id, seq)",
            "CREATE INDEX ix_memory_demotions_ns ON memory_demotions(namespace)",
        ],
    ),
    (
        # Starting memories (hindsight_core/starting.py): one row per root namespace a template was
        # decided for, written in the transaction that inserts the template's memories, so a root gets
        # them at most once whatever the number of processes (the primary key refuses a second row).
        # ``applied`` is how many were written: 0 for a root that already held memories (not a new user).
        "0013_starting_memories",
        [
            """CREATE TABLE starting_memories (
                namespace TEXT PRIMARY KEY,
                applied_at {real} NOT NULL,
                template TEXT NOT NULL,
                applied INTEGER NOT NULL
            )""",
        ],
    ),
    (
        # Shared layers (hindsight_core/sharing.py): a namespace whose semantic and procedural memories
        # are recalled beside a grantee's own, by explicit grant only. ``namespace`` is the shared one, so
        # forgetting it purges its grants with the generic purge.
        "0014_namespace_grants",
        [
            """CREATE TABLE namespace_grants (
                namespace TEXT NOT NULL,
                grantee TEXT NOT NULL,
                granted_at {real} NOT NULL,
                PRIMARY KEY (namespace, grantee)
            )""",
            "CREATE INDEX ix_namespace_grants_grantee ON namespace_grants(grantee)",
        ],
    ),
    (
        # Who may write (hindsight_core/sharing.py): a grant with ``can_write`` lets the grantee's
        # consolidation promote the facts its extractor marks general into the shared namespace.
        "0015_namespace_grants_write",
        ["ALTER TABLE namespace_grants ADD COLUMN can_write INTEGER NOT NULL DEFAULT 0"],
    ),
]
