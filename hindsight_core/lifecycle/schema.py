"""The extractor protocol and the schema every extracted memory is validated against."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, model_validator

from hindsight_core.errors import HindsightError
from hindsight_core.types import Memory

MemoryKind = Literal["fact", "preference", "state", "event", "procedure"]
_Text = Annotated[StrictStr, Field(min_length=1, max_length=4000)]


class ExtractedMemory(BaseModel):
    """One atomic memory proposed by an extractor; the LLM reply schema is a list of these.

    ``source_ids`` are ids of the episodes in the batch it was read from. ``supersedes`` names ids of
    existing memories (shown in the prompt) that this one replaces. ``slot``/``value`` let the rule
    extractor say "same subject and attribute" exactly (``exclusive`` slots hold one value at a time);
    the LLM may leave them out and rely on ``supersedes``."""

    model_config = ConfigDict(extra="ignore")

    kind: MemoryKind
    content: _Text
    importance: StrictInt = Field(ge=1, le=5)
    entities: list[StrictStr] = Field(default_factory=list)
    source_ids: list[StrictStr] = Field(min_length=1)
    supersedes: list[StrictStr] = Field(default_factory=list)
    trigger: _Text | None = None
    steps: list[_Text] | None = None
    slot: StrictStr | None = None
    value: StrictStr | None = None
    exclusive: bool = False
    #: An explicit change ("migrated to", "搬到"): replaces a value of a non-exclusive slot too.
    change: bool = False
    change_from: StrictStr | None = None
    #: Read from an assistant's confirmation: only adds provenance to a memory that exists.
    corroborates: bool = False
    #: Holds for anyone, not about the person (how a product works, a policy, a procedure): what a
    #: consolidation may promote into a shared namespace it was granted write access to (sharing.py).
    #: Only an LLM says so; the rule extractor reads first-person statements, none of them general.
    general: bool = False

    @model_validator(mode="after")
    def _procedure_has_steps(self) -> ExtractedMemory:
        if self.kind == "procedure" and not self.steps:
            raise ValueError("a procedure needs 'trigger' and a non-empty 'steps' list")
        if self.kind == "procedure" and not self.trigger:
            raise ValueError("a procedure needs 'trigger' and a non-empty 'steps' list")
        return self


class ExtractorReply(BaseModel):
    memories: list[ExtractedMemory]


@dataclass
class ExtractionResult:
    memories: list[ExtractedMemory]
    llm_calls: int = 0


@dataclass
class ExtractionContext:
    """What an extractor may know besides the episodes: existing memories it could supersede."""

    namespace: str
    existing: list[Memory] = field(default_factory=list)


class ExtractionError(HindsightError):
    """The extractor gave up on a batch (e.g. every LLM reply was invalid); nothing of it was written."""

    def __init__(self, message: str, *, llm_calls: int = 0) -> None:
        super().__init__(message)
        self.llm_calls = llm_calls


@runtime_checkable
class Extractor(Protocol):
    name: str
    #: True when ``extract`` calls a (costly, rate-limited) model.
    uses_llm: bool

    def extract(self, episodes: Sequence[Memory], context: ExtractionContext) -> ExtractionResult: ...
