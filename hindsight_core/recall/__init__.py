"""The read side: query analysis, channels, fusion, reranking, scoring, budget (DESIGN.md "Recall")."""
