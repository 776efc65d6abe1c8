"""Fixtures for the LangChain adapters: one engine per test module (tests isolate themselves by
namespace, which the engine walls off), and chat models that remember what they were sent."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import BaseMessage
from pydantic import Field

from hindsight_core import Hindsight


@pytest.fixture(scope="module")
def hs(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Hindsight]:
    engine = Hindsight(Path(tmp_path_factory.mktemp("hindsight")), embedder=embedder)
    yield engine
    engine.close()


@pytest.fixture
def ns() -> str:
    """A namespace no other test uses."""
    return f"user:{uuid.uuid4().hex[:12]}"


class RecordingListModel(FakeListChatModel):
    """``FakeListChatModel`` that keeps every prompt it was sent (what memory put in front of it)."""

    prompts: list[list[BaseMessage]] = Field(default_factory=list)

    def _call(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> str:
        self.prompts.append(list(messages))
        return super()._call(messages, *args, **kwargs)


class RecordingToolModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` that accepts tools (its scripted replies may call them) and keeps the
    messages of every call, system message included."""

    prompts: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> RecordingToolModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.prompts.append(list(messages))
        return super()._generate(messages, *args, **kwargs)
