"""The keyword channel: BM25 over words, for English and Chinese alike.

Chinese has no spaces, so CJK runs are segmented with jieba's search mode (which also emits the short
words inside long ones: 花生过敏 → 花生, 过敏). English is lower-cased, filtered with the 179-word
NLTK stopword list (which measurably beats a short list on LoCoMo) and stemmed with Snowball."""

from __future__ import annotations

import functools
import logging
import math
import re
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    """i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves he
    him his himself she she's her hers herself it it's its itself they them their theirs themselves what which
    who whom this that that'll these those am is are was were be been being have has had having do does did
    doing a an the and but if or because as until while of at by for with about against between into through
    during before after above below to from up down in out on off over under again further then once here
    there when where why how all any both each few more most other some such no nor not only own same so than
    too very s t can will just don don't should should've now d ll m o re ve y ain aren aren't couldn
    couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn mightn't
    mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren weren't won won't wouldn
    wouldn't""".split()
)

CHINESE_STOPWORDS: frozenset[str] = frozenset(
    """的 了 是 我 你 他 她 它 们 我们 你们 他们 这 那 这个 那个 就 都 也 还 在 有 和 与 及 或 吗 呢 吧 啊 呀 哦 嗯
    么 什么 怎么 怎样 如何 为什么 哪 哪个 哪些 哪里 谁 多少 一个 一下 一些 把 被 给 让 对 从 到 向 于 又 很 太 更 最
    而 但 但是 所以 因为 如果 可以 能 会 要 想 说 吧 啦 嘛 着 过 得 地 之 其 该 此 每 各 自己 没 没有 不 不是 已经
    请 帮 帮我 一 下 个 些 上 中""".split()
)

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)

_jieba_lock = threading.Lock()
_jieba: Any = None


def _segmenter() -> Any:
    global _jieba
    with _jieba_lock:
        if _jieba is None:
            import jieba

            jieba.setLogLevel(logging.WARNING)
            jieba.initialize()
            _jieba = jieba
    return _jieba


def tokenize(text: str) -> list[str]:
    """Index terms of ``text``: English words minus stopwords, Chinese words from jieba's search mode."""
    terms: list[str] = []
    position = 0
    lowered = text.lower()
    for match in _CJK.finditer(lowered):
        terms += _latin_terms(lowered[position : match.start()])
        for word in _segmenter().lcut_for_search(match.group(0)):
            if word.strip() and word not in CHINESE_STOPWORDS:
                terms.append(word)
        position = match.end()
    terms += _latin_terms(lowered[position:])
    return terms


_stemmer_lock = threading.Lock()
_stemmer: Any = None


@functools.lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """Snowball (Porter 2) stem: "calls" finds "call", "painting" finds "painted"."""
    global _stemmer
    if _stemmer is None:
        with _stemmer_lock:
            if _stemmer is None:
                import snowballstemmer

                _stemmer = snowballstemmer.stemmer("english")
    return str(_stemmer.stemWord(word))


def _latin_terms(text: str) -> list[str]:
    out: list[str] = []
    for word in _WORD.findall(text.replace("’", "'")):
        if word in ENGLISH_STOPWORDS:
            continue
        if word.endswith("'s"):
            word = word[:-2]
        if word and word not in ENGLISH_STOPWORDS:
            out.append(stem(word) if word.isascii() and word.isalpha() else word)
    return out


class KeywordIndex:
    """BM25 (Okapi) over a fixed list of documents; rebuilt when the namespace changes."""

    def __init__(self, documents: Sequence[str]) -> None:
        from rank_bm25 import BM25Okapi

        self.size = len(documents)
        tokenized = [tokenize(d) for d in documents]
        self.terms: list[frozenset[str]] = [frozenset(t) for t in tokenized]
        self.df: dict[str, int] = {}
        for terms in self.terms:
            for term in terms:
                self.df[term] = self.df.get(term, 0) + 1
        self._bm25: Any = BM25Okapi([t or ["\x00"] for t in tokenized]) if documents else None

    def smooth_idf(self, term: str) -> float:
        """Lucene's always-positive idf; BM25Okapi's is zero or negative in very small namespaces."""
        n = self.df.get(term, 0)
        return math.log(1.0 + (self.size - n + 0.5) / (n + 0.5))

    def idf(self, term: str) -> float:
        if self._bm25 is None:
            return 0.0
        return float(self._bm25.idf.get(term, 0.0))

    def scores(self, query_terms: Sequence[str]) -> np.ndarray:
        if self._bm25 is None or not query_terms:
            return np.zeros(self.size, dtype=np.float64)
        return np.asarray(self._bm25.get_scores(list(query_terms)), dtype=np.float64)

    def top(self, query_terms: Sequence[str], n: int) -> list[tuple[int, float]]:
        """Indexes of the ``n`` best documents with a positive score, best first."""
        scores = self.scores(query_terms)
        if not scores.size:
            return []
        order = np.argsort(-scores, kind="stable")[:n]
        return [(int(i), float(scores[i])) for i in order if scores[i] > 0]
