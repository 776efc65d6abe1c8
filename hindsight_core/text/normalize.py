"""Normalisation used for fingerprints: two texts that differ only in case, width, spacing or
punctuation are the same memory."""

from __future__ import annotations

import hashlib
import re
import unicodedata

_PUNCT_OR_SPACE = re.compile(r"[\W_]+", re.UNICODE)


def normalize(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _PUNCT_OR_SPACE.sub(" ", folded).strip()


def fingerprint(text: str) -> str:
    return hashlib.blake2b(normalize(text).encode("utf-8"), digest_size=16).hexdigest()
