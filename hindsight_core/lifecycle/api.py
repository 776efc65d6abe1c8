"""The lifecycle facet of the engine (consolidation, decay, eviction)."""

from __future__ import annotations

from hindsight_core.facets import Facet


class LifecycleMixin(Facet):
    pass
