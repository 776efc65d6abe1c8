"""``HindsightRetriever``: recalled memories as LangChain ``Document`` objects, for RAG-style chains.

Each document's metadata is the hit shape both frameworks share
(:func:`hindsight_core.integration.hit_metadata`: ``memory_id``, ``score``, ``layer``, ``kind``,
``namespace``, ``shared_from`` (the shared namespace of a memory a grant lent, else ``None``),
``occurred_at``, provenance). Being a ``BaseRetriever``, every call is a retriever run in LangChain's
callbacks."""

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

from hindsight_core.integration import check_shared, query_text, require_namespace, resolve_engine  # noqa: E402
from hindsight_langchain._common import hit_document, result_documents  # noqa: E402

if TYPE_CHECKING:
    from hindsight_core import Hindsight


class HindsightRetriever(BaseRetriever):
    """Recall for one namespace and, with ``subtree`` (the default), every namespace below it (a user's
    root ``user:ana`` covers ``user:ana/store:memories``). ``k`` and ``budget_tokens`` bound what comes
    back; ``layers`` limits it (e.g. ``["semantic"]`` for distilled facts only). ``shared`` (default
    ``True``, as ``Hindsight.recall``) also searches the shared layers granted to the namespace or its
    root; a shared document's ``metadata["shared_from"]`` names the namespace it came from (``None`` for
    the namespace's own). ``False`` leaves them out."""

    namespace: str
    session_id: str | None = None
    engine: Any = Field(default=None, exclude=True)
    k: int = 5
    budget_tokens: int = 800
    layers: list[str] | None = None
    subtree: bool = True
    shared: bool = True

    _engine: Any = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        # Checked before pydantic runs, so a missing or bad namespace raises InvalidInputError, and
        # ``shared="no"`` is refused instead of read as a bool.
        require_namespace(data.get("namespace"), who="HindsightRetriever")
        check_shared(data.get("shared", True), who="HindsightRetriever")
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
            "shared": self.shared,
        }

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return result_documents(self.hindsight.recall(query_text(query), self.namespace, **self._args()))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        return result_documents(await self.hindsight.arecall(query_text(query), self.namespace, **self._args()))


__all__ = ["HindsightRetriever", "hit_document"]
