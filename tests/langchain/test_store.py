"""HindsightStore against the reference langgraph InMemoryStore: the same operation sequences give the
same results (sync and async); search with a query is ranked by the engine."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage
from langgraph.store.base import BaseStore, GetOp, InvalidNamespaceError, Item, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from hindsight_core import Hindsight, InvalidInputError
from hindsight_langchain import HindsightStore

from .conftest import RecordingToolModel


@pytest.fixture
def store(hs: Hindsight) -> HindsightStore:
    return HindsightStore(hs, root=f"t{uuid.uuid4().hex[:10]}")


def _view(result: Any) -> Any:
    """What a caller compares: namespace, key and value of items (scores only where no query ranks)."""
    if isinstance(result, Item):
        return (result.namespace, result.key, result.value, getattr(result, "score", None))
    if isinstance(result, list):
        return [_view(r) for r in result]
    return result


class Both:
    """Runs each call on both stores, sync or async, and checks the results agree."""

    def __init__(self, ours: BaseStore, ref: BaseStore, mode: str) -> None:
        self.ours, self.ref, self.mode = ours, ref, mode

    async def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        results = []
        for store in (self.ours, self.ref):
            if self.mode == "sync":
                results.append(getattr(store, method)(*args, **kwargs))
            else:
                results.append(await getattr(store, f"a{method}")(*args, **kwargs))
        assert _view(results[0]) == _view(results[1]), (method, args, kwargs)
        return results[0]


SEQUENCE: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("put", (("docs", "u1"), "a", {"text": "User is allergic to peanuts", "n": 1, "tags": ["health"]}), {}),
    ("put", (("docs", "u1"), "b", {"text": "User likes hiking in the Alps", "n": 5, "meta": {"src": "chat"}}), {}),
    ("put", (("docs", "u1"), "c", {"text": "internal note", "n": 9}), {"index": False}),
    ("put", (("docs", "u2"), "a", {"text": "User likes jazz", "n": 2, "meta": {"src": "form"}}), {}),
    ("put", (("other", "u1", "deep"), "z", {"text": "nested", "n": 3}), {"index": ["text"]}),
    ("get", (("docs", "u1"), "a"), {}),
    ("get", (("docs", "u1"), "missing"), {}),
    ("put", (("docs", "u1"), "a", {"text": "User is allergic to peanuts and shellfish", "n": 4}), {}),
    ("get", (("docs", "u1"), "a"), {}),
    ("search", (("docs", "u1"),), {}),
    ("search", (("docs",),), {}),
    ("search", ((),), {}),
    ("search", (("docs",),), {"limit": 2}),
    ("search", (("docs",),), {"limit": 2, "offset": 1}),
    ("search", (("docs",),), {"filter": {"n": 5}}),
    ("search", (("docs",),), {"filter": {"meta": {"src": "form"}}}),
    ("search", (("docs",),), {"filter": {"n": {"$gt": 2}}}),
    ("search", (("docs",),), {"filter": {"n": {"$gte": 2, "$lt": 9}}}),
    ("search", (("docs",),), {"filter": {"n": {"$ne": 5}}}),
    ("search", (("docs",),), {"filter": {"n": {"$eq": 9}}}),
    ("search", (("docs",),), {"filter": {"n": {"$lte": 4}, "text": "User likes jazz"}}),
    ("search", (("docs",),), {"filter": {"tags": ["health"]}}),
    ("list_namespaces", (), {}),
    ("list_namespaces", (), {"prefix": ("docs",)}),
    ("list_namespaces", (), {"suffix": ("u1",)}),
    ("list_namespaces", (), {"prefix": ("*", "u1")}),
    ("list_namespaces", (), {"max_depth": 1}),
    ("list_namespaces", (), {"prefix": ("docs",), "max_depth": 2, "limit": 1, "offset": 1}),
    ("delete", (("docs", "u1"), "b"), {}),
    ("get", (("docs", "u1"), "b"), {}),
    ("search", (("docs",),), {}),
]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_same_results_as_in_memory_store(store: HindsightStore, mode: str) -> None:
    both = Both(store, InMemoryStore(), mode)
    for method, args, kwargs in SEQUENCE:
        await both.call(method, *args, **kwargs)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_batch_reads_see_the_state_before_its_writes(store: HindsightStore, mode: str) -> None:
    ref = InMemoryStore()
    ops = [
        PutOp(("a",), "k", {"v": 1}),
        GetOp(("a",), "k"),
        PutOp(("a",), "k", {"v": 2}),
        SearchOp(("a",), None, 10, 0),
    ]
    for target in (store, ref):
        results = target.batch(ops) if mode == "sync" else await target.abatch(ops)
        assert results == [None, None, None, []]
        assert target.get(("a",), "k").value == {"v": 2}  # type: ignore[union-attr]


def test_query_search_is_ranked_by_the_engine(store: HindsightStore) -> None:
    ref = InMemoryStore()
    for target in (store, ref):
        target.put(("mem", "u1"), "hike", {"content": "User likes hiking in the Alps"})
        target.put(("mem", "u1"), "nuts", {"content": "User is allergic to peanuts"})
        target.put(("mem", "u1"), "color", {"content": "User's favourite colour is green"})
        target.put(("mem", "u1"), "raw", {"content": "peanuts allergy note kept out of search"}, index=False)
        target.put(("mem", "u2"), "nuts", {"content": "Other user is allergic to peanuts too"})
    ours = store.search(("mem", "u1"), query="what about my peanuts allergy")
    assert ours[0].key == "nuts" and isinstance(ours[0].score, float)
    assert {r.key for r in ours} == {r.key for r in ref.search(("mem", "u1"), query="peanuts allergy")}
    assert [r.key for r in ours if r.score is None] == ["raw"]  # index=False: never scored
    assert ours[-1].key == "raw"  # what recall cannot rank comes after what it ranks
    # a prefix search ranks across namespaces, each searched within its own wall
    across = store.search(("mem",), query="what about my peanuts allergy", limit=2)
    assert {(r.namespace, r.key) for r in across} == {(("mem", "u1"), "nuts"), (("mem", "u2"), "nuts")}


class _SameEmbeddings(Embeddings):
    """The engine's embedder as LangChain ``Embeddings``, so ``InMemoryStore`` embeds exactly as it does."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self.embedder.embed_documents(texts)]

    def embed_query(self, text: str) -> list[float]:
        return [float(x) for x in self.embedder.embed_query(text)]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_query_scores_are_cosine_similarities_as_in_memory_store_gives(
    store: HindsightStore, embedder: Any, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 39: a score is the cosine between the query's and the item's embedding (InMemoryStore with an
    index), not recall's fused score (a direct hit scored about 0.06); the order stays recall's."""
    ref = InMemoryStore(index={"dims": embedder.dim, "embed": _SameEmbeddings(embedder), "fields": ["content"]})
    items = {
        "nuts": "User is allergic to peanuts",
        "hike": "User likes hiking in the Alps",
        "tax": "The quarterly VAT return is due on the 20th",
    }
    for target in (store, ref):
        for key, text in items.items():
            target.put(("mem", "u1"), key, {"content": text})
        target.put(("mem", "u1"), "raw", {"content": "peanuts note kept out of search"}, index=False)
    query = "User is allergic to peanuts"
    recalls: list[Any] = []
    recall = store.engine.recall

    def spy(*args: Any, **kwargs: Any) -> Any:
        recalls.append(recall(*args, **kwargs))
        return recalls[-1]

    monkeypatch.setattr(store.engine, "recall", spy)
    if mode == "sync":
        ours = store.search(("mem", "u1"), query=query)
        theirs = ref.search(("mem", "u1"), query=query)
    else:
        ours = await store.asearch(("mem", "u1"), query=query)
        theirs = await ref.asearch(("mem", "u1"), query=query)
    score = {r.key: r.score for r in ours}
    assert ours[0].key == "nuts" and score["nuts"] is not None and score["nuts"] > 0.7  # a direct hit
    assert score["raw"] is None and ours[-1].key == "raw"  # index=False: never scored, as InMemoryStore
    assert all(-1.0 <= s <= 1.0 for k, s in score.items() if k != "raw")  # type: ignore[operator]
    assert all(score[k] < score["nuts"] for k in ("hike", "tax"))  # type: ignore[operator]
    expected = {r.key: r.score for r in theirs}
    for key in items:  # the same number InMemoryStore gives with the same embeddings
        assert score[key] == pytest.approx(expected[key], abs=1e-4), key
    # the order is recall's, whatever the cosines say
    ranked = [hit.memory.metadata["lg_item"]["key"] for result in recalls for hit in result.hits]
    assert ranked and [r.key for r in ours if r.key in ranked] == ranked
    # a search without a query lists, unscored, as InMemoryStore does
    listed = store.search(("mem", "u1")) if mode == "sync" else await store.asearch(("mem", "u1"))
    assert [r.score for r in listed] == [None] * 4


def test_exact_json_round_trips(store: HindsightStore) -> None:
    values: list[dict[str, Any]] = [
        {},
        {"int": 2**62, "neg": -7, "float": 0.1, "tiny": 1e-300, "one": 1.0, "bool": True, "none": None},
        {"nested": {"list": [1, "two", [3.5, {"four": None}], []], "empty": {}}, "ünïcode": "用户喜欢徒步 🥾"},
        {"text": "  spaces kept  \n", "quote": 'he said "hi"', "slash": "a\\b", "keys with . and $": 1},
        {"content": "x" * 30_000},  # longer than one memory's text: the value is still kept whole
    ]
    for i, value in enumerate(values):
        # the long one unindexed: embedding 20k characters is slow and not what this test is about
        store.put(("rt", "u:1 with spaces/and=signs"), f"key {i} / ü", value, index=False if i == 4 else None)
    for i, value in enumerate(values):
        item = store.get(("rt", "u:1 with spaces/and=signs"), f"key {i} / ü")
        assert item is not None
        assert json.dumps(item.value, sort_keys=True) == json.dumps(value, sort_keys=True)
        assert item.value == value and item.namespace == ("rt", "u:1 with spaces/and=signs")
    assert store.list_namespaces(prefix=("rt",)) == [("rt", "u:1 with spaces/and=signs")]


def test_upsert_keeps_created_at_and_bumps_updated_at(store: HindsightStore) -> None:
    store.put(("p",), "k", {"v": 1})
    first = store.get(("p",), "k")
    store.put(("p",), "k", {"v": 2})
    second = store.get(("p",), "k")
    assert first is not None and second is not None
    assert second.value == {"v": 2} and second.created_at == first.created_at
    assert second.updated_at >= first.updated_at
    assert len(store.search(("p",))) == 1


def test_bad_input_is_refused_and_changes_nothing(store: HindsightStore) -> None:
    store.put(("v",), "k", {"v": 1})
    with pytest.raises(InvalidInputError):
        store.put(("v",), "k", {"v": float("nan")})
    with pytest.raises(InvalidInputError):
        store.put(("v",), "k", {"v": object()})
    with pytest.raises(InvalidNamespaceError):
        store.put(("bad.label",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.batch([GetOp(("a.b",), "k")])
    with pytest.raises(InvalidInputError):  # one bad put refuses the whole batch
        store.batch([PutOp(("v",), "other", {"v": 2}), PutOp(("v",), "k", {"v": float("inf")})])
    assert store.get(("v",), "k").value == {"v": 1}  # type: ignore[union-attr]
    assert store.get(("v",), "other") is None


def test_deleting_the_last_item_removes_the_namespace(store: HindsightStore) -> None:
    store.put(("gone", "u1"), "k", {"v": 1})
    store.put(("kept", "u1"), "k", {"v": 1})
    store.delete(("gone", "u1"), "k")
    assert store.get(("never", "written"), "k") is None
    # as PostgresStore; InMemoryStore keeps emptied (and even merely read) namespaces listed
    assert store.list_namespaces() == [("kept", "u1")]


def test_items_are_durable_across_a_restart(tmp_path: Path, embedder: Any) -> None:
    with Hindsight(tmp_path / "data", embedder=embedder) as engine:
        HindsightStore(engine).put(("users", "42"), "prefs", {"theme": "dark", "langs": ["fr", "en"]})
    with Hindsight(tmp_path / "data", embedder=embedder) as engine:
        store = HindsightStore(engine)
        assert store.get(("users", "42"), "prefs").value == {"theme": "dark", "langs": ["fr", "en"]}  # type: ignore[union-attr]
        assert store.list_namespaces() == [("users", "42")]


def test_items_survive_years_of_sweeps(tmp_path: Path, embedder: Any) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    with Hindsight(tmp_path / "data", embedder=embedder, clock=lambda: now[0]) as engine:
        store = HindsightStore(engine)
        store.put(("users", "42"), "prefs", {"theme": "dark"})
        for _ in range(3):
            now[0] += timedelta(days=365)
            engine.sweep()
        assert store.get(("users", "42"), "prefs").value == {"theme": "dark"}  # type: ignore[union-attr]


@dataclass
class Ctx:
    user_id: str


def test_create_agent_tools_read_and_write_it(store: HindsightStore) -> None:
    @tool
    def save_preference(preference: str, runtime: ToolRuntime[Ctx]) -> str:
        """Save a user preference."""
        assert runtime.store is not None
        runtime.store.put(("prefs", runtime.context.user_id), "p1", {"content": preference})
        return "saved"

    model = RecordingToolModel(
        messages=iter(
            [
                AIMessage("", tool_calls=[{"name": "save_preference", "args": {"preference": "Dark mode"}, "id": "1"}]),
                AIMessage("Saved your preference."),
            ]
        )
    )
    agent = create_agent(model, tools=[save_preference], store=store, context_schema=Ctx)
    out = agent.invoke({"messages": [{"role": "user", "content": "I prefer dark mode"}]}, context=Ctx("ana"))
    assert out["messages"][-1].content == "Saved your preference."
    assert store.get(("prefs", "ana"), "p1").value == {"content": "Dark mode"}  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_langmem_memory_tools_work_on_it(store: HindsightStore, mode: str) -> None:
    from langmem import create_manage_memory_tool, create_search_memory_tool

    ns = ("memories", "ana")
    manage = create_manage_memory_tool(ns, store=store)
    search = create_search_memory_tool(ns, store=store)

    async def run(tool: Any, args: dict[str, Any]) -> Any:
        return tool.invoke(args) if mode == "sync" else await tool.ainvoke(args)

    created = await run(manage, {"content": "Ana prefers window seats", "action": "create"})
    key = created.split()[-1]
    found = json.loads(await run(search, {"query": "which seats does Ana prefer"}))
    assert [(f["key"], f["value"]) for f in found] == [(key, {"content": "Ana prefers window seats"})]
    assert isinstance(found[0]["score"], float)
    await run(manage, {"content": "Ana prefers aisle seats", "action": "update", "id": key})
    assert store.get(ns, key).value == {"content": "Ana prefers aisle seats"}  # type: ignore[union-attr]
    await run(manage, {"action": "delete", "id": key})
    assert store.get(ns, key) is None and store.search(("memories",)) == []
