"""Namespace trees (``hindsight_core/namespaces.py``): ``user:ana/…`` is under ``user:ana``, nothing else
is. ``recall(subtree=True)`` ranks a root and its children as one; ``forget_namespace`` of a root erases
them all, of a child only the child. Run on SQLite and PostgreSQL, since the subtree is an SQL range."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hindsight_core import Hindsight, InvalidInputError, UnknownNamespaceError
from hindsight_core.config import HindsightConfig, RecallConfig
from hindsight_core.embeddings.e5 import E5Embedder

#: Names sharing characters with ``user:ana`` that are not below it (the separator, the next code
#: point after it, other cases, a dot, a dash).
NEIGHBOURS = ("user:anabel", "user:ana0", "user:ana.x", "user:ana-x", "user:Ana/store:memories", "user:an")
FACT = "Ana is vegan and never eats cheese."


@pytest.fixture(params=["sqlite", "postgres"])
def open_engine(
    request: pytest.FixtureRequest, tmp_path: Path, clock: object, embedder: E5Embedder
) -> Iterator[Callable[..., Hindsight]]:
    url = str(request.getfixturevalue("postgres_url")) if request.param == "postgres" else None
    opened: list[Hindsight] = []

    def make(**kw: object) -> Hindsight:
        hs = Hindsight(tmp_path / "data", database_url=url, clock=clock, embedder=embedder, **kw)  # type: ignore[arg-type]
        opened.append(hs)
        return hs

    yield make
    for hs in opened:
        hs.close()


def _fill(hs: Hindsight) -> dict[str, str]:
    """One memory per namespace; returns namespace → id."""
    ids = {
        "user:ana": hs.record("I moved to Lisbon last spring.", "user:ana", session_id="s1").id,
        "user:ana/store:memories": hs.record(FACT, "user:ana/store:memories", kind="fact", role=None).id,
        "user:ana/notes/diet": hs.record("Ana asked to remember: no dairy at dinner.", "user:ana/notes/diet").id,
    }
    for ns in NEIGHBOURS:
        ids[ns] = hs.record(f"{ns} is vegan and never eats cheese.", ns).id
    return ids


def test_subtree_recall_reaches_children_and_no_neighbour(open_engine: Callable[..., Hindsight]) -> None:
    hs = open_engine()
    ids = _fill(hs)
    assert hs.store.namespaces_under("user:ana") == ["user:ana", "user:ana/notes/diet", "user:ana/store:memories"]

    exact = hs.recall("Does Ana eat cheese?", "user:ana")
    assert ids["user:ana/store:memories"] not in {h.memory.id for h in exact.hits}  # exact stays exact

    tree = hs.recall("Does Ana eat cheese?", "user:ana", subtree=True, k=10)
    found = {h.memory.id: h.memory.namespace for h in tree.hits}
    assert ids["user:ana/store:memories"] in found
    assert tree.namespace == "user:ana"
    assert set(found.values()) <= {"user:ana", "user:ana/store:memories", "user:ana/notes/diet"}
    assert tree.to_prompt().count(FACT) == 1

    # a child's own subtree is the child alone; a neighbour sees only itself
    child = hs.recall("Does Ana eat cheese?", "user:ana/store:memories", subtree=True, k=10)
    assert {h.memory.namespace for h in child.hits} == {"user:ana/store:memories"}
    for ns in NEIGHBOURS:
        other = hs.recall("Who never eats cheese?", ns, subtree=True, k=10)
        assert {h.memory.namespace for h in other.hits} == {ns}

    # the recall log is per namespace searched, so erasing a child takes its share with it
    hs.flush_recall_log()
    logged = {r[0] for r in hs.store.query("SELECT DISTINCT namespace FROM recall_log")}
    assert {"user:ana", "user:ana/store:memories"} <= logged


def test_forget_root_erases_the_subtree_and_a_child_only_itself(
    open_engine: Callable[..., Hindsight], tmp_path: Path
) -> None:
    hs = open_engine()
    ids = _fill(hs)
    hs.edit_transcript("user:ana/chat", "s1", lambda _: [{"role": "user", "content": "hi"}])  # a log, no memory
    hs.recall("Does Ana eat cheese?", "user:ana", subtree=True)
    hs.flush_recall_log()

    assert hs.forget_namespace("user:ana/notes/diet") == 1  # a child: only the child
    assert hs.get(ids["user:ana/notes/diet"]) is None
    assert hs.get(ids["user:ana"]) is not None and hs.get(ids["user:ana/store:memories"]) is not None

    assert hs.forget_namespace("user:ana", subtree=False) == 1  # the root alone, on request
    assert hs.get(ids["user:ana/store:memories"]) is not None
    hs.record("I moved to Lisbon last spring.", "user:ana")

    erased = hs.forget_namespace("user:ana")
    assert erased == 2
    assert hs.store.namespaces_under("user:ana") == []
    assert hs.transcript("user:ana/chat", "s1") is None
    for ns in ("user:ana", "user:ana/store:memories"):
        assert hs.vectors.count(ns, "episodic") + hs.vectors.count(ns, "semantic") == 0
        assert hs.activation.count(ns, "episodic") == 0
    assert not hs.store.query(
        "SELECT 1 FROM recall_log WHERE namespace = ? OR namespace = ?", ("user:ana", "user:ana/store:memories")
    )
    assert hs.recall("Does Ana eat cheese?", "user:ana", subtree=True).hits == []
    for ns in NEIGHBOURS:  # the wall: nothing of a neighbour went with the root
        assert hs.get(ids[ns]) is not None
        assert [h.memory.id for h in hs.recall("Who never eats cheese?", ns).hits] == [ids[ns]]
    with pytest.raises(UnknownNamespaceError):
        hs.forget_namespace("user:ana")


def test_subtree_bound_and_bad_flag(open_engine: Callable[..., Hindsight]) -> None:
    hs = open_engine(config=HindsightConfig(recall=RecallConfig(max_subtree_namespaces=2)))
    _fill(hs)
    with pytest.raises(InvalidInputError, match="max_subtree_namespaces"):
        hs.recall("cheese", "user:ana", subtree=True)
    with pytest.raises(InvalidInputError):
        hs.recall("cheese", "user:ana", subtree="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        hs.forget_namespace("user:ana", subtree=1)  # type: ignore[arg-type]
    assert hs.get(hs.find("user:ana")[0].id) is not None  # refused calls changed nothing
