"""LLMExtractor with LangChain's GenericFakeChatModel scripted as the remote model."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from hindsight_core import Hindsight, Kind, Layer, Status
from hindsight_core.lifecycle.extractors import LLMExtractor

from .conftest import ScriptedLLM


def _ids(prompt: str) -> list[str]:
    """Episode ids as the prompt shows them ("[<id>] 2026-03-01 09:00 user: ...")."""
    return re.findall(r"^\[([0-9A-Z]{26})\] \d{4}-", prompt, flags=re.MULTILINE)


def _reply(items: list[dict]) -> str:
    return json.dumps({"memories": items}, ensure_ascii=False)


def _semantic(hs: Hindsight, ns: str) -> list:
    return hs.store.select("namespace = ? AND layer IN ('semantic', 'procedural')", (ns,))


def test_valid_reply_is_written_with_citations(make_engine: Callable[..., Hindsight]) -> None:
    from langchain_core.messages import AIMessage

    llm = ScriptedLLM([])
    hs = make_engine(extractor=LLMExtractor(llm))
    episode = hs.record("I can't eat peanuts, they make me really sick.", "user:p", session_id="s1", source_id="D1:1")
    llm.model.messages = iter(
        [
            AIMessage(
                content=_reply(
                    [
                        {
                            "kind": "fact",
                            "content": "The user is allergic to peanuts",
                            "importance": 5,
                            "entities": ["peanuts"],
                            "source_ids": [episode.id],
                        },
                    ]
                )
            )
        ]
    )
    report = hs.consolidate("user:p")
    assert (report.status, report.created, report.llm_calls) == ("done", 1, 1)
    (fact,) = _semantic(hs, "user:p")
    assert fact.content == "The user is allergic to peanuts" and fact.importance == 5
    assert fact.source_ids == [episode.id]
    assert [e.dst for e in hs.store.edges(fact.id)] == [episode.id]
    assert _ids(llm.prompts[0]) == [episode.id]


def _engine_with(
    make_engine: Callable[..., Hindsight], replies: Callable[[str], list[str]]
) -> tuple[Hindsight, ScriptedLLM, str]:
    """Record one episode first (its id goes into the scripted replies), then build the engine's model."""
    from langchain_core.messages import AIMessage

    llm = ScriptedLLM([])
    hs = make_engine(extractor=LLMExtractor(llm))
    episode = hs.record("Let's go with the blue theme for the dashboard.", "user:q", session_id="s1")
    llm.model.messages = iter([AIMessage(content=r) for r in replies(episode.id)])
    return hs, llm, episode.id


def _ok(eid: str, content: str = "The user chose the blue theme for the dashboard") -> dict:
    return {"kind": "event", "content": content, "importance": 3, "entities": [], "source_ids": [eid]}


def test_prose_around_json_is_accepted(make_engine: Callable[..., Hindsight]) -> None:
    hs, _llm, _eid = _engine_with(
        make_engine,
        lambda eid: [
            "Sure! Here is what I extracted:\n```json\n" + _reply([_ok(eid)]) + "\n```\nLet me know if you need more."
        ],
    )
    report = hs.consolidate("user:q")
    assert (report.status, report.created, report.llm_calls) == ("done", 1, 1)


def test_missing_fields_are_retried_with_the_validation_error(make_engine: Callable[..., Hindsight]) -> None:
    hs, llm, _eid = _engine_with(
        make_engine,
        lambda eid: [
            _reply([{"kind": "event", "content": "The user chose blue", "source_ids": [eid]}]),  # no importance
            _reply([_ok(eid)]),
        ],
    )
    report = hs.consolidate("user:q")
    assert (report.status, report.created, report.llm_calls) == ("done", 1, 2)
    assert "importance" in llm.prompts[1] and "rejected" in llm.prompts[1]


def test_wrong_types_and_garbage_fail_the_job_and_write_nothing(
    make_engine: Callable[..., Hindsight],
) -> None:
    hs, _llm, _eid = _engine_with(
        make_engine,
        lambda eid: [
            _reply([{"kind": "event", "content": "x", "importance": "high", "source_ids": eid}]),  # wrong types
            _reply([{"kind": "opinion", "content": "x", "importance": 3, "source_ids": [eid]}]),  # bad kind
            "I'm sorry, I cannot help with that.",  # garbage
            _reply([_ok(eid, "ghost"), {"kind": "fact", "content": "half", "importance": 9, "source_ids": [eid]}]),
            _reply([_ok(eid)]),
        ],
    )
    report = hs.consolidate("user:q")
    assert (report.status, report.created, report.episodes, report.llm_calls) == ("failed", 0, 0, 3)
    assert report.error and "no valid reply" in report.error
    assert _semantic(hs, "user:q") == []
    jobs = hs.stats("user:q").namespaces["user:q"].consolidation_jobs
    assert (jobs["failed"], jobs["done"]) == (1, 0)
    # the episode stayed unconsolidated: the next run picks it up; a half-valid reply is not half-written
    report = hs.consolidate("user:q")
    assert (report.status, report.created, report.episodes) == ("done", 1, 1)
    assert [m.content for m in _semantic(hs, "user:q")] == ["The user chose the blue theme for the dashboard"]


