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
import typing
from collections.abc import Sequence
from typing import Any

import numpy as np

from hindsight_core.text.script import CJK_RUN

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

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)

_jieba_lock = threading.Lock()
_jieba: Any = None


def segmenter() -> Any:
    """jieba, loaded once per process (its dictionary takes about a second)."""
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
    for match in CJK_RUN.finditer(lowered):
        terms += _latin_terms(lowered[position : match.start()])
        for word in segmenter().lcut_for_search(match.group(0)):
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
                # the English module alone: ``import snowballstemmer`` loads every language (0.4 s)
                from snowballstemmer.english_stemmer import EnglishStemmer

                _stemmer = EnglishStemmer()
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
    """BM25 (Okapi, the ``rank_bm25.BM25Okapi`` formula: k1=1.5, b=0.75, negative idfs floored at
    0.25 x the average idf) over an inverted index that grows by appending documents.

    ``rank_bm25`` scores a query with a Python loop over every document of the namespace (389 ms at
    100k memories); here a query reads only the posting lists of its own terms, in numpy, and a new
    memory is added in place of rebuilding the namespace's index. The scores are the same.

    A snapshot (``view(size)``) sees the first ``size`` documents only, so a recall running while a
    write appends keeps a consistent namespace; postings are ascending document numbers, so the cut
    is a binary search."""

    K1 = 1.5
    B = 0.75
    EPSILON = 0.25

    def __init__(self, documents: Sequence[str] = ()) -> None:
        self._postings: dict[str, _Postings] = {}
        #: The terms in the order they first appeared: what a view iterates (a view made before a term
        #: was added has no document with it), never the dict another thread may be inserting into.
        self._vocabulary: list[str] = []
        self._lengths = _Growable(np.int32)
        #: Per document, its terms (the relevance floor's keyword coverage reads them).
        self.terms = DocumentTerms()
        self._total_length = 0
        #: How many terms have each document frequency (df -> terms): BM25Okapi's average idf over the
        #: vocabulary from a few hundred distinct frequencies, not a pass over every term, which cost a
        #: recall right after a write milliseconds (each write makes a new view, whose average is new).
        self._terms_by_df: dict[int, int] = {}
        #: Documents indexed so far.
        self.size = 0
        self.extend(documents)

    # -- as columns (the persisted snapshot, ``snapshot_file.py``) ---------------------------------
    def columns(self, size: int, known: int | None = None) -> tuple[list[str], dict[str, np.ndarray]]:
        """The first ``size`` documents as flat arrays: (vocabulary, {postings offsets, documents,
        term frequencies, document lengths, each document's term numbers with their offsets}).
        ``known``: how many terms the index had when it held ``size`` documents (all by default)."""
        vocabulary: list[str] = []
        number: dict[str, int] = {}
        offsets, docs, tfs = [0], [], []
        for term in self._vocabulary[: len(self._vocabulary) if known is None else known]:
            d, f = self._postings[term].arrays(size)
            if not d.size:
                continue
            number[term] = len(vocabulary)
            vocabulary.append(term)
            docs.append(d)
            tfs.append(f)
            offsets.append(offsets[-1] + d.size)
        term_offsets, term_numbers = [0], []
        for i in range(size):
            own = [number[t] for t in self.terms[i]]
            term_numbers += own
            term_offsets.append(term_offsets[-1] + len(own))
        return vocabulary, {
            "kw_offsets": np.asarray(offsets, dtype=np.int64),
            "kw_docs": np.concatenate(docs).astype(np.int32) if docs else np.zeros(0, dtype=np.int32),
            "kw_tfs": np.concatenate(tfs).astype(np.int32) if tfs else np.zeros(0, dtype=np.int32),
            "kw_lengths": np.asarray(self._lengths.array[:size], dtype=np.int32),
            "kw_term_offsets": np.asarray(term_offsets, dtype=np.int64),
            "kw_term_numbers": np.asarray(term_numbers, dtype=np.int32),
        }

    @classmethod
    def from_columns(cls, vocabulary: list[str], columns: dict[str, np.ndarray]) -> KeywordIndex:
        """The index :meth:`columns` describes; its arrays are used as they are (read-only memory maps
        are fine: a posting list is copied the first time a document is appended to it)."""
        index = cls()
        offsets, docs, tfs = columns["kw_offsets"], columns["kw_docs"], columns["kw_tfs"]
        bounds = offsets.tolist()
        index._postings = {
            term: _Postings.of(docs[bounds[j] : bounds[j + 1]], tfs[bounds[j] : bounds[j + 1]])
            for j, term in enumerate(vocabulary)
        }
        index._vocabulary = list(vocabulary)
        df = np.diff(offsets)
        frequencies, terms = np.unique(df[df > 0], return_counts=True)
        index._terms_by_df = dict(zip(frequencies.tolist(), terms.tolist(), strict=True))
        lengths = columns["kw_lengths"]
        index._lengths = _Growable.of(lengths)
        index.terms = DocumentTerms(vocabulary, columns["kw_term_offsets"], columns["kw_term_numbers"])
        index._total_length = int(lengths.sum())
        index.size = int(lengths.size)
        return index

    # -- building ----------------------------------------------------------------------------------
    def extend(self, documents: Sequence[str]) -> None:
        for document in documents:
            tokens = tokenize(document) or ["\x00"]  # rank_bm25 was given ["\x00"] for an empty text
            doc = self.size
            counts: dict[str, int] = {}
            for token in tokens:
                counts[token] = counts.get(token, 0) + 1
            by_df = self._terms_by_df
            for term, tf in counts.items():
                postings = self._postings.get(term)
                if postings is None:
                    postings = self._postings[term] = _Postings()
                    self._vocabulary.append(term)
                df = postings.size
                if df:
                    if by_df[df] == 1:
                        del by_df[df]
                    else:
                        by_df[df] -= 1
                by_df[df + 1] = by_df.get(df + 1, 0) + 1
                postings.add(doc, tf)
            self._lengths.append(len(tokens))
            self._total_length += len(tokens)
            self.terms.append(frozenset(t for t in counts if t != "\x00"))
            self.size += 1

    # -- the whole index (callers that never append while reading) --------------------------------
    def smooth_idf(self, term: str) -> float:
        return self.view(self.size).smooth_idf(term)

    def scores(self, query_terms: Sequence[str]) -> np.ndarray:
        return self.view(self.size).scores(query_terms)

    def top(self, query_terms: Sequence[str], n: int) -> list[tuple[int, float]]:
        return self.view(self.size).top(query_terms, n)

    def view(self, size: int) -> KeywordView:
        """The first ``size`` documents. A view of every document (what a new snapshot takes, under its
        growth lock) keeps a copy of the document-frequency counts its average idf is read from."""
        if size == self.size:
            return KeywordView(self, size, self._total_length, dict(self._terms_by_df))
        return KeywordView(self, size, int(self._lengths.array[:size].sum()))


