"""An extractor for the worker tests, loaded by ``hindsight worker --extractor slow_extractor:make``:
the real rule extractor, batch by batch as an LLM extractor runs, taking ``$HS_TEST_EXTRACT_DELAY``
seconds per batch, so a SIGTERM or SIGKILL can land in the middle of a consolidation job."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from hindsight_core.lifecycle.rules import RuleExtractor
from hindsight_core.lifecycle.schema import ExtractionContext, ExtractionResult
from hindsight_core.types import Memory


class SlowRules:
    name = "slow-rules"
    uses_llm = True  # one batch at a time, each committed before the next is extracted

    def __init__(self, delay: float) -> None:
        self._rules = RuleExtractor()
        self._delay = delay

    def extract(self, episodes: Sequence[Memory], context: ExtractionContext) -> ExtractionResult:
        time.sleep(self._delay)
        return self._rules.extract(episodes, context)


def make() -> SlowRules:
    return SlowRules(float(os.environ.get("HS_TEST_EXTRACT_DELAY", "0.5")))