def test_unknown_source_ids_are_rejected(make_engine: Callable[..., Hindsight]) -> None:
    hs, _llm, _eid = _engine_with(make_engine, lambda eid: [_reply([_ok("01ARZ3NDEKTSV4RRFFQ69G5FAV")])] * 3)
    report = hs.consolidate("user:q")
    assert report.status == "failed" and "not ids of the episodes" in (report.error or "")


def test_procedures_paraphrases_and_supersedes(make_engine: Callable[..., Hindsight], clock) -> None:
    from langchain_core.messages import AIMessage

    llm = ScriptedLLM([])
    hs = make_engine(extractor=LLMExtractor(llm))
    a = hs.record(
        "When a refund comes in I check the order number, then the payment channel.",
        "agent:s",
        session_id="s1",
    )
    b = hs.record("I like hiking.", "agent:s", session_id="s1")
    llm.model.messages = iter(
        [
            AIMessage(
                content=_reply(
                    [
                        {
                            "kind": "procedure",
                            "content": "refund handling",
                            "importance": 4,
                            "source_ids": [a.id],
                            "trigger": "用户申请退款",
                            "steps": ["核对订单号", "核对支付渠道"],
                        },
                        {
                            "kind": "preference",
                            "content": "The user likes hiking",
                            "importance": 3,
                            "source_ids": [b.id],
                        },
                    ]
                )
            )
        ]
    )
    hs.consolidate("agent:s")
    procedure = next(m for m in _semantic(hs, "agent:s") if m.kind == Kind.PROCEDURE)
    assert procedure.layer == Layer.PROCEDURAL
    assert procedure.content == "用户申请退款 → 1. 核对订单号 2. 核对支付渠道"
    assert procedure.metadata["trigger"] == "用户申请退款" and procedure.metadata["steps"] == [
        "核对订单号",
        "核对支付渠道",
    ]
    hiking = next(m for m in _semantic(hs, "agent:s") if m.kind == Kind.PREFERENCE)

    clock.advance(days=1)
    c = hs.record("Hiking is my thing.", "agent:s", session_id="s2")
    d = hs.record("Actually refunds now also need the amount checked.", "agent:s", session_id="s2")
    llm.model.messages = iter(
        [
            AIMessage(
                content=_reply(
                    [
                        {
                            "kind": "preference",
                            "content": "The user enjoys hiking",
                            "importance": 3,
                            "source_ids": [c.id],
                        },
                        {
                            "kind": "fact",
                            "content": "Refunds require checking the amount too",
                            "importance": 4,
                            "source_ids": [d.id],
                            "supersedes": [procedure.id],
                        },
                    ]
                )
            )
        ]
    )
    report = hs.consolidate("agent:s")
    assert (report.merged, report.superseded, report.created) == (1, 1, 1)
    assert procedure.id in llm.prompts[-1]  # existing memories are shown so the model can supersede them
    merged = hs.get(hiking.id)
    assert merged is not None and merged.source_ids == [b.id, c.id]  # near-duplicate folded in
    old = hs.get(procedure.id)
    assert old is not None and old.status == Status.SUPERSEDED


def test_rate_limiter_caps_calls_per_minute() -> None:
    from hindsight_core.lifecycle.extractors import RateLimiter

    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    limiter = RateLimiter(2, monotonic=lambda: now[0], sleep=sleep)
    assert limiter.acquire() == 0.0
    now[0] = 10.0
    assert limiter.acquire() == 0.0
    now[0] = 15.0
    assert limiter.acquire() == 45.0  # the third call waits until the first leaves the 60 s window
    assert slept == [45.0]


def test_engine_config_fills_the_extractor_caps(make_engine: Callable[..., Hindsight]) -> None:
    from hindsight_core import HindsightConfig
    from hindsight_core.lifecycle.config import LifecycleConfig

    extractor = LLMExtractor(ScriptedLLM([]))
    make_engine(
        HindsightConfig(lifecycle=LifecycleConfig(llm_calls_per_minute=7, llm_max_retries=4)), extractor=extractor
    )
    assert extractor.max_retries == 4
    assert extractor.limiter is not None and extractor.limiter.per_minute == 7
