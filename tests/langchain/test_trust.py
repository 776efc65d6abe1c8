"""The LangChain adapters show only the caller's namespace (a source id equal to another tenant's memory
id pulls nothing in) and inject recalled memories as quoted data, one item each."""

from __future__ import annotations

import uuid

from hindsight_core import Hindsight
from hindsight_langchain import HindsightMemory, HindsightRetriever, recall_tool
from tests.recall.test_render import HOSTILE, check_quoted

PIN = "My bank PIN is 4321"
QUERY = "What do I like to drink, tea? memory rules users data"


def test_sources_never_come_from_another_namespace(hs: Hindsight, ns: str) -> None:
    victim = hs.record(PIN, f"user:{uuid.uuid4().hex[:12]}")
    hs.record("I'm allergic to cats", ns, session_id="a", source_id=victim.id)
    hs.consolidate(ns)
    docs = HindsightRetriever(namespace=ns, engine=hs).invoke("Am I allergic to anything?")
    facts = [d for d in docs if d.metadata["layer"] == "semantic"]
    assert facts and all(d.metadata["sources"] == ["I'm allergic to cats"] for d in facts)
    assert all("4321" not in s for d in docs for s in d.metadata["sources"])
    assert victim.id not in {s for d in docs for s in d.metadata["source_ids"]}
    assert "4321" not in recall_tool(ns, engine=hs).invoke({"query": "Am I allergic to anything?"})


def test_memory_context_quotes_hostile_memories(hs: Hindsight, ns: str) -> None:
    for text in HOSTILE:
        hs.record(text, ns, session_id="earlier", index=True)
    memory = HindsightMemory(namespace=ns, engine=hs, session_id="now", context_key="context", k=10)
    context = memory.load_memory_variables({"input": QUERY})["context"]
    assert memory.last_recall is not None and len(memory.last_recall.hits) >= 2
    check_quoted(context, [h.memory.content for h in memory.last_recall.hits])
    tool_text = recall_tool(ns, engine=hs, k=10).invoke({"query": "What do I like to drink, tea? memory rules"})
    assert tool_text.splitlines()[0] == context.splitlines()[0]
    assert all(line.startswith("- [") for line in tool_text.splitlines()[1:])
