"""Entity extraction for the write path (stored on each memory) and the query side (entity channel).

English: runs of capitalised words (names, places, products), minus sentence-initial function words.
Chinese: jieba's part-of-speech tags for person, place, organisation and other proper nouns.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from hindsight_core.text.script import has_cjk

_CAP_RUN = re.compile(r"\b([A-Z][\w'’&-]*(?:\s+(?:of|de|the|van|von|da|[A-Z][\w'’&-]*))*)")
_NOT_ENTITIES = frozenset(
    (
        "i i'm i've i'd i'll im a an the this that these those it its it's he she they we you my your our "
        "their his her what when where who why how which yes no ok okay hi hello hey thanks thank sure well so "
        "but and or if then also just oh wow yeah hmm great cool nice good sorry please let lets let's do does "
        "did is are was were be been have has had can could will would should may might must there here "
        "monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday"
    ).split()
)
_ZH_TAGS = frozenset({"nr", "nrfg", "nrt", "ns", "nt", "nz"})

_jieba_lock = threading.Lock()
_posseg: Any = None


def _pseg() -> Any:
    global _posseg
    with _jieba_lock:
        if _posseg is None:
            import logging

            import jieba
            import jieba.posseg

            jieba.setLogLevel(logging.WARNING)
            _posseg = jieba.posseg
    return _posseg


def extract_entities(text: str, *, limit: int = 12) -> list[str]:
    found: dict[str, None] = {}
    for match in _CAP_RUN.finditer(text):
        words = match.group(1).split()
        while words and words[0].lower().strip("'’") in _NOT_ENTITIES:
            words.pop(0)
        while words and words[-1].lower() in {"of", "de", "the", "van", "von", "da"}:
            words.pop()
        name = " ".join(words).strip("'’-")
        if len(name) > 1 and name.lower() not in _NOT_ENTITIES:
            found.setdefault(name, None)
    if has_cjk(text):
        for word, flag in _pseg().cut(text):
            if flag in _ZH_TAGS and len(word) > 1:
                found.setdefault(word, None)
    return list(found)[:limit]
