"""One shared layer and one user, as both adapters' shared-layer tests need them: a namespace holding a
visa fact (and one on another matter), and a user planning a trip the fact answers."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from hindsight_core import Hindsight

VISA = "Visitors to Japan for up to 90 days need no visa, only a passport valid for the whole stay."
QUESTION = "Do I need a visa for a two-week trip to Japan?"


@dataclass(frozen=True)
class World:
    """A shared namespace holding the visa fact, and a user planning a trip to Japan."""

    kb: str
    user: str
    visa: str

    @property
    def ns(self) -> str:
        return f"user:{self.user}"

    @property
    def line(self) -> str:
        """How the visa fact reads in a prompt when it came from the shared layer."""
        return f'fact, shared from {self.kb}] "{VISA}"'


def plan_trip(hs: Hindsight) -> World:
    """Write the shared namespace and the user's earlier conversation (names unique per call); no grant."""
    kb, user = f"kb:{uuid.uuid4().hex[:10]}", uuid.uuid4().hex[:10]
    visa = hs.record(VISA, kb, layer="semantic", kind="fact").id
    hs.record("Trains in Switzerland run every half hour between the main cities.", kb, layer="semantic", kind="fact")
    for role, text in [("user", "I'm planning a trip to Japan in April with my sister."),
                       ("assistant", "April is cherry blossom season, lovely timing."),
                       ("user", "We want to see Kyoto and Osaka.")]:
        hs.record(text, f"user:{user}", session_id="earlier", role=role)
    return World(kb, user, visa)
