"""Export a namespace to plain JSON records and import it elsewhere, exactly.

An export holds what rebuilding the namespace needs and nothing derived: every memory in every layer and
status (ids, caller ids, activation, provenance), the edges between them (supersedes chains, what a
fact was distilled from), the transcripts, and which episodes were already consolidated (so the new home
does not distill them twice), the edit history of ``update()``, the demotions of ``demote()`` and the
grants that name the namespace on either side (who may read it as a shared layer, and which shared
layers it reads; sharing.py). Vectors and index entries are derived: the importing engine embeds and
indexes through its outbox. Importing the same export twice adds nothing.

*Grants.* A ``grant`` record is a ``namespace_grants`` row as stored: ``namespace`` (the shared one),
``grantee``, ``granted_at`` (seconds since the epoch, a float, as the consolidated, edit and demotion
records give their times) and ``write`` (a bool; read access only when absent, as in exports written
before write grants: an older importer ignores the extra key). An import that renames the namespace
renames the side that named it and keeps the other: a grant to another tenant's namespace names that
tenant, not this export. A grant record that names neither side as the exported namespace, or a pair
``grant`` would refuse (``sharing.check_grant``), refuses the whole import; a grant already present
keeps its first time and takes the record's ``write``.

A namespace that holds only grants is not exported (``UnknownNamespaceError``, as before): to
``holds_namespace`` and ``namespaces()`` it holds nothing, and its grants are not lost for that: each
travels with the export of its other side, and only a grant between two names that both hold nothing
is left behind, which gives nothing to read yet.

*Version 2.* The importer refuses a record type it does not know (a silently dropped record would be a
lossy copy that reports success), so an importer of version 1 would refuse a ``grant`` record; the
version is 2, which such an importer refuses by its header, before reading a record. Version 1 exports
(including the edit and demotion records added within version 1) still import: they carry no grants,
and a ``grant`` record under a version 1 header is refused as not of that version."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, ValidationError
from ulid import ULID

from hindsight_core.errors import InvalidInputError, UnknownNamespaceError
from hindsight_core.progress import Progress, track
from hindsight_core.sharing import check_grant
from hindsight_core.store import demotions, grants
from hindsight_core.store.demotions import Demotion
from hindsight_core.types import Edge, Memory, Status
from hindsight_core.validation import (
    check_json,
    check_metadata,
    check_namespace,
    check_role,
    check_session_id,
    check_text,
    check_transcript_key,
)

if TYPE_CHECKING:
    from hindsight_core.context import EngineContext

#: The ``format`` of an export's header record; ``version`` grows when the records change.
EXPORT_FORMAT = "hindsight-export"
EXPORT_VERSION = 2
#: The versions ``import_namespace`` reads: 1 is 2 without ``grant`` records.
IMPORTED_VERSIONS = (1, 2)


class ImportReport(BaseModel):
    namespace: str
    memories: int = 0  #: memories inserted
    skipped: int = 0  #: memories already present (same id, or the same caller id in the same layer)
    edges: int = 0  #: edge records read (already present ones are kept as they are)
    transcripts: int = 0  #: transcripts inserted
    skipped_transcripts: int = 0  #: transcript keys that already existed (left untouched)
    grants: int = 0  #: grants inserted
    skipped_grants: int = 0  #: grants already present (their first time kept)
    skipped_ids: list[str] = Field(default_factory=list)


class PortabilityService:
    def __init__(self, ctx: EngineContext) -> None:
        self.ctx = ctx
        self.store = ctx.store

    def export_namespace(self, namespace: str) -> Iterator[dict[str, Any]]:
        """The namespace as JSON-ready records, header first; write one per line (JSONL).

        The records are read up front, so a write running meanwhile cannot tear the export."""
        namespace = check_namespace(namespace)
        memories = self.store.find_memories(namespace)
        transcripts = self.store.transcripts_of(namespace)
        if not memories and not transcripts:
            raise UnknownNamespaceError(f"namespace {namespace!r} holds no memories")
        edges = self.store.namespace_edges(namespace)
        consolidated = self.store.consolidated_of(namespace)
        records: list[dict[str, Any]] = [
            {"type": "header", "format": EXPORT_FORMAT, "version": EXPORT_VERSION, "namespace": namespace,
             "exported_at": self.ctx.now().isoformat(), "embedder": self.ctx.embedder.name}
        ]
        records += [{"type": "memory", "memory": m.model_dump(mode="json")} for m in memories]
        records += [{"type": "edge", "edge": e.model_dump(mode="json")} for e in edges]
        records += [
            {"type": "transcript", "key": key, "created_at": created, "updated_at": updated,
             "entries": [json.loads(e) for e in entries]}
            for key, created, updated, entries in transcripts
        ]
        records += [{"type": "consolidated", "memory_id": mid, "at": at} for mid, at in consolidated]
        records += [
            {"type": "edit", "memory_id": mid, "old_content": old, "new_content": new, "at": at}
            for mid, old, new, at in self.store.namespace_history(namespace)
        ]
        records += [
            {"type": "demotion", "memory_id": d.memory_id, "at": d.demoted_at, "by": d.demoted_by,
             "reason": d.reason, "log_base_before": d.log_base_before, "ref_time_before": d.ref_time_before,
             "status_before": d.status_before, "reinstated_at": d.reinstated_at}
            for d in demotions.of_namespace(self.store, namespace)
        ]
        records += [
            {"type": "grant", "namespace": shared, "grantee": grantee, "granted_at": at, "write": write}
            for shared, grantee, at, write in grants.listed(self.store, namespace)
        ]
        return iter(records)

    def _checked_memory(self, raw: object) -> Memory:
        """An exported memory, put through the checks ``record`` applies to what it stores (the
        metadata walked before pydantic sees it: a value nested thousands deep must not recurse), plus
        what only an import can carry: its id, its activation, the ids it cites."""
        if not isinstance(raw, Mapping):
            raise InvalidInputError("a memory record holds an object")
        cfg = self.ctx.config.write
        check_metadata(raw.get("metadata"), max_depth=cfg.max_metadata_depth, max_bytes=cfg.max_metadata_bytes)
        m = Memory.model_validate(raw)
        for mid in (m.id, *m.source_ids, *([m.superseded_by] if m.superseded_by else [])):
            try:
                ULID.from_str(mid)  # the ids the engine gives memories; an import names no other kind
            except ValueError:
                raise InvalidInputError(f"{mid!r} is not a memory id (a ULID)") from None
        check_text(m.content, max_chars=cfg.max_content_chars)
        check_role(m.role, max_chars=cfg.max_role_chars)
        check_session_id(m.session_id)
        if m.source_id is not None:
            check_text(m.source_id, what="source_id", max_chars=500)
        for entity in m.entities:
            check_text(entity, what="entity", max_chars=500)
        if not (math.isfinite(m.activation.log_base) and math.isfinite(m.activation.ref_time)):
            raise InvalidInputError(f"memory {m.id!r} has a non-finite activation")
        return m

    def import_namespace(
        self, records: Iterable[Mapping[str, Any]], *, namespace: str | None = None, progress: Progress = False
    ) -> ImportReport:
        """Rebuild a namespace from :meth:`export_namespace` records (ids, statuses, activation and edges
        kept exactly). ``namespace`` renames it. Every record is checked before anything is written; one
        transaction inserts it all, then the indexes are brought in step (``progress`` counts that part).
        Memories already present are skipped, so a re-run import adds nothing."""
        if isinstance(records, str | bytes | Mapping) or not isinstance(records, Iterable):
            raise InvalidInputError(f"records must be an iterable of export records, got {type(records).__name__}")
        rows = iter(records)  # read once, record by record: a raw record is dropped once it is checked
        header = next(rows, None)
        if not isinstance(header, Mapping) or header.get("type") != "header":
            raise InvalidInputError("an export starts with its header record (type 'header')")
        version = header.get("version")
        # type, not ==: True == 1 and 2.0 == 2, and neither is a version
        if header.get("format") != EXPORT_FORMAT or type(version) is not int or version not in IMPORTED_VERSIONS:
            raise InvalidInputError(
                f"not a {EXPORT_FORMAT} export of version {' or '.join(map(str, IMPORTED_VERSIONS))}: "
                f"format={header.get('format')!r} version={version!r}"
            )
        source_ns = check_namespace(header.get("namespace"))
        target = source_ns if namespace is None else check_namespace(namespace)
        memories: list[Memory] = []
        edges: list[Edge] = []
        transcripts: list[tuple[str, float, float, list[str]]] = []
        consolidated: list[tuple[str, float]] = []
        edits: list[tuple[str, str, str, float]] = []
        demoted: list[Demotion] = []
        granted: list[tuple[str, str, float, bool]] = []
        for index, record in enumerate(rows, start=2):
            try:
                if not isinstance(record, Mapping):
                    raise InvalidInputError("not an object")
                kind = record.get("type")
                if kind == "memory":
                    m = self._checked_memory(record["memory"])
                    if m.namespace != source_ns:
                        raise InvalidInputError(f"memory {m.id!r} belongs to {m.namespace!r}, not {source_ns!r}")
                    memories.append(m.model_copy(update={"namespace": target}))
                elif kind == "edge":
                    edges.append(Edge.model_validate(record["edge"]))
                elif kind == "transcript":
                    key, entries = check_transcript_key(record["key"]), record["entries"]
                    if not isinstance(entries, list):
                        raise InvalidInputError("a transcript's entries are a list")
                    # encoded as edit_transcript encodes, so a later append still writes only the tail
                    encoded = [check_json(e, what=f"transcript {key!r} entry", max_bytes=None) for e in entries]
                    transcripts.append((key, float(record["created_at"]), float(record["updated_at"]), encoded))
                elif kind == "consolidated":
                    consolidated.append((str(record["memory_id"]), float(record["at"])))
                elif kind == "edit":
                    texts = [check_text(record[f], what=f"edit {f}", max_chars=self.ctx.config.write.max_content_chars)
                             for f in ("old_content", "new_content")]
                    edits.append((str(record["memory_id"]), texts[0], texts[1], float(record["at"])))
                elif kind == "demotion":
                    demoted.append(_demotion_record(record))
                elif kind == "grant":
                    if version < 2:
                        raise InvalidInputError("a version 1 export holds no grant records")
                    granted.append(_grant_record(record, source_ns, target))
                else:
                    raise InvalidInputError(f"unknown record type {kind!r}")
            except (KeyError, TypeError, ValueError, ValidationError, RecursionError) as exc:
                raise InvalidInputError(f"export record {index} is malformed: {exc}") from exc
        ids = [m.id for m in memories]
        if len(ids) != len(set(ids)):
            raise InvalidInputError("the export names a memory id twice")
        present = self.store.existing_ids(ids)
        elsewhere = sorted(mid for mid, ns in present.items() if ns != target)
        if elsewhere:
            raise InvalidInputError(
                f"{len(elsewhere)} memory ids of this export are stored in another namespace (first: "
                f"{elsewhere[0]!r}); import it into a separate data directory"
            )
        known = set(ids)
        for e in edges:
            if e.src not in known or e.dst not in known:
                raise InvalidInputError(f"edge {e.src}->{e.dst} names a memory the export does not hold")
        for mid, _, _, _ in edits:
            if mid not in known:
                raise InvalidInputError(f"an edit names memory {mid!r}, which the export does not hold")
        for d in demoted:
            if d.memory_id not in known:
                raise InvalidInputError(f"a demotion names memory {d.memory_id!r}, which the export does not hold")
        fresh: list[Memory] = []
        skipped: list[str] = []
        taken: set[tuple[str, str]] = set()
        for m in memories:
            caller = (m.layer.value, m.source_id) if m.source_id is not None else None
            # the caller's id is unique per namespace and layer: a memory recorded under it here first wins
            clash = caller is not None and (
                caller in taken or bool(self.store.by_external_ids(target, caller[0], [caller[1]]))
            )
            if m.id in present or clash:
                skipped.append(m.id)
                continue
            if caller is not None:
                taken.add(caller)
            fresh.append(m)
        report = ImportReport(namespace=target, skipped=len(skipped), skipped_ids=skipped, edges=len(edges))
        stored = (set(ids) - set(skipped)) | set(present)
        indexed = [m for m in fresh if m.indexed and m.status == Status.ACTIVE]
        # Applied below in batches, so a progress bar can count them.
        with self.ctx.changes(apply="later") as ch:
            if fresh:
                ch.tx.insert_memories(fresh)
            ch.add_edges([e for e in edges if e.src in stored and e.dst in stored])
            for key, created, updated, encoded in transcripts:
                if ch.tx.put_transcript(target, key, created, updated, encoded):
                    report.transcripts += 1
                else:
                    report.skipped_transcripts += 1
            ch.tx.mark_consolidated(target, [(mid, at) for mid, at in consolidated if mid in stored])
            inserted = {m.id for m in fresh}  # a memory already here keeps the history it has
            for mid, old, new, at in edits:
                if mid in inserted:
                    ch.tx.add_history(mid, target, old, new, at, None, None)
            for d in demoted:
                if d.memory_id in inserted:
                    demotions.add(
                        ch.tx, d.memory_id, target, at=d.demoted_at, by=d.demoted_by, reason=d.reason,
                        log_base_before=d.log_base_before, ref_time_before=d.ref_time_before,
                        status_before=d.status_before, reinstated_at=d.reinstated_at,
                    )
            for shared, grantee, at, write in granted:
                if grants.put(ch.tx, shared, grantee, at, write=write):
                    report.grants += 1
                else:
                    report.skipped_grants += 1
            ch.sync(indexed)
        report.memories = len(fresh)
        batch = self.ctx.config.write.batch_size
        with track(progress, len(indexed), f"index {target}", "memory") as bar:
            for start in range(0, len(indexed), batch):
                chunk = [m.id for m in indexed[start : start + batch]]
                self.ctx.outbox.apply(chunk)
                bar.advance(len(chunk))
        return report


def _demotion_record(record: Mapping[str, Any]) -> Demotion:
    """A demotion record checked as ``demote`` checks its input (the ``seq`` is the importer's)."""

    def note(field: str, max_chars: int) -> str | None:
        value = record.get(field)
        return None if value is None else check_text(value, what=f"demotion {field}", max_chars=max_chars)

    reinstated = record.get("reinstated_at")
    return Demotion(
        seq=0, memory_id=check_text(record["memory_id"], what="demotion memory_id", max_chars=200),
        demoted_at=float(record["at"]), demoted_by=note("by", 200), reason=note("reason", 2_000),
        log_base_before=float(record["log_base_before"]), ref_time_before=float(record["ref_time_before"]),
        status_before=Status(record["status_before"]).value,
        reinstated_at=None if reinstated is None else float(reinstated),
    )


def _grant_record(record: Mapping[str, Any], source: str, target: str) -> tuple[str, str, float, bool]:
    """A grant record as it will be written: ``(shared namespace, grantee, granted_at, write)`` with the side
    that names the exported namespace ``source`` renamed to ``target``. The pair is checked as
    ``grant`` checks it both as exported (an export never holds a pair ``grant`` refuses) and as
    renamed (a rename may put one side in the other's subtree)."""
    shared, grantee = check_grant(record["namespace"], record["grantee"])
    at = float(record["granted_at"])
    if not math.isfinite(at):
        raise InvalidInputError(f"the grant of {shared!r} to {grantee!r} has a non-finite time")
    write = record.get("write", False)  # a read grant, in an export written before write grants
    if not isinstance(write, bool):
        raise InvalidInputError(f"the grant of {shared!r} to {grantee!r} has a write flag that is not a bool")
    if shared == source:
        shared = target
    elif grantee == source:
        grantee = target
    else:
        raise InvalidInputError(
            f"a grant of {shared!r} to {grantee!r} names the exported namespace {source!r} on neither side")
    return (*check_grant(shared, grantee), at, write)


__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "IMPORTED_VERSIONS", "ImportReport", "PortabilityService"]
