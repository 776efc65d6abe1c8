"""Shared layers: what several agents (or users) know in common, by explicit grant only.

A shared namespace (``org:acme/shared``, ``kb:support``) is an ordinary namespace: its memories are
written, consolidated, swept and forgotten like any other. What makes it shared is a grant
(``store/grants.py``): ``grant("kb:support", to="agent:writer")`` lets recalls in ``agent:writer``, and
in the namespaces below it (``agent:writer/user:7``), search the shared namespace's semantic and
procedural memories beside their own. The conversation itself (episodic and working memory) is never
shared: a grant shares what was learned, not what was said.

*Exact names, never prefixes.* A grant names one grantee; a recall in ``agent:writer/user:7`` uses the
grants to itself and to its root ``agent:writer``, and nothing granted to ``agent:writers`` or to
``agent:writer/user:8``. No grant, no read: the shared namespace is not searched at all.

*The grantee's own word wins.* Recall ranks a shared memory by its relevance among the grantee's own,
but a shared memory on the same thing as one of the grantee's kept memories (the pair each other's
closest at ``floor.anchor_threshold``, as a starting memory and the user's word) comes after it: hidden
and reported as a conflict when the grantee's states a change ("our standup moved to 10:30"), shown
after it otherwise (two memories on one topic are not one fact). A shared hit shows where it came from
(``memory.namespace``; the prompt line says "shared from ...").

*Nothing flows back.* Recalling a shared memory writes nothing to the shared namespace: no recall log row
(it would hold the grantee's query) and no reinforcement (one grantee's use is not everyone's).

*Who may write.* A grant with ``write`` also lets the grantee's consolidation promote into the shared
namespace the facts its extractor marks general (``ExtractedMemory.general``: knowledge that holds for
anyone, as an LLM extractor judges it; the rule extractor marks none), in the batch's unit of work, each
copy saying where it came from (``metadata["promoted_from"]``; ``lifecycle/integrate.py``). Without it a
grant is read-only: nothing a grantee does writes to the shared namespace.

*Revocation is immediate.* Grants are read from the store on every recall, so a revoked grant takes
effect on the next recall in every process sharing the store."""

from __future__ import annotations

from hindsight_core.clock import from_ts
from hindsight_core.context import Changes, EngineContext
from hindsight_core.errors import InvalidInputError
from hindsight_core.namespaces import SEPARATOR, within
from hindsight_core.store import grants as rows
from hindsight_core.store.sql import RelationalStore
from hindsight_core.types import Grant
from hindsight_core.validation import check_namespace


def check_grant(namespace: object, to: object) -> tuple[str, str]:
    """``(shared namespace, grantee)``: two valid names, neither in the other's subtree (a namespace reads
    its own subtree without a grant). The one rule for every grant named: ``grant``, ``revoke`` and each
    grant record an import brings (portability.py)."""
    shared, grantee = check_namespace(namespace), check_namespace(to)
    if within(grantee, shared) or within(shared, grantee):
        raise InvalidInputError(
            f"{grantee!r} and {shared!r} are one subtree: a namespace reads its own subtree without a grant")
    return shared, grantee


def writable_by(store: RelationalStore, namespace: str) -> list[str]:
    """The shared namespaces granted with write access to ``namespace`` or its root, outside its own
    subtree (consolidation reads it inside its unit of work, ``lifecycle/api.py``)."""
    return [ns for ns in rows.readable_by(store, grantees_of(namespace), writing=True) if not within(ns, namespace)]


def grantees_of(namespace: str) -> list[str]:
    """The names a recall in ``namespace`` holds grants through: itself and its root."""
    root = namespace.split(SEPARATOR, 1)[0]
    return [namespace] if root == namespace else [namespace, root]


class SharingService:
    def __init__(self, ctx: EngineContext) -> None:
        self.ctx = ctx

    def grant(self, namespace: str, to: str, *, write: bool = False) -> Grant:
        """Let ``to`` (and the namespaces below it) recall ``namespace``'s semantic and procedural
        memories, and with ``write`` let its consolidation promote general facts into it; granting again
        keeps the first grant's time and sets ``write`` as given."""
        shared, grantee = check_grant(namespace, to)
        if not isinstance(write, bool):
            raise InvalidInputError(f"write must be a bool, got {type(write).__name__}")
        with self.ctx.changes() as ch:
            rows.put(ch.tx, shared, grantee, ch.ts, write=write)
        return next(g for g in self.grants(shared) if g.grantee == grantee)

    def revoke(self, namespace: str, to: str) -> bool:
        """Withdraw the grant of ``namespace`` to ``to``; ``False`` when there was none."""
        shared, grantee = check_grant(namespace, to)
        with self.ctx.changes() as ch:
            return rows.delete(ch.tx, shared, grantee)

    def grants(self, namespace: str | None = None) -> list[Grant]:
        """Every grant, or those naming ``namespace`` as the shared namespace or the grantee."""
        name = None if namespace is None else check_namespace(namespace)
        return [Grant(namespace=ns, grantee=grantee, granted_at=from_ts(at), write=write)
                for ns, grantee, at, write in rows.listed(self.ctx.store, name)]

    def purge(self, ch: Changes, namespace: str) -> None:
        """In ``forget_namespace``'s unit of work: the grants to ``namespace`` (those of it, as the shared
        namespace, go with the generic purge)."""
        rows.revoke_all_to(ch.tx, namespace)

    def writable(self, namespace: str) -> list[str]:
        """The shared namespaces ``namespace``'s consolidation may promote general facts into: granted
        with write access to it or to its root, outside its own subtree."""
        return writable_by(self.ctx.store, namespace)

    def readable(self, namespace: str) -> list[str]:
        """The shared namespaces a recall in ``namespace`` searches: granted to it or to its root, and
        not inside its own subtree (those it reads as its own)."""
        return [ns for ns in rows.readable_by(self.ctx.store, grantees_of(namespace))
                if not within(ns, namespace)]
