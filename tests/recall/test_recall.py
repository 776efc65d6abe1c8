"""``hs.recall`` end to end on the real engine (SQLite, Chroma, e5): what an adapter would inject."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hindsight_core import Hindsight, InvalidInputError, RecallHit, RecallResult
from hindsight_core.recall.types import Conflict
from hindsight_core.types import Edge, EdgeKind, Layer, Status

from .conftest import NOW, START, record_history, record_session


def test_recall_finds_the_memory_and_explains_why(history_engine: Hindsight) -> None:
    res = history_engine.recall("比亚迪的续航怎么样？", "user:wang", k=3)
    assert isinstance(res, RecallResult) and res.hits and isinstance(res.hits[0], RecallHit)
    assert "续航" in res.hits[0].memory.content
    assert res.hits[0].channels and "vector" in res.hits[0].channels
    assert "z=" in res.hits[0].reason
    assert [h.score for h in res.hits] == sorted((h.score for h in res.hits), reverse=True)
    prompt = res.to_prompt()
    assert "续航" in prompt and res.tokens == history_engine.tokens.count(prompt) and res.tokens > 0


def test_history_cue_brings_back_the_earlier_session(history_engine: Hindsight) -> None:
    res = history_engine.recall("上次你说那套方案到底包不包含税费？", "user:wang", session_id="s4", k=5)
    assert res.analysis.history_cues == ["上次"]
    assert "A方案含税报价为12.8万元" in res.to_prompt()


def test_cross_lingual_recall(history_engine: Hindsight) -> None:
    res = history_engine.recall("What is my daughter learning?", "user:wang", k=3)
    assert "violin" in res.to_prompt()
    res = history_engine.recall("Which electric car has the longer driving range?", "user:wang", k=3)
    assert "续航" in res.to_prompt()


def test_a_short_english_turn_is_no_answer_to_any_chinese_question(engine: Hindsight) -> None:
    """"May 14, got it." stood 2.9 standard deviations above the English background from "长城有多长？" (a
    short English turn is close to every Chinese query), and the question about the Great Wall was given
    the user's talk. From the memory's own side, against its cosines to the same background in Chinese,
    it stands nowhere near; the talk's date still answers the question about it asked in Chinese."""
    for i, (role, text) in enumerate([("user", "The conference talk is on May 14 in Vienna."),
                                      ("assistant", "May 14, got it."), ("user", "I still need slides.")]):
        engine.record(text, "u:talk", session_id="s1", role=role, occurred_at=START + timedelta(minutes=i))
    for general in ("长城有多长？", "珠穆朗玛峰有多高？"):
        assert engine.recall(general, "u:talk", now=NOW, track=False).hits == [], general
    assert "May 14" in engine.recall("我的演讲是哪天？", "u:talk", now=NOW, track=False).to_prompt()


def test_an_english_question_gets_only_the_chinese_memories_that_answer_it(engine: Hindsight) -> None:
    """A Chinese memory's cosines to every English sentence are low, so against the English background
    alone it stands high for any English question: "What did I tell you yesterday?" put Chinese turns
    of other days 2.9 to 3.4 above it, while the query's side of the same pairs was 0.7 to 1.5. Neither
    the mean of the two sides nor the smaller one kept them out of a five-memory namespace (docs/
    benchmark-log.md, "Cross-lingual evidence without its two constants"). The memory that answers still
    comes back across the languages."""
    record_session(engine, "u:zh", "s1", START, [("user", "你好，我叫王磊，先说一下我对花生过敏，很严重的那种。"),
                                                ("assistant", "好的王磊，我记住了你对花生过敏。")])
    record_session(engine, "u:zh", "s2", START + timedelta(days=3), [
        ("user", "帮我比较一下两个装修方案。"), ("user", "我倾向A方案，省心一点。")])
    record_session(engine, "u:zh", "s3", START + timedelta(days=8), [
        ("user", "My daughter Lily starts violin lessons next Monday.")])
    shown = engine.recall("What did I tell you yesterday?", "u:zh", now=NOW, track=False).to_prompt()
    assert "violin" in shown and "花生" not in shown and "方案" not in shown
    assert "花生" in engine.recall("What am I allergic to?", "u:zh", now=NOW, track=False).to_prompt()


