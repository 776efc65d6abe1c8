"""Any LlamaIndex ``LLM`` as the consolidation model: ``LLMExtractor`` wants ``(prompt: str) -> str``.

Chat models get the prompt as one user message, completion models as the prompt. A reply that contains
a valid extraction (possibly wrapped in prose or a code fence) is normalised to its JSON; anything else
is passed through unchanged, so the extractor can send the validation error back to the model."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms.llm import LLM
from pydantic import BaseModel, ValidationError

if TYPE_CHECKING:
    from hindsight_core.lifecycle.extractors import LLMExtractor


_FENCED = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def _json_candidates(reply: str) -> list[str]:
    """The reply, its fenced blocks, and its outermost {...} / [...] span: models wrap JSON in prose."""
    found = [reply.strip(), *(m.group(1).strip() for m in _FENCED.finditer(reply))]
    for open_, close in (("{", "}"), ("[", "]")):
        start, end = reply.find(open_), reply.rfind(close)
        if 0 <= start < end:
            found.append(reply[start : end + 1])
    return list(dict.fromkeys(c for c in found if c))


class LlamaIndexLLM:
    """``(prompt: str) -> str`` over a LlamaIndex LLM (OpenAI, Ollama, Anthropic, a mock ...)."""

    def __init__(self, llm: LLM, *, schema: type[BaseModel] | None = None) -> None:
        if not isinstance(llm, LLM):
            raise TypeError(f"llm must be a LlamaIndex LLM, got {type(llm).__name__}")
        if schema is None:
            from hindsight_core.lifecycle.schema import ExtractorReply

            schema = ExtractorReply
        self.llm = llm
        self.schema = schema

    def _normalised(self, text: str) -> str:
        for candidate in _json_candidates(text):
            try:
                data: Any = json.loads(candidate)
            except json.JSONDecodeError:
                continue
            if isinstance(data, list):
                data = {"memories": data}
            try:
                return self.schema.model_validate(data).model_dump_json(exclude_none=True)
            except ValidationError:
                continue
        return text

    def __call__(self, prompt: str) -> str:
        if self.llm.metadata.is_chat_model:
            reply = self.llm.chat([ChatMessage(role=MessageRole.USER, content=prompt)]).message.content or ""
        else:
            reply = self.llm.complete(prompt).text
        return self._normalised(reply)


def llm_extractor(llm: LLM, **options: Any) -> LLMExtractor:
    """An ``LLMExtractor`` driven by a LlamaIndex LLM: ``Hindsight(..., extractor=llm_extractor(llm))``."""
    from hindsight_core.lifecycle.extractors import LLMExtractor

    return LLMExtractor(LlamaIndexLLM(llm), **options)
