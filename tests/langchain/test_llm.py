"""A LangChain chat model as the consolidation LLM: structured output where the model can, its text
otherwise, and the LLMExtractor built on it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage

from hindsight_core.lifecycle.extractors import LLMExtractor
from hindsight_core.lifecycle.schema import ExtractionContext, ExtractionError
from hindsight_core.types import Memory
from hindsight_langchain import ChatModelLLM, llm_extractor

from .conftest import RecordingToolModel

NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _episode(mid: str, text: str) -> Memory:
    return Memory(id=mid, namespace="user:1", content=text, occurred_at=NOW, created_at=NOW, updated_at=NOW)


REPLY = {
    "memories": [{"kind": "fact", "content": "The user is allergic to peanuts.", "importance": 5, "source_ids": ["E1"]}]
}


def test_text_model_reply_in_prose_is_extracted() -> None:
    fenced = "Here you go:\n```json\n" + json.dumps(REPLY) + "\n```"
    llm = ChatModelLLM(FakeListChatModel(responses=[fenced]))
    assert not llm.uses_structured_output
    assert llm("extract") == fenced  # the text goes to the extractor as is
    episodes = [_episode("E1", "I'm allergic to peanuts")]
    result = LLMExtractor(llm).extract(episodes, ExtractionContext(namespace="user:1"))
    assert [m.content for m in result.memories] == ["The user is allergic to peanuts."]


def test_tool_calling_model_uses_structured_output() -> None:
    model = RecordingToolModel(
        messages=iter([AIMessage("", tool_calls=[{"name": "ExtractorReply", "args": REPLY, "id": "x"}])])
    )
    llm = ChatModelLLM(model)
    assert llm.uses_structured_output
    assert json.loads(llm("extract"))["memories"][0]["importance"] == 5


def test_llm_extractor_from_a_chat_model_extracts_and_retries() -> None:
    model = FakeListChatModel(responses=["not json at all", json.dumps(REPLY)])
    extractor = llm_extractor(model)
    assert isinstance(extractor, LLMExtractor)
    result = extractor.extract([_episode("E1", "I'm allergic to peanuts")], ExtractionContext(namespace="user:1"))
    assert [m.content for m in result.memories] == ["The user is allergic to peanuts."]
    assert result.llm_calls == 2


def test_llm_extractor_gives_up_on_a_model_that_never_validates() -> None:
    extractor = llm_extractor(FakeListChatModel(responses=["nope"]), max_retries=1)
    with pytest.raises(ExtractionError):
        extractor.extract([_episode("E1", "hello")], ExtractionContext(namespace="user:1"))


def test_only_chat_models_are_accepted() -> None:
    bad: Any = lambda prompt: prompt  # noqa: E731
    with pytest.raises(TypeError):
        ChatModelLLM(bad)
