"""Stage 7, the relevance floor: an irrelevant query returns nothing instead of noise.

Raw e5 cosines sit between 0.8 and 0.95 for everything, so no fixed cosine threshold works. Instead
each query is calibrated against a fixed set of everyday sentences that are unrelated to one another:
how far a memory's cosine stands above the query's cosines to that background, in standard
deviations, is a per-query measure of evidence. The same is measured from the memory's side (its
cosine to the query against its own cosines to that background), and the two are averaged: a long,
many-topic memory is close to every query and every background sentence alike (a "hub"), and only
the memory's own baseline tells a match from that closeness. A memory that asks is measured against the
background's questions on both sides, as e5 puts any two questions close (``asking_background``). A
cross-lingual pair keeps the query side alone (less an offset, config ``floor_cross_lingual_offset``):
its cosine runs lower than the memory's cosines to sentences of its own language, so the memory side
says nothing of it. Keyword
evidence (the share of the query's BM25 term weight a memory contains) lowers the bar, because two
independent signals agreeing is rarely chance."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np

from hindsight_core.recall.profile import is_question
from hindsight_core.text.script import is_cjk

if TYPE_CHECKING:
    from hindsight_core.recall.config import RecallConfig

#: Unrelated sentences in English and Chinese, the usual material of conversations with an agent.
BACKGROUND: tuple[str, ...] = (
    "I went for a long walk in the park this morning.",
    "The train was delayed by twenty minutes again.",
    "Can you help me write an email to my landlord?",
    "My sister just started a new job at a bank.",
    "We watched a documentary about deep sea creatures.",
    "The printer in the office keeps jamming.",
    "I'm thinking about learning to play the guitar.",
    "What's a good recipe for vegetable soup?",
    "Our team meeting was moved to Thursday afternoon.",
    "The kids built a sandcastle at the beach.",
    "I need to renew my passport before the trip.",
    "The new phone has a much better camera.",
    "How do I convert a spreadsheet to a PDF?",
    "My grandfather used to be a carpenter.",
    "It rained all weekend so we stayed inside.",
    "I finally finished reading that novel.",
    "The dentist appointment is next Tuesday.",
    "We adopted a cat from the shelter last year.",
    "Traffic downtown is terrible during rush hour.",
    "I've been trying to drink more water every day.",
    "The concert tickets sold out in ten minutes.",
    "Could you explain how compound interest works?",
    "The garden needs watering twice a week in summer.",
    "I'm nervous about the job interview tomorrow.",
    "Let's order pizza for dinner tonight.",
    "The museum has a new exhibition on ancient Egypt.",
    "My laptop battery doesn't last very long anymore.",
    "She ran her first marathon in under four hours.",
    "I painted the bedroom a light shade of blue.",
    "The hotel room had a view of the mountains.",
    "今天早上我去公园跑步了。",
    "地铁又晚点了二十分钟。",
    "帮我写一封给房东的邮件。",
    "我妹妹刚在银行找到新工作。",
    "我们看了一部关于深海生物的纪录片。",
    "办公室的打印机老是卡纸。",
    "我在考虑学吉他。",
    "有什么好做的蔬菜汤食谱吗？",
    "团队会议改到周四下午了。",
    "孩子们在海边堆沙堡。",
    "出国前我得先续签护照。",
    "新手机的拍照效果好多了。",
    "怎么把表格转换成PDF？",
    "我爷爷以前是个木匠。",
    "周末一直下雨，我们就待在家里。",
    "我终于读完了那本小说。",
    "牙医预约在下周二。",
    "我们去年从收容所领养了一只猫。",
    "上下班高峰期市中心堵得厉害。",
    "我最近在努力多喝水。",
    "演唱会的票十分钟就卖光了。",
    "能解释一下复利是怎么计算的吗？",
    "夏天花园每周要浇两次水。",
    "明天的面试让我有点紧张。",
    "今晚点披萨吃吧。",
    "博物馆有一个关于古埃及的新展览。",
    "我的笔记本电池越来越不耐用了。",
    "她第一次跑马拉松就跑进了四小时。",
    "我把卧室刷成了浅蓝色。",
    "酒店房间能看到山景。",
)



@dataclass(frozen=True)
class Baseline:
    """The query's cosine to the background: mean and spread, and the baseline of a memory that asks
    (``asking_mean``: the mean over the background's questions, never below ``mean``)."""

    mean: float
    std: float
    asking_mean: float

    def z(self, similarity: float | np.ndarray, asks: bool | np.ndarray = False) -> float | np.ndarray:
        if asks is False:
            return (similarity - self.mean) / self.std
        return (similarity - np.where(asks, self.asking_mean, self.mean)) / self.std


def baseline(query_vector: np.ndarray, background: np.ndarray, asking: np.ndarray | None = None) -> Baseline:
    """``asking``: which background sentences are questions (``asking_background``)."""
    sims = background @ np.asarray(query_vector, dtype=np.float32)
    mean = float(sims.mean())
    asked = max(float(sims[asking].mean()), mean) if asking is not None and asking.any() else mean
    return Baseline(mean=mean, std=max(float(sims.std()), 1e-3), asking_mean=asked)


class LanguageBaselines:
    """A memory is compared with background sentences in its own language: cosines across languages
    run lower, so a shared background would bury every cross-lingual match. A memory that asks is
    compared with the background's questions (``asking_background``)."""

    def __init__(self, query_vector: np.ndarray, english: np.ndarray, chinese: np.ndarray) -> None:
        asking_english, asking_chinese = asking_background()
        self.english = baseline(query_vector, english, asking_english)
        self.chinese = baseline(query_vector, chinese, asking_chinese)

    def z(self, similarity: float, cjk: bool, asks: bool = False) -> float:
        return float((self.chinese if cjk else self.english).z(similarity, asks))

    def z_array(self, similarities: np.ndarray, cjk: np.ndarray, asks: np.ndarray | bool = False) -> np.ndarray:
        return np.where(cjk, self.chinese.z(similarities, asks), self.english.z(similarities, asks))


def memory_side_z(similarities: np.ndarray, vectors: np.ndarray, background: np.ndarray,
                  asks: np.ndarray | None = None, asking: np.ndarray | None = None) -> np.ndarray:
    """How far each memory's cosine to the query stands above its own cosines to ``background`` (in the
    memory's language), in standard deviations; computed for the candidates only, one row each. A memory
    that ``asks`` stands against its cosines to the background's questions (``asking``)."""
    if not len(similarities):
        return np.zeros(0, dtype=np.float64)
    own = vectors @ background.T
    spread = np.maximum(own.std(axis=1), 1e-3)
    mean = own.mean(axis=1)
    if asks is not None and asking is not None and asking.any():
        mean = np.where(asks, np.maximum(own[:, asking].mean(axis=1), mean), mean)
    return (np.asarray(similarities, dtype=np.float64) - mean) / spread


@functools.cache
def asking_background() -> tuple[np.ndarray, np.ndarray]:
    """Which sentences of each language's background (``split_background``, in its order) are questions.

    e5 puts a question close to any question: "How do I remove rust from a bike chain?" stood above the
    keep bar for "I have a bad headache, what can I take?", the background being mostly statements. A
    question is measured against the background's own questions instead (four in English, three in
    Chinese: their mean; the spread stays the whole background's, so few sentences give none). Never a
    lower baseline than a statement's: the correction removes closeness that comes from the form, and
    where a model has none (all-MiniLM-L6-v2 puts a query no closer to the background's questions), a
    mean of so few sentences only adds noise: lowered, it gave LoCoMo's off-topic queries 6 of 50
    memories, not 2."""
    english, chinese = split_background()
    return (np.asarray([is_question(s) for s in english], dtype=bool),
            np.asarray([is_question(s) for s in chinese], dtype=bool))


def cross_lingual_scale(english: np.ndarray, chinese: np.ndarray) -> float:
    """How much a Chinese query's evidence for an English memory is scaled up to stand as an English
    query's does for a Chinese memory, read off the embedder itself: the background is the same sentences
    in both languages (``split_background``, in one order), so each sentence's translation is a match
    whose evidence can be measured in both directions. Each sentence's z for its translation (against its
    cosines to the other language's other sentences) is averaged over the pairs, and the scale is the
    English side's mean over the Chinese side's: 1.16 for multilingual-e5-small, whose Chinese side runs
    lower. It was the fitted ``zh_to_en_z_scale`` (1.4, from translated query/memory pairs); with the
    cross-lingual memory side that now caps a Chinese query's pair, 1.4, 1.16 and 1 gave the same answers
    on the behaviour set with e5 and all-MiniLM-L6-v2 (docs/benchmark-log.md). An embedder whose
    translations do not stand out from unrelated sentences in either direction (their mean z below the
    best of the other sentences by chance, ``chance_best``: all-MiniLM-L6-v2's Chinese side, the hashed
    embedder) tells nothing of the asymmetry, and gets 1."""
    cosines = np.asarray(english, dtype=np.float64) @ np.asarray(chinese, dtype=np.float64).T
    n = len(cosines)
    if n < 3 or cosines.shape != (n, n):
        return 1.0
    others = ~np.eye(n, dtype=bool)

    def evidence(rows: np.ndarray) -> float:  # each row: one sentence's cosines to the other language
        rest = rows[others].reshape(n, n - 1)
        return float(((np.diag(rows) - rest.mean(axis=1)) / np.maximum(rest.std(axis=1), 1e-9)).mean())

    from_english, from_chinese = evidence(cosines), evidence(cosines.T)
    if min(from_english, from_chinese) < chance_best(n - 1):
        return 1.0
    return from_english / from_chinese


def split_background() -> tuple[list[str], list[str]]:
    english = [s for s in BACKGROUND if not is_cjk(s)]
    chinese = [s for s in BACKGROUND if is_cjk(s)]
    return english, chinese


def keyword_coverage(weights: dict[str, float], document_terms: frozenset[str]) -> float:
    """Share of the query's term weight (idf per distinct query term) that the document contains."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    return sum(w for t, w in weights.items() if t in document_terms) / total


@dataclass(frozen=True)
class Evidence:
    """What speaks for a candidate, measured on the query alone (no weights, no activation)."""

    z: float
    coverage: float
    in_window: bool = False
    standing: bool = False
    rerank: float | None = None

    def strength(self, coverage_weight: float) -> float:
        return self.z + coverage_weight * self.coverage


def anchor_threshold(cfg: RecallConfig, size: int) -> float:
    """The evidence a query's best candidate needs, for a namespace of ``size`` memories:
    ``floor_anchor_base`` above the best that ``size`` unrelated memories reach by chance.

    Evidence is a z-score, so among ``n`` memories unrelated to the query the best lies near the
    maximum of ``n`` standard normal draws (``chance_best``): a fixed bar is either too low for a large
    namespace (noise passes) or too high for a small one (a real match fails). The bar stands a fixed
    height above that maximum. It used to be ``0.6 + 1.1·sqrt(2 ln n)``, two fitted constants for the
    growth's asymptote; that is ``1.47 + chance_best(n)`` within 0.02 for every namespace of 9 to 1,000
    memories (0.04 at 10,000), so the growth is now derived and the height is the one constant.

    The same bar tells whether a memory of the user's speaks to the attribute of one of ``size`` others
    (starting memories, a shared layer's hits): the user's memory is the query, what it may replace are
    the candidates, and the pair (its z the mean of both directions) must anchor. It was a fitted 2.7
    (``supersede_z``); so it is 2.9 against an eight-item template and 2.0 against two, and a template's
    "The user prefers metric units." no longer yields to "It makes dentist visits fun." (2.79)."""
    return cfg.floor_anchor_base + chance_best(size)


@functools.lru_cache(maxsize=4096)
def chance_best(n: int) -> float:
    """The median of the maximum of ``n`` independent standard normal draws (0 for ``n <= 1``): the
    z-score the best of ``n`` unrelated memories stays under half the time. ``P(max < x) = Φ(x)ⁿ``, so
    it is ``Φ⁻¹(2^(-1/n))``: 1.32 for 7, 2.46 for 100, 4.35 for 100,000 (``sqrt(2 ln n)``, the
    asymptote, is 0.6 higher at 100)."""
    if n <= 1:
        return 0.0
    return NormalDist().inv_cdf(0.5 ** (1.0 / n))


def shipped_anchor_base(cfg: RecallConfig) -> float:
    """The default ``floor_anchor_base`` of ``cfg``'s class: how far a tuned floor moved is measured from
    it (read off the configuration passed, so the floor imports no configuration module at run time)."""
    return float(type(cfg).model_fields["floor_anchor_base"].default)


def floor_bars(cfg: RecallConfig, *, history: bool, size: int) -> tuple[float, float]:
    """``(anchor, keep)``: the evidence the best candidate needs, and the lower bar each one needs.

    Once some candidate stands clear of chance, each other one needs to reach chance's best itself
    (``chance_best``): below it, nothing tells it from the best unrelated memory. A ``floor_anchor_base``
    moved from the shipped one (``hindsight tune``, for an embedder whose evidence runs high or low)
    moves this bar with it: the floor moves as a whole. This bar used to be the anchor less a fitted
    margin (1.5), which put it within 0.06 of chance's best for any namespace of 5 to 100,000 memories;
    the development sets' fit of the two (docs/benchmark-log.md) left it where it was."""
    bar = anchor_threshold(cfg, size)
    moved = cfg.floor_anchor_base - shipped_anchor_base(cfg)
    return bar - (cfg.floor_history_relief if history else 0.0), chance_best(size) + moved


def is_anchored(evidence: Mapping[str, Evidence], cfg: RecallConfig, anchor: float) -> bool:
    w = cfg.floor_coverage_weight
    return any(
        e.strength(w) >= anchor or e.standing or e.in_window or (e.rerank is not None and e.rerank >= 0.5)
        for e in evidence.values()
    )


def apply_floor(evidence: Mapping[str, Evidence], cfg: RecallConfig, *, history: bool, size: int) -> set[str]:
    """The candidates that clear the floor.

    Two levels. The query must first be *anchored*: some candidate must carry strong evidence (or a
    history cue or time expression must point at memories that exist); otherwise nothing is relevant
    and nothing is returned. Then each candidate must clear a lower bar of its own. Standing facts in
    the query's domain and memories inside the named time window count as evidence by themselves
    (a time expression is the user pointing at them; fusion still ranks them by relevance)."""
    if not evidence:
        return set()
    anchor, keep = floor_bars(cfg, history=history, size=size)
    if not is_anchored(evidence, cfg, anchor):
        return set()
    return {mid for mid, e in evidence.items() if e.standing or clears(e, cfg, keep)}


def clears(e: Evidence, cfg: RecallConfig, keep: float) -> bool:
    """Whether a candidate clears the lower bar by what it shares with the query (or its time): a
    standing fact offered by its kind alone does not."""
    return (e.strength(cfg.floor_coverage_weight) >= keep or e.in_window
            or (e.rerank is not None and e.rerank >= 0.5))
