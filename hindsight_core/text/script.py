"""Which writing system a text is in. Chinese is written without spaces, so it takes its own tokeniser
(jieba), its own relevance background and its own extraction rules; this module is the one place that
says what counts as a Chinese character."""

from __future__ import annotations

import re

#: Han ideographs: the unified block, Extension A and the compatibility block, as the body of a regex
#: character class.
CJK_CHARS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
#: A run of Han ideographs (what jieba segments).
CJK_RUN = re.compile(f"[{CJK_CHARS}]+")
_CJK_CHAR = re.compile(f"[{CJK_CHARS}]")


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a Han ideograph at all."""
    return not text.isascii() and _CJK_CHAR.search(text) is not None


def is_cjk(text: str) -> bool:
    """Whether a text is mainly Chinese (at least 30% of its letters are Han ideographs): a mixed text
    such as "我在用 PostgreSQL 16" counts, an English one quoting a name in Chinese does not."""
    if text.isascii():  # no Han character at all (and the per-character count cost 5 s of a 100k cold start)
        return False
    letters = sum(1 for c in text if c.isalpha())
    return letters > 0 and len(_CJK_CHAR.findall(text)) / letters >= 0.3
