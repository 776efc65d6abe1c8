"""Pure pydantic results of recall: what an adapter injects and why each memory was chosen."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from hindsight_core.types import Kind, Layer, Memory


class TimeWindow(BaseModel):
    """A half-open interval ``[start, end)`` named by a time expression in the query."""

    start: datetime
    end: datetime
    expression: str = ""


class QueryAnalysis(BaseModel):
    query: str
    history_cues: list[str] = Field(default_factory=list)
    time_window: TimeWindow | None = None
    entities: list[str] = Field(default_factory=list)
    #: A question whose subject is the user ("Do I have any allergies?", "我住在哪？"): only memory can
    #: answer it, so it asks for less evidence than an open request, like a history cue.
    about_user: bool = False

    @property
    def has_history_cue(self) -> bool:
        return bool(self.history_cues)


class RecallHit(BaseModel):
    memory: Memory
    score: float
    channels: dict[str, float] = Field(default_factory=dict)
    reason: str = ""
    #: For semantic memories: the cited episodes, as short excerpts.
    sources: list[Memory] = Field(default_factory=list)
    #: The text injected for this hit (truncated content plus source excerpts).
    text: str = ""


class Conflict(BaseModel):
    superseded: Memory
    successor: Memory


def render_hit(memory: Memory, body: str, sources: list[str] | None = None) -> str:
    """One injected line. The date lets the model weigh an old memory; distilled memories say what
    they are (fact, preference, procedure), a plain episode needs no label."""
    label = "" if memory.layer == Layer.EPISODIC and memory.kind in (Kind.TURN, Kind.EVENT) else f" {memory.kind.value}"
    line = f"- [{memory.occurred_at.date().isoformat()}{label}] {body}"
    for excerpt in sources or []:
        line += f"\n    source: {excerpt}"
    return line


class RecallResult(BaseModel):
    query: str
    namespace: str
    hits: list[RecallHit] = Field(default_factory=list)
    conflicts: list[Conflict] = Field(default_factory=list)
    tokens: int = 0
    analysis: QueryAnalysis
    #: The derived indexes ("vector", "activation") that failed during this recall: their channels were
    #: computed from the relational store and the namespace snapshot instead.
    degraded: list[str] = Field(default_factory=list)

    def to_prompt(self) -> str:
        """The text an adapter injects; empty when nothing relevant was found, so no header is wasted."""
        if not self.hits:
            return ""
        lines = ["Relevant memories (most relevant first):"]
        lines += [hit.text or render_hit(hit.memory, hit.memory.content) for hit in self.hits]
        return "\n".join(lines)

    @property
    def memories(self) -> list[Memory]:
        return [hit.memory for hit in self.hits]
