"""Any LangChain chat model as the consolidation LLM (``LLMExtractor``'s ``(prompt) -> str`` callable).

Structured output is used where the model supports it (tool calling bound to the extractor's reply
schema), so the reply is valid by construction; otherwise the model's text goes to the extractor as is,
which finds the JSON in it, validates it, and sends any validation error back to the model."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from hindsight_core.integration import require

require("langchain_core", "langchain")

from langchain_core.language_models import BaseChatModel  # noqa: E402
from pydantic import BaseModel  # noqa: E402

if TYPE_CHECKING:
    from hindsight_core import LLMExtractor


def _default_schema() -> type[BaseModel]:
    from hindsight_core.integration import ExtractorReply

    schema: type[BaseModel] = ExtractorReply
    return schema


class ChatModelLLM:
    """Wrap ``model`` as ``(prompt: str) -> str`` returning JSON of ``schema`` when it can."""

    def __init__(self, model: BaseChatModel, *, schema: type[BaseModel] | None = None, structured: bool = True) -> None:
        if not isinstance(model, BaseChatModel):
            raise TypeError(f"model must be a LangChain BaseChatModel, got {type(model).__name__}")
        self.model = model
        self.schema = schema or _default_schema()
        self.structured: Any = None
        if structured:
            try:
                self.structured = model.with_structured_output(self.schema)
            except NotImplementedError:  # no tool calling / JSON mode: fall back to text
                self.structured = None

    @property
    def uses_structured_output(self) -> bool:
        return self.structured is not None

    def __call__(self, prompt: str) -> str:
        if self.structured is not None:
            out = self.structured.invoke(prompt)
            if isinstance(out, BaseModel):
                return out.model_dump_json(exclude_none=True)
            return json.dumps(out, ensure_ascii=False)
        return self.model.invoke(prompt).text


def llm_extractor(model: BaseChatModel, *, structured: bool = True, **options: Any) -> LLMExtractor:
    """An ``LLMExtractor`` driven by a chat model: ``Hindsight(..., extractor=llm_extractor(m))``."""
    from hindsight_core import LLMExtractor

    return LLMExtractor(ChatModelLLM(model, structured=structured), **options)


__all__ = ["ChatModelLLM", "llm_extractor"]
