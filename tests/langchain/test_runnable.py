"""with_memory: an LCEL chain recalls an earlier session's fact and records every turn; recall is a
retriever run in LangChain's callbacks; every call is scoped to the user named by the run."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

from hindsight_core import Hindsight, InvalidInputError
from hindsight_langchain import HindsightRunnable, with_memory

from .conftest import RecordingListModel


def _prompt() -> ChatPromptTemplate:
    return ChatPromptTemplate.from_messages(
        [("system", "Be brief.\n{memory}"), MessagesPlaceholder("history"), ("human", "{input}")]
    )


def _cfg(user: str, session: str, **extra: Any) -> Any:
    return {"configurable": {"user_id": user, "session_id": session}, **extra}


class RetrieverRuns(BaseCallbackHandler):
    """Keeps every retriever run it is told about (what LangSmith would show)."""

    def __init__(self) -> None:
        self.queries: list[str] = []
        self.documents: list[list[Document]] = []
        self.parents: list[UUID | None] = []

    def on_retriever_start(self, serialized: Any, query: str, *, parent_run_id: UUID | None = None, **kw: Any) -> None:
        self.queries.append(query)
        self.parents.append(parent_run_id)

    def on_retriever_end(self, documents: Any, **kw: Any) -> None:
        self.documents.append(list(documents))


def test_a_new_session_recalls_an_earlier_sessions_fact(hs: Hindsight, ns: str) -> None:
    model = RecordingListModel(responses=["Noted, vegan it is.", "Try a chickpea curry."])
    chain = with_memory(_prompt() | model, namespace=ns + ":{user_id}", engine=hs)
    assert isinstance(chain, HindsightRunnable)
    chain.invoke({"input": "I am vegan, no meat or dairy for me."}, config=_cfg("ana", "s1"))
    # the turn is in the session log (a transcript) and in long-term memory
    assert [m.content for m in hs.find(f"{ns}:ana", session_id="s1")] == [
        "I am vegan, no meat or dairy for me.",
        "Noted, vegan it is.",
    ]
    reply = chain.invoke({"input": "Suggest a dinner recipe for my vegan diet"}, config=_cfg("ana", "s2"))
    assert reply.content == "Try a chickpea curry."
    system = str(model.prompts[1][0].content)
    assert system.startswith("Be brief.\nRelevant memories") and "I am vegan, no meat or dairy for me." in system
    assert len(model.prompts[1]) == 2  # a new session: no history, the fact came from recall
    assert chain.last_recall is not None and chain.last_recall.hits


def test_history_replays_the_session_and_is_not_repeated_by_recall(hs: Hindsight, ns: str) -> None:
    model = RecordingListModel(responses=["Hi Ana.", "You are Ana."])
    chain = with_memory(_prompt() | model, namespace=ns + ":{user_id}", engine=hs)
    chain.invoke({"input": "My name is Ana."}, config=_cfg("ana", "s1"))
    chain.invoke({"input": "What is my name?"}, config=_cfg("ana", "s1"))
    assert [m.content for m in model.prompts[1][1:]] == ["My name is Ana.", "Hi Ana.", "What is my name?"]
    assert "My name is Ana." not in str(model.prompts[1][0].content)  # shown once, in the history


def test_the_wall_between_users_holds(hs: Hindsight, ns: str) -> None:
    model = RecordingListModel(responses=["ok", "Hello."])
    chain = with_memory(_prompt() | model, namespace=ns + ":{user_id}", engine=hs)
    chain.invoke({"input": "I am allergic to peanuts."}, config=_cfg("ana", "s1"))
    chain.invoke({"input": "What about my peanuts allergy?"}, config=_cfg("bob", "s1"))
    assert str(model.prompts[1][0].content) == "Be brief.\n"
    assert hs.find(f"{ns}:bob")[0].content == "What about my peanuts allergy?"


def test_a_call_without_the_user_is_refused_and_records_nothing(hs: Hindsight, ns: str) -> None:
    chain = with_memory(_prompt() | RecordingListModel(responses=["x"]), namespace=ns + ":{user_id}", engine=hs)
    with pytest.raises(InvalidInputError, match="user_id"):
        chain.invoke({"input": "hello"}, config={"configurable": {"session_id": "s1"}})
    assert [n for n in hs.namespaces() if n.startswith(ns)] == []


def test_recall_is_a_retriever_run_with_query_hits_and_scores(hs: Hindsight, ns: str) -> None:
    model = RecordingListModel(responses=["ok", "Porto."])
    chain = with_memory(_prompt() | model, namespace=ns + ":{user_id}", engine=hs)
    chain.invoke({"input": "I moved to Porto last month."}, config=_cfg("ana", "s1"))
    runs = RetrieverRuns()
    chain.invoke({"input": "Where did I move last month?"}, config=_cfg("ana", "s2", callbacks=[runs]))
    assert runs.queries == ["Where did I move last month?"]
    assert runs.parents[0] is not None  # a child of the chain's run
    docs = runs.documents[0]
    assert docs[0].page_content == "I moved to Porto last month."
    assert docs[0].metadata["namespace"] == f"{ns}:ana" and isinstance(docs[0].metadata["score"], float)
    assert docs[0].metadata["memory_id"] == docs[0].id


async def test_async_path_recalls_and_records(hs: Hindsight, ns: str) -> None:
    model = RecordingListModel(responses=["Noted.", "Skip the satay."])
    chain = with_memory(_prompt() | model, namespace=ns + ":{user_id}", engine=hs)
    await chain.ainvoke({"input": "I am allergic to peanuts."}, config=_cfg("cy", "a1"))
    await chain.ainvoke({"input": "Dinner ideas given my peanuts allergy?"}, config=_cfg("cy", "a2"))
    assert "I am allergic to peanuts." in str(model.prompts[1][0].content)
    entries = await hs.atranscript(f"{ns}:cy", "a2") or []
    said = [e["message"]["data"]["content"] for e in entries]
    assert said == ["Dinner ideas given my peanuts allergy?", "Skip the satay."]


def test_without_a_session_the_turn_is_still_remembered(hs: Hindsight, ns: str) -> None:
    model = RecordingListModel(responses=["ok"])
    chain = with_memory(_prompt() | model, namespace=ns, engine=hs)
    chain.invoke({"input": "My sister is called Inês."})
    assert [m.content for m in hs.find(ns)] == ["My sister is called Inês.", "ok"]
    assert hs.transcript_keys(ns) == []


def test_stream_yields_the_chains_chunks_and_records_the_whole_reply(hs: Hindsight, ns: str) -> None:
    model = RecordingListModel(responses=["Noted, no shellfish.", "Try the mushroom risotto."])
    chain = with_memory(_prompt() | model, namespace=ns + ":{user_id}", engine=hs)
    plain = list((_prompt() | RecordingListModel(responses=["Noted, no shellfish."])).stream(
        {"input": "x", "memory": "", "history": []}))
    chunks = list(chain.stream({"input": "I'm allergic to shellfish."}, config=_cfg("di", "t1")))
    assert len(chunks) == len(plain) > 1  # streamed as the chain streams, not one final chunk
    assert "".join(c.content for c in chunks) == "Noted, no shellfish."
    chunks = list(chain.stream({"input": "What should I order at the seafood place?"}, config=_cfg("di", "t2")))
    assert "".join(c.content for c in chunks) == "Try the mushroom risotto."
    assert chain.last_recall is not None
    assert "I'm allergic to shellfish." in [h.memory.content for h in chain.last_recall.hits]
    entries = hs.transcript(f"{ns}:di", "t2") or []
    assert [e["message"]["data"]["content"] for e in entries] == [
        "What should I order at the seafood place?", "Try the mushroom risotto."]


async def test_astream_of_a_string_chain_records_the_joined_text(hs: Hindsight, ns: str) -> None:
    from langchain_core.output_parsers import StrOutputParser

    model = RecordingListModel(responses=["Sure, oat milk."])
    chain = with_memory(_prompt() | model | StrOutputParser(), namespace=ns + ":{user_id}", engine=hs)
    chunks = [c async for c in chain.astream({"input": "I'm lactose intolerant."}, config=_cfg("ed", "u1"))]
    assert len(chunks) > 1 and "".join(chunks) == "Sure, oat milk."
    assert [m.content for m in hs.find(f"{ns}:ed", session_id="u1")] == ["I'm lactose intolerant.", "Sure, oat milk."]


def test_each_users_recall_stays_theirs_when_calls_overlap(hs: Hindsight, ns: str) -> None:
    """One chain serves two users at once: ``last_recall`` is whoever ran last, ``last_recall_for`` each
    user's own, however the calls interleave."""
    from concurrent.futures import ThreadPoolExecutor

    hs.record("I am allergic to peanuts.", f"{ns}:ana", session_id="s0")
    hs.record("I keep bees on my roof.", f"{ns}:ben", session_id="s0")
    model = RecordingListModel(responses=["ok"] * 40)
    chain = with_memory(_prompt() | model, namespace=ns + ":{user_id}", engine=hs, record=False)
    asks = [("ana", "What am I allergic to?"), ("ben", "What do I keep on my roof?")] * 10
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda a: chain.invoke({"input": a[1]}, config=_cfg(a[0], "s1")), asks))
    ana, ben = chain.last_recall_for(f"{ns}:ana"), chain.last_recall_for(f"{ns}:ben")
    assert ana is not None and ana.query == "What am I allergic to?" and "peanuts" in ana.to_prompt()
    assert ben is not None and ben.query == "What do I keep on my roof?" and "bees" in ben.to_prompt()
    assert chain.last_recall in (ana, ben)
    assert chain.last_recall_for(f"{ns}:nobody") is None


