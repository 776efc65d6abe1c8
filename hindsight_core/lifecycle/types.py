"""Reports returned by the lifecycle facet (pure pydantic)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field


class ConsolidationReport(BaseModel):
    """What one consolidation run did. ``status`` is ``failed`` when the extractor gave up (its error is
    in ``error``): the batches before the failure are written, the rest stay unconsolidated. ``busy``: another
    process held the namespace's consolidation lease for longer than the wait, and nothing was done."""

    namespace: str
    session_id: str | None = None
    job_id: int | None = None
    trigger: str = "manual"
    status: Literal["done", "failed", "empty", "busy"] = "done"
    error: str | None = None
    episodes: int = 0  #: episodes consolidated (marked as distilled)
    batches: int = 0
    llm_calls: int = 0
    extracted: int = 0  #: memories the extractor returned
    created: int = 0  #: new semantic/procedural memories
    merged: int = 0  #: duplicates folded into an existing memory
    superseded: int = 0  #: conflicts: older memories replaced by newer ones
    episodes_superseded: int = 0  #: episodes carrying only a stale value
    dropped: int = 0  #: assistant-side confirmations with nothing to confirm
    #: general facts copied into shared namespaces granted with write access (sharing.py), one per copy
    promoted: int = 0
    created_ids: list[str] = Field(default_factory=list)
    superseded_ids: list[str] = Field(default_factory=list)


class SweepReport(BaseModel):
    now: datetime
    dry_run: bool = False  #: computed only: nothing was cooled, archived or deleted
    cooled: int = 0  #: active → cold (low activation, idle)
    expired: int = 0  #: ``state`` memories past their TTL (→ cold)
    archived: int = 0  #: cold → JSONL archive, deleted from the store
    archives: dict[str, str] = Field(default_factory=dict)  #: namespace → archive file written to
    cooled_ids: list[str] = Field(default_factory=list)
    archived_ids: list[str] = Field(default_factory=list)
    #: namespace → why its archive could not be written; its memories stay cold in the store and the next
    #: sweep tries again (the other namespaces are archived regardless)
    errors: dict[str, str] = Field(default_factory=dict)
    not_archived: int = 0  #: memories due for the archive that stayed in the store because of ``errors``


class ArchiveDamage(BaseModel):
    """A line of an archive file that is not a whole record (a torn tail, a garbled line)."""

    line: int  #: 1-based line number
    reason: str
    recovered: bool = False  #: a whole record glued behind the torn part was read anyway


class RestoreReport(BaseModel):
    """What ``restore`` did: the whole records are restored even when some lines are damaged."""

    path: str
    records: int = 0  #: whole records in the file (one per memory id)
    restored: int = 0  #: memories brought back as active
    skipped: int = 0  #: records whose memory is already in the store (restored before, re-recorded)
    damaged: list[ArchiveDamage] = Field(default_factory=list)  #: lines that could not be read
