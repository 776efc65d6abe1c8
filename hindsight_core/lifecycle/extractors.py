"""Extractors turn a batch of episodes into atomic memories (docs/architecture.md, lifecycle).

Two implementations behind one protocol: :class:`RuleExtractor` (offline default, English and Chinese
patterns) and :class:`LLMExtractor` (any ``(prompt: str) -> str`` callable; its reply is validated
against :class:`ExtractedMemory` and never written half-parsed)."""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError

from hindsight_core.lifecycle.rules import RuleExtractor
from hindsight_core.lifecycle.schema import (
    ExtractedMemory,
    ExtractionContext,
    ExtractionError,
    ExtractionResult,
    Extractor,
    ExtractorReply,
)
from hindsight_core.types import Memory


class RateLimiter:
    """At most ``per_minute`` calls in any 60 s window (real time: this caps spend, not simulated time)."""

    def __init__(
        self,
        per_minute: int,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.per_minute = per_minute
        self._monotonic = monotonic
        self._sleep = sleep
        self._calls: deque[float] = deque()
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Block until a call is allowed; returns the seconds waited."""
        waited = 0.0
        while True:
            with self._lock:
                now = self._monotonic()
                while self._calls and now - self._calls[0] >= 60.0:
                    self._calls.popleft()
                if len(self._calls) < self.per_minute:
                    self._calls.append(now)
                    return waited
                pause = 60.0 - (now - self._calls[0])
            self._sleep(pause)
            waited += pause


_PROMPT = """You distill a conversation into long-term memories about the user.
Read the episodes below and return ONLY a JSON object:
{{"memories": [{{"kind": "fact|preference|state|event|procedure", "content": "...", "importance": 1-5,
  "entities": ["..."], "source_ids": ["<episode id>", ...], "supersedes": ["<existing memory id>"],
  "trigger": "<procedures only>", "steps": ["<procedures only>"], "general": false}}]}}
Rules:
- one atomic memory per item, written as a standalone third-person sentence;
- fact: stable facts (name, home, job, allergies, budget, deadlines); preference: likes, dislikes,
  preferences; state: what the user is doing now; event: appointments, decisions, plans;
  procedure: a verified how-to, with a trigger condition and ordered steps;
- importance is an integer from 1 (trivia) to 5 (safety-critical, e.g. allergies);
- source_ids lists the ids of the episodes the memory comes from (only ids shown below);
- when a memory replaces an existing one (new value for the same thing), put the existing id in
  "supersedes"; preferences accumulate unless they contradict;
- "general": true only for knowledge that holds for anyone and says nothing about the user or the people
  they mention (how a product or a process works, a policy, a verified how-to); false otherwise;
- return {{"memories": []}} when there is nothing worth remembering.

Existing memories:
{existing}

Episodes:
{episodes}
"""

_JSON_BLOCK = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def _json_candidates(reply: str) -> list[str]:
    """The reply itself, fenced blocks, and the outermost {...} / [...] span: models wrap JSON in prose."""
    found = [reply.strip()]
    found += [m.group(1).strip() for m in _JSON_BLOCK.finditer(reply)]
    for open_, close in (("{", "}"), ("[", "]")):
        start, end = reply.find(open_), reply.rfind(close)
        if 0 <= start < end:
            found.append(reply[start : end + 1])
    return list(dict.fromkeys(c for c in found if c))


def parse_reply(reply: object, episode_ids: set[str], existing_ids: set[str]) -> list[ExtractedMemory]:
    """Validate a whole reply or raise ``ValueError`` with a message fit to send back to the model."""
    if not isinstance(reply, str):
        raise ValueError(f"the reply must be text, got {type(reply).__name__}")
    data: Any = None
    decode_error = "no JSON object found in the reply"
    for candidate in _json_candidates(reply):
        try:
            data = json.loads(candidate)
            break
        except json.JSONDecodeError as exc:
            decode_error = f"invalid JSON: {exc}"
    if data is None:
        raise ValueError(decode_error)
    if isinstance(data, list):
        data = {"memories": data}
    try:
        parsed = ExtractorReply.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"the JSON does not match the schema: {exc}") from None
    for index, item in enumerate(parsed.memories):
        unknown = [s for s in item.source_ids if s not in episode_ids]
        if unknown:
            raise ValueError(f"memories[{index}].source_ids {unknown} are not ids of the episodes given")
        stale = [s for s in item.supersedes if s not in existing_ids]
        if stale:
            raise ValueError(
                f"memories[{index}].supersedes {stale} are not ids of the existing memories given"
            )
    return parsed.memories


class LLMExtractor:
    """Extraction by any LLM: ``llm`` is a callable ``(prompt: str) -> str``.

    One prompt per batch. An invalid reply is sent back with the validation error up to ``max_retries``
    times; then :class:`ExtractionError` is raised and the engine marks the job failed, writing nothing
    of that batch. ``calls_per_minute`` caps spend (the engine's config sets it when left ``None``)."""

    name = "llm"
    uses_llm = True

    def __init__(
        self,
        llm: Callable[[str], str],
        *,
        max_retries: int | None = None,
        calls_per_minute: int | None = None,
        max_existing: int = 50,
    ) -> None:
        if not callable(llm):
            raise TypeError("llm must be a callable (prompt: str) -> str")
        self.llm = llm
        self.max_retries = max_retries
        self.max_existing = max_existing
        self.limiter: RateLimiter | None = RateLimiter(calls_per_minute) if calls_per_minute else None

    def configure(self, *, max_retries: int, calls_per_minute: int) -> None:
        """Fill what the caller left unset from the engine's config."""
        if self.max_retries is None:
            self.max_retries = max_retries
        if self.limiter is None:
            self.limiter = RateLimiter(calls_per_minute)

    def prompt(self, episodes: Sequence[Memory], context: ExtractionContext) -> str:
        existing = context.existing[-self.max_existing :]
        existing_text = "\n".join(f"[{m.id}] ({m.kind.value}) {m.content}" for m in existing) or "(none)"
        lines = []
        for e in episodes:
            when = e.occurred_at.strftime("%Y-%m-%d %H:%M")
            lines.append(f"[{e.id}] {when} {e.role or 'user'}: {e.content}")
        return _PROMPT.format(existing=existing_text, episodes="\n".join(lines))

    def extract(self, episodes: Sequence[Memory], context: ExtractionContext) -> ExtractionResult:
        prompt = self.prompt(episodes, context)
        episode_ids = {e.id for e in episodes}
        existing_ids = {m.id for m in context.existing}
        retries = 2 if self.max_retries is None else self.max_retries
        calls = 0
        error = ""
        for attempt in range(retries + 1):
            if self.limiter is not None:
                self.limiter.acquire()
            text = (
                prompt
                if attempt == 0
                else (
                    f"{prompt}\nYour previous reply was rejected: {error}\n"
                    "Reply again with ONLY the corrected JSON object."
                )
            )
            calls += 1
            try:
                reply = self.llm(text)
            except Exception as exc:  # a remote model failing is a failed attempt, like a bad reply
                error = f"the model call failed: {type(exc).__name__}: {exc}"
                continue
            try:
                memories = parse_reply(reply, episode_ids, existing_ids)
            except ValueError as exc:
                error = str(exc)
                continue
            for m in memories:  # only the rule extractor may claim exact slots
                m.slot = m.value = m.change_from = None
                m.exclusive = m.change = m.corroborates = False
            return ExtractionResult(memories, calls)
        raise ExtractionError(f"no valid reply after {calls} attempts: {error}"[:2000], llm_calls=calls)


__all__ = [
    "ExtractedMemory",
    "ExtractionContext",
    "ExtractionError",
    "ExtractionResult",
    "Extractor",
    "LLMExtractor",
    "RateLimiter",
    "RuleExtractor",
]
