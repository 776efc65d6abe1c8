"""Consolidation, decay and eviction (docs/architecture.md, lifecycle)."""
