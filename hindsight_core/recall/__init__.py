"""The read side: query analysis, channels, fusion, reranking, scoring, budget (docs/architecture.md, read path)."""
