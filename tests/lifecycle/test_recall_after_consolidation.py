"""End to end: after consolidation with the rule extractor, what recall injects (``to_prompt()``) has
the new value and not the superseded one, keeps accumulated preferences, and offers procedures.

The conversations mirror the consolidation and procedure cases of the shared scenario set."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from hindsight_core import Hindsight

CASES: list[dict[str, Any]] = [
    {
        "id": "zh-budget-update",
        "namespace": "user:liu",
        "sessions": [
            (
                "s1",
                "2026-05-01T10:00:00+08:00",
                [("user", "我们这个项目的预算上限是3万元。"), ("assistant", "明白，预算上限3万元。")],
            ),
            (
                "s2",
                "2026-05-20T10:00:00+08:00",
                [("user", "跟你说一下，预算调整了，上限改成5万元。"), ("assistant", "收到，预算上限更新为5万元。")],
            ),
        ],
        "query": ("2026-05-21T10:00:00+08:00", "我们的预算上限是多少？"),
        "expect": ["5万"],
        "forbid": ["3万"],
        "conflict": True,
    },
    {
        "id": "en-moved-city",
        "namespace": "user:amy",
        "sessions": [
            (
                "s1",
                "2026-01-05T09:00:00+00:00",
                [("user", "I live in Hangzhou, near the West Lake."), ("assistant", "Lovely place to live.")],
            ),
            (
                "s2",
                "2026-06-10T09:00:00+00:00",
                [
                    ("user", "Big news: we just moved to Shanghai last weekend."),
                    ("assistant", "Congratulations on the move!"),
                ],
            ),
        ],
        "query": ("2026-06-11T09:00:00+00:00", "Which city do I live in now?"),
        "expect": ["Shanghai"],
        "forbid": ["Hangzhou"],
    },
    {
        "id": "zh-style-preferences-accumulate",
        "namespace": "user:zhao",
        "sessions": [
            ("s1", "2026-02-01T10:00:00+08:00", [("user", "我喜欢简约风格的界面。")]),
            ("s2", "2026-02-08T10:00:00+08:00", [("user", "其实我也喜欢北欧风。")]),
            ("s3", "2026-02-15T10:00:00+08:00", [("user", "颜色上我偏好暖色调。")]),
        ],
        "query": ("2026-02-20T10:00:00+08:00", "我喜欢什么样的设计风格？"),
        "expect": ["简约", "北欧", "暖色"],
        "forbid": [],
    },
]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_recall_injects_the_consolidated_view(engine: Hindsight, clock: Any, case: dict[str, Any]) -> None:
    ns = case["namespace"]
    for session_id, start, turns in case["sessions"]:
        for i, (role, text) in enumerate(turns):
            clock.set(datetime.fromisoformat(start) + timedelta(minutes=i))
            engine.record(text, ns, session_id=session_id, role=role)
    assert engine.consolidate(ns).status == "done"
    at, text = case["query"]
    clock.set(datetime.fromisoformat(at))
    result = engine.recall(text, ns, session_id="s9", k=5)
    prompt = result.to_prompt()
    for wanted in case["expect"]:
        assert wanted in prompt
    for unwanted in case["forbid"]:
        assert unwanted not in prompt
    hit_ids = {h.memory.id for h in result.hits}
    for hit in result.hits:
        assert hit.memory.status.value == "active"
    if case.get("conflict"):
        superseded = [m for m in engine.store.select("namespace = ? AND status = 'superseded'", (ns,))]
        assert superseded and all(m.id not in hit_ids for m in superseded)


def test_procedure_surfaces_when_its_trigger_matches(engine: Hindsight, clock: Any) -> None:
    engine.add_procedure("用户申请退款", ["核对订单号", "核对支付渠道", "核对金额"], "agent:support")
    engine.add_procedure("用户忘记密码", ["验证手机号", "发送重置链接"], "agent:support")
    clock.advance(days=30)
    prompt = engine.recall("有个用户要退款，我该怎么处理？", "agent:support", k=5).to_prompt()
    assert "核对订单号" in prompt
