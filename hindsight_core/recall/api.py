"""The recall facet of the engine (``Hindsight.recall``)."""

from __future__ import annotations

from hindsight_core.facets import Facet


class RecallMixin(Facet):
    pass