def test_time_window_routes_to_memories_of_that_day(history_engine: Hindsight) -> None:
    # s3 happened on March 9, "yesterday" at NOW (March 10)
    res = history_engine.recall("What did I tell you yesterday?", "user:wang", k=5)
    assert res.analysis.time_window is not None
    assert res.hits and all(h.memory.session_id == "s3" for h in res.hits)


@pytest.mark.parametrize(
    "query",
    ["What's the weather like on Mars?", "How do I configure BGP on a Juniper router?", "如何修理自行车的刹车？"],
)
def test_irrelevant_query_returns_nothing(history_engine: Hindsight, query: str) -> None:
    res = history_engine.recall(query, "user:wang", k=5)
    assert res.hits == [] and res.to_prompt() == "" and res.tokens == 0


def test_small_talk_never_fills_the_budget(history_engine: Hindsight) -> None:
    res = history_engine.recall("好的 谢谢 哈哈 ok", "user:wang", k=10)
    assert all(h.memory.content not in ("好的", "谢谢", "哈哈", "ok") for h in res.hits)


def test_namespaces_are_walls(history_engine: Hindsight) -> None:
    res = history_engine.recall("What am I allergic to? shellfish", "user:wang", k=10)
    assert "shellfish" not in res.to_prompt()
    other = history_engine.recall("What am I allergic to?", "user:other", k=10)
    assert "shellfish" in other.to_prompt()
    assert all(h.memory.namespace == "user:other" for h in other.hits)


def test_budget_and_k_are_respected(history_engine: Hindsight) -> None:
    res = history_engine.recall("装修方案的报价和税", "user:wang", k=1)
    assert len(res.hits) == 1
    small = history_engine.recall("装修方案的报价和税", "user:wang", k=5, budget_tokens=40)
    assert small.tokens <= 40
    full = history_engine.recall("装修方案的报价和税", "user:wang", k=5, budget_tokens=2000)
    assert len(full.hits) > len(small.hits)


def test_layers_filter(history_engine: Hindsight) -> None:
    res = history_engine.recall("比亚迪的续航怎么样？", "user:wang", layers=["semantic"])
    assert res.hits == []


