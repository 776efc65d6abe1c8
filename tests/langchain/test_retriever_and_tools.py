"""HindsightRetriever returns recalled memories as Documents; the recall and retain tools work sync and
async, inside the engine's namespace walls."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool

from hindsight_core import Hindsight, InvalidInputError
from hindsight_langchain import HindsightRetriever, memory_tools, recall_tool, retain_tool


def test_retriever_documents_carry_id_layer_kind_score_and_sources(hs: Hindsight, ns: str) -> None:
    fact = hs.record("User is allergic to peanuts", ns, layer="semantic", kind="fact", source_id="ep-1")
    hs.record("We talked about hiking in the Alps", ns)
    retriever = HindsightRetriever(namespace=ns, engine=hs)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke("what about my peanuts allergy")
    assert isinstance(docs[0], Document)
    assert docs[0].id == fact.id and docs[0].page_content == "User is allergic to peanuts"
    meta = docs[0].metadata
    assert (meta["memory_id"], meta["layer"], meta["kind"], meta["source_id"]) == (fact.id, "semantic", "fact", "ep-1")
    assert meta["source_ids"] == []  # provenance holds memory ids only; "ep-1" is the caller's id
    assert isinstance(meta["score"], float) and meta["channels"] and meta["namespace"] == ns
    assert all("Alps" not in d.page_content for d in docs)


async def test_retriever_async_and_walls(hs: Hindsight, ns: str) -> None:
    hs.record("User is allergic to peanuts", ns)
    docs = await HindsightRetriever(namespace=ns, engine=hs).ainvoke("what about my peanuts allergy")
    assert [d.page_content for d in docs] == ["User is allergic to peanuts"]
    assert await HindsightRetriever(namespace=ns + "x", engine=hs).ainvoke("what about my peanuts allergy") == []
    only_facts = HindsightRetriever(namespace=ns, engine=hs, layers=["semantic"])
    assert only_facts.invoke("what about my peanuts allergy") == []


def test_retriever_refuses_a_malformed_namespace(hs: Hindsight) -> None:
    with pytest.raises(InvalidInputError):
        HindsightRetriever(namespace="no spaces allowed", engine=hs)


def test_retain_then_recall_tools(hs: Hindsight, ns: str) -> None:
    save, recall = retain_tool(ns, engine=hs, session_id="s1"), recall_tool(ns, engine=hs)
    assert isinstance(save, BaseTool) and save.name == "save_memory" and recall.name == "recall_memory"
    assert set(save.args) == {"content", "importance"} and set(recall.args) == {"query"}
    reply = save.invoke({"content": "The user's daughter is called Lea", "importance": 4})
    stored = hs.find(ns)
    assert reply == f"Saved memory {stored[0].id}." and stored[0].importance == 4
    assert "The user's daughter is called Lea" in recall.invoke({"query": "what is my daughter Lea doing"})
    assert recall.invoke({"query": "quantum chromodynamics lattice"}) == "No relevant memories."
    with pytest.raises(InvalidInputError):
        save.invoke({"content": "   "})
    assert len(hs.find(ns)) == 1


async def test_tools_async(hs: Hindsight, ns: str) -> None:
    recall, save, _ = memory_tools(ns, engine=hs)
    await save.ainvoke({"content": "The user's car is a red Volvo"})
    assert "red Volvo" in await recall.ainvoke({"query": "what colour is my Volvo car"})
    other, *_ = memory_tools(ns + "x", engine=hs)
    assert await other.ainvoke({"query": "what colour is my Volvo car"}) == "No relevant memories."
