"""Snapshots that grow in place (issue 11, "no rebuild per write"): a write extends the namespace's
snapshot by appending to storage the earlier snapshots share, so an earlier snapshot, which a recall
may still be running on, must stay exactly as it was; and views must read shared maps while a writer
inserts into them."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hindsight_core import Hindsight
from hindsight_core.recall.corpus import Corpus, VectorsFor, _append, columns
from hindsight_core.recall.growing import GrowingMap, members_below
from hindsight_core.recall.keyword import KeywordIndex, tokenize

NS = "user:growing"
TURNS = [
    "I adopted a beagle called Biscuit last spring.", "Biscuit hates the vacuum cleaner.",
    "我对花生过敏，很严重。", "The quarterly review moved to Thursday.",
]
LATER = [
    "Lily starts violin lessons on Monday.", "My budget for the Lisbon trip is 3000 euros.",
    "周末想去杭州爬山，和王磊一起。", "My name is Ana and I am vegetarian.",
]


def _same(a: tuple[dict, dict[str, np.ndarray]], b: tuple[dict, dict[str, np.ndarray]]) -> None:
    assert a[0] == b[0]
    assert a[1].keys() == b[1].keys()
    for name in a[1]:
        assert np.array_equal(a[1][name], b[1][name]), name


def _corpus(hs: Hindsight) -> Corpus:
    return hs._recall._pipeline().corpus(NS, False)


def test_an_earlier_snapshot_stays_as_it_was_while_writes_extend_it(tmp_path: Path, embedder) -> None:
    with Hindsight(tmp_path / "data", embedder=embedder) as hs:
        hs.record_many([{"content": t, "session_id": "s1"} for t in TURNS], namespace=NS)
        first = _corpus(hs)
        before = columns(first)
        added = [hs.record(text, NS, session_id="s1").id for text in LATER]  # the same session: a next turn
        later = _corpus(hs)
        assert later.growth is first.growth and later.size == first.size + len(LATER)
        _same(columns(first), before)  # everything a snapshot holds, as the file would save it
        assert [m.id for m in first.memories] == before[0]["ids"]
        assert all(mid not in first.position and first.position.get(mid) is None for mid in added)
        assert all(later.position[mid] >= first.size for mid in added)
        assert int(first.following[first.size - 1]) == -1 and int(later.following[first.size - 1]) == first.size
        assert "lisbon" in later.entities and "lisbon" not in first.entities
        assert "lisbon" not in set(first.entity_names) and len(first.standing) == first.size
        assert not any("vegetarian" in m.content for m in first.memories)
        assert any("Lisbon" in h.memory.content for h in hs.recall("Lisbon budget", NS, track=False).hits)


def test_a_row_an_update_replaced_changes_in_the_later_snapshot_only(tmp_path: Path, embedder) -> None:
    with Hindsight(tmp_path / "data", embedder=embedder) as hs:
        hs.record_many([{"content": t, "session_id": "s1"} for t in TURNS], namespace=NS)
        first = _corpus(hs)
        old = first.memories[1]
        changed = old.model_copy(update={"importance": 5})
        fresh = hs.get(hs.record(LATER[0], NS, session_id="s1").id)
        assert fresh is not None and first.growth is not None
        vectors_for = VectorsFor(hs.outbox.vectors_for, hs.embedder.dim)
        standing_of = hs._recall._pipeline()._standing_of
        with first.growth.lock:
            later = _append(first, [fresh], {1: changed}, vectors_for, first.change + 1, first.max_seq + 1,
                            standing_of=standing_of)
        assert later.memories[1].importance == 5 and first.memories[1] is old
        assert [m.id for m in later.memories] == [*(m.id for m in first.memories), fresh.id]
        with later.growth.lock:  # an update alone (no new row): the rows stay shared, the swap stays
            latest = _append(later, [], {0: first.memories[0].model_copy(update={"importance": 1})}, vectors_for,
                             later.change + 1, later.max_seq, standing_of=standing_of)
        assert latest.memories[0].importance == 1 and latest.memories[1].importance == 5
        assert later.memories[0].importance == first.memories[0].importance


def test_a_map_view_iterates_its_own_keys_while_a_writer_inserts() -> None:
    grown: GrowingMap[list[int]] = GrowingMap({"biscuit": [0], "lily": [1]})
    view = grown.view(members_below(2))
    seen = []
    for key in view:  # a dict would fail "dictionary changed size during iteration" here
        seen.append(key)
        grown.set(f"new{len(seen)}", [2])
        members = grown.get("biscuit")
        assert members is not None
        members.append(3)
    assert seen == ["biscuit", "lily"]
    assert dict(view) == {"biscuit": [0], "lily": [1]} and "new1" not in view
    assert grown.view(members_below(4))["biscuit"] == [0, 3, 3]


def test_a_keyword_view_keeps_its_scores_while_the_index_grows() -> None:
    docs = [f"note {i} beagle" if i % 3 else f"note {i} violin lesson" for i in range(40)]
    more = ["brand new words only here", "lisbon budget euros", "beagle beagle beagle"] * 5
    index = KeywordIndex(docs)
    view = index.view(len(docs))
    index.extend(more)  # new terms (a larger vocabulary) and old ones, after the view was made
    reference = KeywordIndex(docs).view(len(docs))
    for query in ("beagle", "violin lesson", "lisbon", "note 7"):
        terms = tokenize(query)
        assert np.allclose(view.scores(terms), reference.scores(terms)), query
        assert [view.idf(t) for t in terms] == [reference.idf(t) for t in terms]
    _same(view.columns(), reference.columns())