def test_empty_and_malformed_namespaces(history_engine: Hindsight) -> None:
    res = history_engine.recall("anything at all", "user:nobody")
    assert res.hits == [] and res.conflicts == [] and res.to_prompt() == ""
    for bad in ("", "user 1", "{x}", None):
        with pytest.raises(InvalidInputError):
            history_engine.recall("hello", bad)  # type: ignore[arg-type]
    for kwargs in ({"k": 0}, {"k": "5"}, {"budget_tokens": -1}, {"layers": ["working"]}, {"layers": ["nope"]},
                   {"now": datetime(2026, 1, 1)}, {"session_id": ""}):
        with pytest.raises(InvalidInputError):
            history_engine.recall("hello", "user:wang", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        history_engine.recall("   ", "user:wang")


async def test_arecall_matches_recall(history_engine: Hindsight) -> None:
    a = await history_engine.arecall("比亚迪的续航怎么样？", "user:wang", k=3)
    b = history_engine.recall("比亚迪的续航怎么样？", "user:wang", k=3)
    assert [h.memory.id for h in a.hits] == [h.memory.id for h in b.hits]


def _supersede(hs: Hindsight, old_id: str, new_id: str) -> None:
    """What the lifecycle does on a contradiction (see the lifecycle contract)."""
    old = hs.get(old_id)
    assert old is not None
    old.status = Status.SUPERSEDED
    old.superseded_by = new_id
    now = hs.now()
    with hs.store.transaction() as tx:
        tx.update_memory(old)
        tx.add_edges([Edge(src=new_id, dst=old_id, kind=EdgeKind.SUPERSEDES, created_at=now)])
        tx.enqueue([(old.id, old.namespace, old.layer.value, t, "sync") for t in ("vector", "activation")],
                   now.timestamp())
    hs.outbox.apply([old.id])


def test_superseded_memory_is_never_injected_and_is_reported(engine: Hindsight, clock: object) -> None:
    old = engine.record("我们这个项目的预算上限是3万元。", "user:p", session_id="s1",
                        occurred_at=datetime(2026, 2, 1, tzinfo=UTC))
    new = engine.record("预算调整了，项目的预算上限改成5万元。", "user:p", session_id="s2",
                        occurred_at=datetime(2026, 2, 20, tzinfo=UTC))
    # before any link, recall finds the update itself (supersede.py); with that off both values show
    before = engine.recall("我们项目的预算上限是多少？", "user:p", k=5)
    assert "5万" in before.to_prompt() and "3万" not in before.to_prompt()
    assert [(c.superseded.id, c.successor.id) for c in before.conflicts] == [(old.id, new.id)]
    engine.config.recall.supersede = False
    unlinked = engine.recall("我们项目的预算上限是多少？", "user:p", k=5)
    assert "3万" in unlinked.to_prompt() and unlinked.conflicts == []
    _supersede(engine, old.id, new.id)
    after = engine.recall("我们项目的预算上限是多少？", "user:p", k=5)
    assert "5万" in after.to_prompt() and "3万" not in after.to_prompt()
    assert after.conflicts and isinstance(after.conflicts[0], Conflict)
    assert after.conflicts[0].superseded.id == old.id and after.conflicts[0].successor.id == new.id


def test_semantic_memory_brings_its_sources(engine: Hindsight) -> None:
    episode = engine.record("I moved to Shanghai last weekend, the new flat is near Jing'an temple.", "user:s",
                            session_id="s1", occurred_at=datetime(2026, 2, 25, tzinfo=UTC))
    engine.consolidate("user:s")  # provenance is the engine's: a fact cites the episodes it was read from
    res = engine.recall("Which city does the user live in?", "user:s", k=3)
    fact = [h for h in res.hits if h.memory.layer == Layer.SEMANTIC]
    assert fact and fact[0].sources and fact[0].sources[0].id == episode.id
    assert '(sources: "I moved to Shanghai' in res.to_prompt()


def test_cold_memories_only_on_request(engine: Hindsight) -> None:
    m = engine.record("Our wifi password is hunter2-garden.", "user:c", occurred_at=datetime(2025, 1, 1, tzinfo=UTC))
    m.status = Status.COLD
    with engine.store.transaction() as tx:
        tx.update_memory(m)
        tx.enqueue([(m.id, m.namespace, m.layer.value, t, "sync") for t in ("vector", "activation")], 0.0)
    engine.outbox.apply([m.id])
    assert engine.recall("what is the wifi password?", "user:c").hits == []
    res = engine.recall("what is the wifi password?", "user:c", include_cold=True)
    assert [h.memory.id for h in res.hits] == [m.id]


def test_recall_log_health_figures_and_batched_reinforcement(engine: Hindsight, clock: object) -> None:
    record_history(engine, "user:h")
    rows = engine.store.select("namespace = ? AND content LIKE ?", ("user:h", "%续航普遍%"))
    before = rows[0]
    res = engine.recall("比亚迪的续航怎么样？", "user:h", k=2)
    assert before.id in [h.memory.id for h in res.hits]
    engine.recall("What is the weather like on Mars?", "user:h")
    # buffered: nothing is written per query
    assert engine.store.query("SELECT COUNT(*) FROM recall_log")[0][0] == 0
    assert engine.get(before.id).access_count == 0  # type: ignore[union-attr]
    stats = engine.stats("user:h").namespaces["user:h"]  # reading stats flushes the buffer
    assert stats.recall_hit_rate == 0.5
    assert stats.recall_idle_rate is not None and 0.0 <= stats.recall_idle_rate <= 1.0
    indexed = stats.layers["episodic"].indexed
    assert stats.recall_coverage == pytest.approx(len(res.hits) / indexed)
    log = engine.store.query("SELECT query, candidates, injected, n_injected FROM recall_log ORDER BY id")
    assert log[0][0] == "比亚迪的续航怎么样？" and '"vector"' in log[0][1] and before.id in log[0][2]
    assert log[1][3] == 0
    after = engine.get(before.id)
    assert after is not None and after.access_count == 1
    now = engine.now().timestamp()
    rate = engine.config.activation.rate(Layer.EPISODIC)
    assert after.activation.value_at(now, rate) > before.activation.value_at(now, rate)
    # the activation index follows (the outbox ran)
    hot = dict(engine.activation.top("user:h", "episodic", 3))
    assert before.id in hot
    # the next recall's hit carries the reinforced row, though its snapshot predates the reinforcement
    again = {h.memory.id: h.memory for h in engine.recall("比亚迪的续航怎么样？", "user:h", k=2).hits}
    assert (again[before.id].access_count, again[before.id].activation) == (1, after.activation)


def test_reinforcement_flushes_by_batch_size(engine: Hindsight) -> None:
    engine.config.recall.reinforce_batch = 3
    record_history(engine, "user:b")
    for _ in range(2):
        engine.recall("比亚迪的续航怎么样？", "user:b", k=1)
    assert engine.store.query("SELECT COUNT(*) FROM recall_log")[0][0] == 0
    engine.recall("比亚迪的续航怎么样？", "user:b", k=1)
    pipeline = engine._recall.built
    assert pipeline is not None
    pipeline.drain()  # the batch is written off the caller's path
    assert engine.store.query("SELECT COUNT(*) FROM recall_log")[0][0] == 3


def test_forget_namespace_removes_its_recall_log(engine: Hindsight) -> None:
    record_history(engine, "user:f")
    engine.recall("比亚迪的续航怎么样？", "user:f")
    engine.flush_recall_log()
    assert engine.store.query("SELECT COUNT(*) FROM recall_log WHERE namespace = 'user:f'")[0][0] == 1
    engine.forget_namespace("user:f")
    assert engine.store.query("SELECT COUNT(*) FROM recall_log WHERE namespace = 'user:f'")[0][0] == 0
    assert engine.recall("比亚迪的续航怎么样？", "user:f").hits == []


def test_new_memories_are_recallable_at_once(engine: Hindsight) -> None:
    engine.record("I prefer window seats on long flights.", "user:n", occurred_at=START)
    assert engine.recall("Which seat do I like on a plane?", "user:n").hits
    engine.record("My passport expires in October.", "user:n", occurred_at=START + timedelta(days=1))
    res = engine.recall("When does my passport expire?", "user:n", now=NOW)
    assert res.hits[0].memory.content.startswith("My passport")


def test_standing_fact_joins_requests_of_its_domain(history_engine: Hindsight) -> None:
    res = history_engine.recall("帮我推荐个餐厅吧", "user:wang", session_id="s9", k=5)
    assert "花生过敏" in res.to_prompt()
    assert any("standing fact" in h.reason for h in res.hits)
    res = history_engine.recall("Can you suggest a dinner recipe?", "user:wang", k=5)
    assert "花生过敏" in res.to_prompt()
    res = history_engine.recall("比亚迪的续航怎么样？", "user:wang", k=5)
    assert "花生过敏" not in res.to_prompt()


def test_long_memories_are_truncated_in_the_prompt(engine: Hindsight) -> None:
    engine.config.recall.max_memory_tokens = 30
    steps = ", ".join(f"step {i} add layer {i} of pasta and sauce" for i in range(60))
    long = f"My grandmother's lasagna recipe: {steps}"
    engine.record(long, "user:t", occurred_at=START)
    res = engine.recall("How do I make my grandmother's lasagna?", "user:t", k=1)
    assert res.hits and res.hits[0].memory.content == long  # the memory itself is whole
    line = res.to_prompt().splitlines()[1]
    assert line.endswith('…"') and engine.tokens.count(line) < 45 and res.tokens < 60


def test_recall_imports_stay_lazy() -> None:
    import subprocess
    import sys

    code = ("import sys, hindsight_core.engine, hindsight_core.recall.api; "
            "print(sorted(m for m in ('jieba', 'dateparser', 'rank_bm25', 'torch', 'FlagEmbedding', 'chromadb') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_question_about_the_user_finds_the_fact_without_shared_words(engine) -> None:
    for text in ["I'm allergic to peanuts", "The weather is nice today", "Let's meet at the cafe on Friday",
                 "My sister Anna lives in Toronto", "I prefer window seats on flights"]:
        engine.record(text, namespace="user:q", session_id="s1")
    hits = engine.recall("Do I have any allergies?", namespace="user:q", k=3).hits
    assert [h.memory.content for h in hits][:1] == ["I'm allergic to peanuts"]
    assert engine.recall("What is the capital of Peru?", namespace="user:q", k=3).hits == []


class _Counting:
    """The default token counter, recording which texts it was asked to count."""

    def __init__(self) -> None:
        from hindsight_core.text.tokens import default_token_counter

        self._inner = default_token_counter()
        self.asked: list[str] = []

    def count(self, text: str) -> int:
        self.asked.append(text)
        return self._inner.count(text)


def test_the_prompt_is_counted_when_its_tokens_are_read(tmp_path: Path, clock: object, embedder: object) -> None:
    counter = _Counting()
    with Hindsight(tmp_path / "data", clock=clock, embedder=embedder, token_counter=counter) as hs:  # type: ignore[arg-type]
        hs.record("My sister Ana lives in Lisbon and works as a nurse.", "user:a")
        res = hs.recall("where does my sister live?", "user:a")
        prompt = res.to_prompt()
        assert res.hits and prompt not in counter.asked  # not counted by recall itself
        shared = res.model_copy(update={"hits": res.hits[:0]})
        assert res.tokens == counter._inner.count(prompt) > 0 and counter.asked.count(prompt) == 1
        assert res.tokens == counter._inner.count(prompt) and counter.asked.count(prompt) == 1  # once
        # a copy with fewer hits keeps the count of the prompt recall built, as a stored number did
        assert shared.tokens == res.tokens
        back = RecallResult.model_validate_json(res.model_dump_json())
        assert back.tokens == res.tokens and back == res


GENERAL_QUESTIONS = [
    ("How do I get rust off a bike chain?", "Scrub it with degreaser and a stiff brush, then oil it."),
    ("Is a mebibyte bigger than a megabyte?", "Yes: 1,048,576 bytes against 1,000,000."),
    ("When should I say whom rather than who?", "Whom is an object: to whom did you write?"),
    ("How do I unblock a kitchen sink?", "Try boiling water, then a plunger."),
    ("What's the tallest mountain in Africa?", "Kilimanjaro, about 5,900 metres."),
    ("怎么做冷萃咖啡？", "粗磨咖啡粉加冷水，冷藏泡十二小时。"),
    ("背单词有什么好方法？", "用间隔重复，每天复习一点。"),
]


def test_questions_asked_on_other_topics_are_not_injected(engine: Hindsight) -> None:
    """e5 puts a question close to any question, and the floor's background is mostly statements: "How
    do I remove rust from a bike chain?" stood above the keep bar for "I have a bad headache, what can I
    take?". A question is measured against the background's own questions (floor.asking_background)."""
    start = datetime(2026, 1, 10, 9, 0, tzinfo=UTC)
    asked = [{"content": text, "role": role, "session_id": f"g{i}",
              "occurred_at": start + timedelta(days=i + 1, minutes=j)}
             for i, pair in enumerate(GENERAL_QUESTIONS)
             for j, (role, text) in enumerate(zip(("user", "assistant"), pair, strict=True))]
    engine.record_many([
        {"content": "Medical note: I'm allergic to ibuprofen, it gives me hives.", "role": "user",
         "session_id": "s0", "occurred_at": start},
        {"content": "Ibuprofen allergy noted.", "role": "assistant", "session_id": "s0",
         "occurred_at": start + timedelta(minutes=1)},
        *asked,
    ], "user:ib")
    for query in ("I've got a bad toothache, what can I take for it?",
                  "My back hurts, which painkiller is safe for me?"):
        prompt = engine.recall(query, "user:ib", k=5, now=start + timedelta(days=30), track=False).to_prompt()
        assert "allergic to ibuprofen" in prompt, query
        assert not [q for q, _ in GENERAL_QUESTIONS if q in prompt], (query, prompt)
