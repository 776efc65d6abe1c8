"""The ``forget_memory`` tool through LangChain's own tool interface: recall shows the ids it takes, a
call demotes (the memory drops in recall, reversibly) or with ``erase=True`` erases, and an id of another
namespace is "not found" and left alone."""

from __future__ import annotations

from langchain_core.tools import BaseTool

from hindsight_core import Hindsight
from hindsight_langchain import memory_tools

QUESTION = "what food do I like?"


def _ids_in_order(text: str, *ids: str) -> list[str]:
    return sorted((i for i in ids if f"(id: {i})" in text), key=text.index)


def test_forget_memory_demotes_then_erases(hs: Hindsight, ns: str) -> None:
    recall, _, forget = memory_tools(ns, engine=hs)
    assert isinstance(forget, BaseTool) and forget.name == "forget_memory"
    assert set(forget.args) == {"memory_id", "erase"}
    favourite = hs.record("My favourite food is sushi.", ns).id
    also = hs.record("I really love eating sushi for dinner.", ns).id
    assert _ids_in_order(recall.invoke({"query": QUESTION}), favourite, also) == [favourite, also]

    reply = forget.invoke({"memory_id": favourite})
    assert reply == f"Demoted memory {favourite}: it now ranks low and fades; it can be reinstated."
    assert _ids_in_order(recall.invoke({"query": QUESTION}), favourite, also) == [also, favourite]
    assert [d.by for d in hs.history(favourite).demotions] == ["tool:forget_memory"]

    assert forget.invoke({"memory_id": favourite, "erase": True}) == f"Erased memory {favourite}."
    assert hs.get(favourite) is None
    assert _ids_in_order(recall.invoke({"query": QUESTION}), favourite, also) == [also]


async def test_forget_memory_never_reaches_another_namespace(hs: Hindsight, ns: str) -> None:
    theirs = hs.record("My favourite food is sushi.", ns)
    *_, stranger = memory_tools(ns + "x", engine=hs)  # a sibling sharing the prefix, not a child
    *_, templated = memory_tools("user:{user_id}", engine=hs)
    for erase in (False, True):
        assert stranger.invoke({"memory_id": theirs.id, "erase": erase}) == f"No memory {theirs.id!r} found."
        said = await templated.ainvoke(
            {"memory_id": theirs.id, "erase": erase}, config={"configurable": {"user_id": "bob"}})
        assert said == f"No memory {theirs.id!r} found."
    assert stranger.invoke({"memory_id": "not-an-id"}) == "No memory 'not-an-id' found."
    assert hs.get(theirs.id) == theirs and hs.history(theirs.id).demotions == []

    user = ns.removeprefix("user:")
    said = await templated.ainvoke({"memory_id": theirs.id}, config={"configurable": {"user_id": user}})
    assert said.startswith(f"Demoted memory {theirs.id}")
    assert hs.history(theirs.id).demoted