class KeywordView:
    """The index as it was with ``size`` documents (what one corpus snapshot searches)."""

    def __init__(self, index: KeywordIndex, size: int, total_length: int,
                 terms_by_df: dict[int, int] | None = None) -> None:
        self._index = index
        self._terms_by_df = terms_by_df
        self.size = size
        self._avgdl = total_length / size if size else 0.0
        self.terms = index.terms  # indexes below ``size`` only are read
        self._average_idf: float | None = None
        self._known = len(index._vocabulary)
        #: Each term's smoothed idf in this view, computed once: a recall reads its query's and its
        #: candidates' terms (coverage, collapse, updates), and the next recalls of the same snapshot
        #: read many of them again.
        self._smooth_idf: dict[str, float] = {}

    def columns(self) -> tuple[list[str], dict[str, np.ndarray]]:
        """This view's documents as :meth:`KeywordIndex.columns` gives them (while others append)."""
        return self._index.columns(self.size, self._known)

    def _df(self, term: str) -> int:
        postings = self._index._postings.get(term)
        return 0 if postings is None else postings.count_below(self.size)

    def smooth_idf(self, term: str) -> float:
        """Lucene's always-positive idf; BM25Okapi's is zero or negative in very small namespaces."""
        found = self._smooth_idf.get(term)
        if found is None:
            n = self._df(term)
            found = self._smooth_idf[term] = math.log(1.0 + (self.size - n + 0.5) / (n + 0.5))
        return found

    def _average(self) -> float:
        """BM25Okapi's average idf over the vocabulary (its floor for negative idfs)."""
        if self._average_idf is None and self._terms_by_df is not None:
            df = np.fromiter(self._terms_by_df, dtype=np.float64, count=len(self._terms_by_df))
            counts = np.fromiter(self._terms_by_df.values(), dtype=np.float64, count=df.size)
            self._average_idf = (
                float(counts @ (np.log(self.size - df + 0.5) - np.log(df + 0.5)) / counts.sum()) if df.size else 0.0
            )
        if self._average_idf is None:  # an older view: each term's frequency below its size
            postings = self._index._postings
            terms = self._index._vocabulary[: self._known]
            df = np.fromiter((postings[t].count_below(self.size) for t in terms), dtype=np.float64, count=len(terms))
            df = df[df > 0]
            self._average_idf = (
                float(np.mean(np.log(self.size - df + 0.5) - np.log(df + 0.5))) if df.size else 0.0
            )
        return self._average_idf

    def idf(self, term: str) -> float:
        n = self._df(term)
        if not self.size or n == 0:
            return 0.0
        value = math.log(self.size - n + 0.5) - math.log(n + 0.5)
        return value if value >= 0 else KeywordIndex.EPSILON * self._average()

    def sparse(self, query_terms: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(document numbers, scores) of the documents with a positive score, ascending numbers."""
        if not self.size or not query_terms:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        k1, b = KeywordIndex.K1, KeywordIndex.B
        lengths = self._index._lengths.array
        parts_docs: list[np.ndarray] = []
        parts_scores: list[np.ndarray] = []
        for term in query_terms:  # a repeated query term counts twice, as in rank_bm25
            postings = self._index._postings.get(term)
            if postings is None:
                continue
            docs, tfs = postings.arrays(self.size)
            if not docs.size:
                continue
            idf = self.idf(term)
            # idf * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avgdl))), the same operations in
            # the same order, in place: a frequent word's postings are tens of thousands of documents,
            # and each temporary of that size is a fresh allocation
            norm = np.multiply(lengths[docs], b)
            norm /= self._avgdl
            norm += 1 - b
            norm *= k1
            tf = tfs.astype(np.float64)
            norm += tf
            score = np.multiply(tf, k1 + 1, out=tf)
            score /= norm
            score *= idf
            parts_docs.append(docs)
            parts_scores.append(score)
        if not parts_docs:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        if len(parts_docs) == 1:  # one term's postings: already distinct and ascending
            return parts_docs[0].astype(np.int64), parts_scores[0]
        return _union_sum(parts_docs, parts_scores, self.size)

    def scores(self, query_terms: Sequence[str]) -> np.ndarray:
        """BM25 of every document (zeros where no query term occurs), for score fusion."""
        out = np.zeros(self.size, dtype=np.float64)
        docs, scores = self.sparse(query_terms)
        out[docs] = scores
        return out

    def top(self, query_terms: Sequence[str], n: int) -> list[tuple[int, float]]:
        """Indexes of the ``n`` best documents with a positive score, best first (ties: lower first)."""
        docs, scores = self.sparse(query_terms)
        best = best_positive(scores, n)
        return [(int(docs[i]), float(scores[i])) for i in best]


def best_positive(scores: np.ndarray, n: int) -> np.ndarray:
    """Indexes of the ``n`` best positive ``scores``, best first, ties in index order: the first ``n``
    of a stable sort of every positive score, at the cost of a partial sort (the matches of frequent
    words at 100k memories are tens of thousands; a full sort of them cost as much as scoring them)."""
    positive = np.flatnonzero(scores > 0)
    if n <= 0 or not positive.size:
        return positive[:0]
    values = scores[positive]
    if n < positive.size:
        cut = values[np.argpartition(-values, n - 1)[n - 1]]
        keep = values >= cut  # every score tied with the n-th best is in, so the order is the full sort's
        positive, values = positive[keep], values[keep]
    return positive[np.argsort(-values, kind="stable")[:n]]


def _union_sum(parts_docs: Sequence[np.ndarray], parts_scores: Sequence[np.ndarray],
               size: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct documents of several terms' postings (each ascending, below ``size``), ascending,
    and per document the sum of its terms' scores, added in query-term order from zero (the order
    ``np.add.at`` over the concatenation adds them, so the sums are the same floats).

    ``np.unique`` sorted the concatenation from scratch, which for the postings of frequent words
    (tens of thousands of documents each at 100k memories) was most of the keyword channel's time.
    When the matches are many against the namespace (a chat turn's frame words), they are added into
    a dense array of the namespace's size (numpy passes, no sort); otherwise a stable argsort of the
    concatenation merges the already sorted runs (timsort finds them), linear in the matches."""
    total = sum(d.size for d in parts_docs)
    if total * _DENSE_SHARE >= size:
        dense = np.zeros(size, dtype=np.float64)
        seen = np.zeros(size, dtype=bool)
        for docs, scores in zip(parts_docs, parts_scores, strict=True):
            dense[docs] += scores  # a term's documents are distinct: one fancy add per term is exact
            seen[docs] = True
        unique = np.flatnonzero(seen)
        return unique.astype(np.int64), dense[unique]
    docs = np.concatenate(parts_docs)
    order = np.argsort(docs, kind="stable")
    ordered = docs[order]
    first = np.empty(ordered.size, dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    slot = np.empty(ordered.size, dtype=np.intp)
    slot[order] = np.cumsum(first) - 1  # each match's place among the distinct documents
    summed = np.zeros(int(np.count_nonzero(first)), dtype=np.float64)
    start = 0
    for scores in parts_scores:
        summed[slot[start : start + scores.size]] += scores
        start += scores.size
    return ordered[first].astype(np.int64), summed


#: The dense sum is used once the matches reach 1/this of the namespace (measured at 100k memories:
#: a merge of 165k matches cost 2.0 ms CPU, the dense sum 0.8 ms; of 20k matches, 0.18 against 0.23 ms).
_DENSE_SHARE = 4


class DocumentTerms(Sequence[frozenset[str]]):
    """Each document's set of terms. Those loaded from a persisted snapshot stay as term numbers and
    become sets when read (the floor reads a few candidates' sets, never all of them); the last
    :attr:`KEPT` sets read are kept."""

    KEPT = 4096

    def __init__(self, vocabulary: Sequence[str] = (), offsets: np.ndarray | None = None,
                 numbers: np.ndarray | None = None) -> None:
        self._vocabulary = vocabulary
        self._offsets = offsets if offsets is not None else np.zeros(1, dtype=np.int64)
        self._numbers = numbers if numbers is not None else np.zeros(0, dtype=np.int32)
        self._base = len(self._offsets) - 1
        self._appended: list[frozenset[str]] = []
        #: Sets already built from term numbers: a recall reads each candidate's twice or more (the
        #: short-reply test, keyword coverage, collapse), and the next recalls often the same ones.
        self._built: dict[int, frozenset[str]] = {}

    def append(self, terms: frozenset[str]) -> None:
        self._appended.append(terms)

    def __len__(self) -> int:
        return self._base + len(self._appended)

    @typing.overload
    def __getitem__(self, i: int) -> frozenset[str]: ...
    @typing.overload
    def __getitem__(self, i: slice) -> list[frozenset[str]]: ...
    def __getitem__(self, i: int | slice) -> frozenset[str] | list[frozenset[str]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = int(i)
        if i < 0:
            i += len(self)
        if i >= self._base:
            return self._appended[i - self._base]
        if i < 0:
            raise IndexError(i)
        found = self._built.get(i)
        if found is None:
            start, end = int(self._offsets[i]), int(self._offsets[i + 1])
            vocabulary = self._vocabulary
            found = frozenset(vocabulary[j] for j in self._numbers[start:end].tolist())
            if len(self._built) >= self.KEPT:
                self._built = {}  # replaced, not cleared: a reader in another thread keeps its dict
            self._built[i] = found
        return found


class _Growable:
    """A numpy array with amortised O(1) append; ``array`` is a view of the filled part."""

    def __init__(self, dtype: type) -> None:
        self._buffer: np.ndarray = np.zeros(16, dtype=dtype)
        self._n = 0

    @classmethod
    def of(cls, array: np.ndarray) -> _Growable:
        """Filled with ``array`` (not copied until something is appended)."""
        grown = cls.__new__(cls)
        grown._buffer, grown._n = array, int(array.size)
        return grown

    def append(self, value: int) -> None:
        if self._n == self._buffer.size:
            grown = np.zeros(max(16, self._buffer.size * 2), dtype=self._buffer.dtype)
            grown[: self._n] = self._buffer
            self._buffer = grown
        self._buffer[self._n] = value
        self._n += 1

    @property
    def array(self) -> np.ndarray:
        return self._buffer[: self._n]


class _Postings:
    """One term's (document, term frequency) pairs, documents ascending."""

    __slots__ = ("_docs", "_tfs")

    def __init__(self) -> None:
        self._docs = _Growable(np.int32)
        self._tfs = _Growable(np.int32)

    @classmethod
    def of(cls, docs: np.ndarray, tfs: np.ndarray) -> _Postings:
        postings = cls.__new__(cls)
        postings._docs, postings._tfs = _Growable.of(docs), _Growable.of(tfs)
        return postings

    @property
    def size(self) -> int:
        """Documents holding the term (in every view: its document frequency in the whole index)."""
        return self._docs._n

    def add(self, doc: int, tf: int) -> None:
        self._docs.append(doc)
        self._tfs.append(tf)

    def count_below(self, size: int) -> int:
        docs = self._docs.array
        if not docs.size or docs[-1] < size:
            return int(docs.size)
        return int(np.searchsorted(docs, size))

    def arrays(self, size: int) -> tuple[np.ndarray, np.ndarray]:
        n = self.count_below(size)
        return self._docs.array[:n], self._tfs.array[:n]
