"""``HindsightRetriever``: recalled memories as LangChain ``Document`` objects, for RAG-style chains."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hindsight_core.optional import require

require("langchain_core", "langchain")

from langchain_core.callbacks import (  # noqa: E402
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from pydantic import Field, PrivateAttr, model_validator  # noqa: E402

from hindsight_langchain._common import resolve_engine  # noqa: E402

if TYPE_CHECKING:
    from hindsight_core import Hindsight
    from hindsight_core.recall.types import RecallHit, RecallResult


def hit_document(hit: RecallHit) -> Document:
    """One recalled memory; metadata carries what a caller needs to cite it or act on it (its id for
    ``forget``, the source episodes behind a distilled fact, the score and channels behind the rank)."""
    m = hit.memory
    return Document(
        id=m.id,
        page_content=m.content,
        metadata={
            "id": m.id,
            "namespace": m.namespace,
            "session_id": m.session_id,
            "layer": m.layer.value,
            "kind": m.kind.value,
            "role": m.role,
            "score": hit.score,
            "channels": dict(hit.channels),
            "reason": hit.reason,
            "source_ids": list(m.source_ids),
            "source_id": m.source_id,
            "sources": [s.content for s in hit.sources],
            "occurred_at": m.occurred_at.isoformat(),
            "importance": m.importance,
        },
    )


class HindsightRetriever(BaseRetriever):
    """Recall for one namespace. ``k`` and ``budget_tokens`` bound what comes back; ``layers`` limits it
    (e.g. ``["semantic"]`` for distilled facts only)."""

    namespace: str = "default"
    session_id: str | None = None
    engine: Any = Field(default=None, exclude=True)
    k: int = 5
    budget_tokens: int = 800
    layers: list[str] | None = None

    _engine: Any = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        # Checked before pydantic runs, so a bad namespace raises InvalidInputError, not ValidationError.
        from hindsight_core.validation import check_namespace

        if "namespace" in data:
            check_namespace(data["namespace"])
        super().__init__(**data)

    @model_validator(mode="after")
    def _connect(self) -> HindsightRetriever:
        from hindsight_core.validation import check_namespace

        check_namespace(self.namespace)
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
        }

    @staticmethod
    def _documents(result: RecallResult) -> list[Document]:
        return [hit_document(hit) for hit in result.hits]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return self._documents(self.hindsight.recall(query, self.namespace, **self._args()))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        return self._documents(await self.hindsight.arecall(query, self.namespace, **self._args()))


__all__ = ["HindsightRetriever", "hit_document"]
