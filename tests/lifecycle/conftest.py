"""Fixtures for the lifecycle tests: an engine factory (config, extractor) on the fixed clock, and a
scripted LangChain fake chat model wrapped as the plain ``(prompt) -> str`` callable LLMExtractor takes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from hindsight_core import Hindsight, HindsightConfig


class ScriptedLLM:
    """A LangChain fake chat model scripted reply by reply; remembers the prompts it was given."""

    def __init__(self, replies: list[str]) -> None:
        self.model = GenericFakeChatModel(messages=iter([AIMessage(content=r) for r in replies]))
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return str(self.model.invoke(prompt).content)


@pytest.fixture
def make_engine(tmp_path: Path, clock: Any, embedder: Any) -> Iterator[Callable[..., Hindsight]]:
    engines: list[Hindsight] = []

    def make(config: HindsightConfig | None = None, **kwargs: Any) -> Hindsight:
        hs = Hindsight(tmp_path / f"data{len(engines)}", clock=clock, embedder=embedder, config=config, **kwargs)
        engines.append(hs)
        return hs

    yield make
    for hs in engines:
        hs.close()
