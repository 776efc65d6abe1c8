"""``HindsightRetriever``: recalled memories as LangChain ``Document`` objects, for RAG-style chains.

Each document's metadata is the hit shape both frameworks share
(:func:`hindsight_core.integration.hit_metadata`: ``memory_id``, ``score``, ``layer``, ``kind``,
``namespace``, ``occurred_at``, provenance). Being a ``BaseRetriever``, every call is a retriever run in
LangChain's callbacks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hindsight_core.integration import require

require("langchain_core", "langchain")

from langchain_core.callbacks import (  # noqa: E402
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from pydantic import Field, PrivateAttr, model_validator  # noqa: E402

from hindsight_core.integration import query_text, require_namespace, resolve_engine  # noqa: E402
from hindsight_langchain._common import hit_document  # noqa: E402

if TYPE_CHECKING:
    from hindsight_core import Hindsight, RecallResult


class HindsightRetriever(BaseRetriever):
    """Recall for one namespace and, with ``subtree`` (the default), every namespace below it (a user's
    root ``user:ana`` covers ``user:ana/store:memories``). ``k`` and ``budget_tokens`` bound what comes
    back; ``layers`` limits it (e.g. ``["semantic"]`` for distilled facts only)."""

    namespace: str
    session_id: str | None = None
    engine: Any = Field(default=None, exclude=True)
    k: int = 5
    budget_tokens: int = 800
    layers: list[str] | None = None
    subtree: bool = True

    _engine: Any = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        # Checked before pydantic runs, so a missing or bad namespace raises InvalidInputError.
        require_namespace(data.get("namespace"), who="HindsightRetriever")
        super().__init__(**data)

    @model_validator(mode="after")
    def _connect(self) -> HindsightRetriever:
        require_namespace(self.namespace, who="HindsightRetriever")
        self._engine = resolve_engine(self.engine)
        return self

    @property
    def hindsight(self) -> Hindsight:
        engine: Hindsight = self._engine
        return engine

    def _args(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "k": self.k,
            "budget_tokens": self.budget_tokens,
            "layers": self.layers,
            "subtree": self.subtree,
        }

    @staticmethod
    def _documents(result: RecallResult) -> list[Document]:
        return [hit_document(hit) for hit in result.hits]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return self._documents(self.hindsight.recall(query_text(query), self.namespace, **self._args()))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        return self._documents(await self.hindsight.arecall(query_text(query), self.namespace, **self._args()))


__all__ = ["HindsightRetriever", "hit_document"]
