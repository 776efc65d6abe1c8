"""Any LlamaIndex ``LLM`` as the consolidation model: ``LLMExtractor`` wants ``(prompt: str) -> str``.

Chat models get the prompt as one user message, completion models as the prompt. The reply goes to the
extractor as is: it finds the JSON in prose or a code fence, validates it, and sends any validation
error back to the model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms.llm import LLM

if TYPE_CHECKING:
    from hindsight_core import LLMExtractor


class LlamaIndexLLM:
    """``(prompt: str) -> str`` over a LlamaIndex LLM (OpenAI, Ollama, Anthropic, a mock ...)."""

    def __init__(self, llm: LLM) -> None:
        if not isinstance(llm, LLM):
            raise TypeError(f"llm must be a LlamaIndex LLM, got {type(llm).__name__}")
        self.llm = llm

    def __call__(self, prompt: str) -> str:
        if self.llm.metadata.is_chat_model:
            return self.llm.chat([ChatMessage(role=MessageRole.USER, content=prompt)]).message.content or ""
        return self.llm.complete(prompt).text


def llm_extractor(llm: LLM, **options: Any) -> LLMExtractor:
    """An ``LLMExtractor`` driven by a LlamaIndex LLM: ``Hindsight(..., extractor=llm_extractor(llm))``."""
    from hindsight_core import LLMExtractor

    return LLMExtractor(LlamaIndexLLM(llm), **options)
