"""The wall around a shared layer (issue 32): every read path of the engine, with and without a grant.

A grant opens exactly one door, recall (and what is built on it), and only to what was learned: the
shared namespace's semantic and procedural memories. Every other read path stays exact by namespace with
or without a grant, the shared namespace's conversation is never read through the grantee, a namespace
that holds no grant reads nothing of the shared one, and a revoked grant reads nothing again."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

import pytest

from hindsight_core import Hindsight, Memory

SHARED, GRANTEE, STRANGER = "kb:tea", "agent:shop", "agent:other"
FACT = "Oolong tea is brewed at 90 degrees for three minutes."
EPISODE = "Oolong tea secret supplier code is ZX-7781, keep it internal."
QUESTION = "How long should oolong tea be brewed, and at what temperature?"


def _ids(memories: Iterable[Memory]) -> set[str]:
    return {m.id for m in memories}


def _every_read_path(hs: Hindsight, namespace: str) -> dict[str, set[str]]:
    """What each read path of ``namespace`` returns, as memory ids (the recall paths: hits, their sources
    and the conflicts' both sides)."""

    def recalled(**kw: object) -> set[str]:
        result = hs.recall(QUESTION, namespace, track=False, **kw)  # type: ignore[arg-type]
        return (_ids(h.memory for h in result.hits) | _ids(s for h in result.hits for s in h.sources)
                | _ids(c.superseded for c in result.conflicts) | _ids(c.successor for c in result.conflicts))

    async def arecalled() -> set[str]:
        return _ids((await hs.arecall(QUESTION, namespace, track=False)).memories)

    paths: dict[str, Callable[[], set[str]]] = {
        "recall": recalled,
        "recall subtree": lambda: recalled(subtree=True),
        "recall shared=False": lambda: recalled(shared=False),
        "recall explain": lambda: recalled(explain=True),
        "arecall": lambda: asyncio.run(arecalled()),
        "find": lambda: _ids(hs.find(namespace)),
        "working": lambda: _ids(hs.working(namespace, "s1", budget_tokens=10_000)),
        "latest": lambda: _ids(hs.inspection.latest(namespace, limit=100)),
        "search": lambda: _ids(hs.inspection.search(namespace, text="Oolong")),
        "fading": lambda: _ids(hs.inspection.fading(namespace, 3650)),
        "export": lambda: {r["memory"]["id"] for r in hs.export_namespace(namespace) if r["type"] == "memory"}
        if hs.holds_namespace(namespace) else set(),
    }
    return {name: read() for name, read in paths.items()}


@pytest.fixture
def shop(open_engine: Callable[[], Hindsight]) -> tuple[Hindsight, str, str]:
    hs = open_engine()
    fact = hs.record(FACT, SHARED, layer="semantic", kind="fact").id
    episode = hs.record(EPISODE, SHARED, session_id="s1", role="user").id
    for ns in (GRANTEE, STRANGER):
        hs.record("Customers keep asking about our oolong selection.", ns, session_id="s1", role="user")
    return hs, fact, episode


def test_without_a_grant_no_read_path_reaches_the_shared_namespace(shop: tuple[Hindsight, str, str]) -> None:
    hs, fact, episode = shop
    for ns in (GRANTEE, STRANGER):
        leaks = {path: ids & {fact, episode} for path, ids in _every_read_path(hs, ns).items() if ids & {fact, episode}}
        assert leaks == {}, (ns, leaks)


def test_a_grant_opens_recall_to_what_was_learned_and_nothing_else(shop: tuple[Hindsight, str, str]) -> None:
    hs, fact, episode = shop
    hs.grant(SHARED, to=GRANTEE)
    reads = _every_read_path(hs, GRANTEE)
    through_recall = {"recall", "recall subtree", "recall explain", "arecall"}
    assert {path for path, ids in reads.items() if fact in ids} == through_recall
    assert {path for path, ids in reads.items() if episode in ids} == set()  # the conversation is never shared
    stranger = _every_read_path(hs, STRANGER)
    assert {path for path, ids in stranger.items() if ids & {fact, episode}} == set()
    hs.revoke(SHARED, to=GRANTEE)
    assert {path for path, ids in _every_read_path(hs, GRANTEE).items() if ids & {fact, episode}} == set()
