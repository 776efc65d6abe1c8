"""``HindsightRetriever``: recall as a LlamaIndex retriever (query engines, ``RetrieverTool``, routers).

Each hit becomes a ``NodeWithScore`` whose node id is the memory id and whose metadata carries the
memory's layer, kind, time, provenance (the cited episodes of a distilled memory) and per-channel
scores; the node text is the memory itself."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from hindsight_llamaindex._common import DEFAULT_NAMESPACE, hit_metadata, resolve_engine

if TYPE_CHECKING:
    from hindsight_core import Hindsight
    from hindsight_core.recall.types import RecallResult

#: Metadata an LLM does not need to read next to the memory text (ids, scores, provenance).
_HIDDEN_FROM_LLM = [
    "memory_id",
    "namespace",
    "session_id",
    "source_ids",
    "entities",
    "score",
    "channels",
    "reason",
    "sources",
    "metadata",
    "status",
    "importance",
    "layer",
    "role",
]


class HindsightRetriever(BaseRetriever):
    """Recall for one namespace; ``session_id`` lets "last time" style queries find the session's turns."""

    def __init__(
        self,
        namespace: str = DEFAULT_NAMESPACE,
        *,
        engine: Hindsight | None = None,
        session_id: str | None = None,
        k: int | None = None,
        budget_tokens: int | None = None,
        layers: list[str] | None = None,
        include_cold: bool = False,
        **kwargs: Any,
    ) -> None:
        from hindsight_core.validation import check_namespace, check_session_id

        self.namespace = check_namespace(namespace)
        self.session_id = check_session_id(session_id)
        self.engine = resolve_engine(engine)
        self.k = k
        self.budget_tokens = budget_tokens
        self.layers = layers
        self.include_cold = include_cold
        super().__init__(**kwargs)

    def _options(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "k": self.k,
            "budget_tokens": self.budget_tokens,
            "layers": self.layers,
            "include_cold": self.include_cold,
        }

    @staticmethod
    def _nodes(result: RecallResult) -> list[NodeWithScore]:
        nodes = []
        for hit in result.hits:
            node = TextNode(
                id_=hit.memory.id,
                text=hit.memory.content,
                metadata=hit_metadata(hit),
                excluded_llm_metadata_keys=list(_HIDDEN_FROM_LLM),
                excluded_embed_metadata_keys=list(_HIDDEN_FROM_LLM),
            )
            nodes.append(NodeWithScore(node=node, score=hit.score))
        return nodes

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(self.engine.recall(query_bundle.query_str, self.namespace, **self._options()))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(await self.engine.arecall(query_bundle.query_str, self.namespace, **self._options()))
