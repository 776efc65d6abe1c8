"""Consolidation, decay and eviction (DESIGN.md "Lifecycle")."""
