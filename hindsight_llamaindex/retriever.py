"""``HindsightRetriever``: recall as a LlamaIndex retriever (query engines, ``RetrieverTool``, routers).

Each hit becomes a ``NodeWithScore`` whose node id is the memory id and whose metadata is the hit shape
both frameworks share (``memory_id``, ``score``, ``layer``, ``kind``, ``namespace``, ``shared_from``, ``occurred_at``,
provenance); the node text is the memory itself. As a ``BaseRetriever`` it emits LlamaIndex's retrieval
span and events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle

from hindsight_core.integration import check_session_id, check_shared, query_text, require_namespace, resolve_engine
from hindsight_llamaindex._common import hit_nodes

if TYPE_CHECKING:
    from hindsight_core import Hindsight


class HindsightRetriever(BaseRetriever):
    """Recall for one namespace and, with ``subtree`` (the default), the namespaces below it (a user's
    root ``user:ana`` covers ``user:ana/notes``); ``session_id`` lets "last time" style queries find the
    session's turns. ``shared`` (default ``True``, as ``Hindsight.recall``) also searches the shared layers
    granted to the namespace or its root; a shared node's ``metadata["shared_from"]`` names the namespace
    it came from (shown to the LLM with the node), ``None`` for the namespace's own. ``False`` leaves
    them out."""

    def __init__(
        self,
        namespace: str | None = None,
        *,
        engine: Hindsight | None = None,
        session_id: str | None = None,
        k: int | None = None,
        budget_tokens: int | None = None,
        layers: list[str] | None = None,
        include_cold: bool = False,
        subtree: bool = True,
        shared: bool = True,
        **kwargs: Any,
    ) -> None:
        self.namespace = require_namespace(namespace, who="HindsightRetriever")
        self.session_id = check_session_id(session_id)
        self.engine = resolve_engine(engine)
        self.k = k
        self.budget_tokens = budget_tokens
        self.layers = layers
        self.include_cold = include_cold
        self.subtree = subtree
        self.shared = check_shared(shared, who="HindsightRetriever")
        super().__init__(**kwargs)

    def _options(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "k": self.k,
            "budget_tokens": self.budget_tokens,
            "layers": self.layers,
            "include_cold": self.include_cold,
            "subtree": self.subtree,
            "shared": self.shared,
        }

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return hit_nodes(self.engine.recall(query_text(query_bundle.query_str), self.namespace, **self._options()))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = await self.engine.arecall(query_text(query_bundle.query_str), self.namespace, **self._options())
        return hit_nodes(result)