def test_a_prompt_without_a_memory_slot_is_named_at_wrapping(hs: Hindsight, ns: str) -> None:
    """A prompt reused from RunnableWithMessageHistory has no {memory}: the memories would be handed to
    the chain and never shown to the model. Wrapping it says so; a prompt with the slot says nothing."""
    bare = ChatPromptTemplate.from_messages([MessagesPlaceholder("history"), ("human", "{input}")])
    model = RecordingListModel(responses=["ok"])
    with pytest.warns(UserWarning, match=r"no 'memory' variable.*\{memory\}"):
        with_memory(bare | model, namespace=ns + ":{user_id}", engine=hs)
    with pytest.warns(UserWarning, match="no 'facts' variable"):
        with_memory(_prompt() | model, namespace=ns + ":{user_id}", engine=hs, memory_key="facts")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with_memory(_prompt() | model, namespace=ns + ":{user_id}", engine=hs)


def test_an_input_under_another_key_names_input_key(hs: Hindsight, ns: str) -> None:
    chain = with_memory(_prompt() | RecordingListModel(responses=["ok"]), namespace=ns + ":{user_id}", engine=hs)
    with pytest.raises(InvalidInputError, match=r"input_key='question'"):
        chain.invoke({"question": "What is my diet?"}, config=_cfg("ana", "s1"))
    assert hs.find(f"{ns}:ana") == []
