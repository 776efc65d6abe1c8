"""A sentence's clauses: where "Launch slipped to October 20, the payment provider isn't ready." states a
change in one clause and gives a reason in the other.

Consolidation asks whether a retired episode says something besides its old value (lifecycle/integrate.py);
recall-time updates read the clause of a later statement that speaks to the earlier one
(recall/supersede.py). Both split the same way: at clause punctuation (not inside a digit group's "25,000" or
"3.5", but after "October 20,") and at the coordinating conjunctions, a closed class of grammar words."""

from __future__ import annotations

import re

_CLAUSE = re.compile(r"(?<!\d)[,.]|[,.](?!\d)|[，。！!？?；;、\n]|\s+(?:and|but|so)\s+|(?:而且|并且|还有|但是)",
                     re.IGNORECASE)


def clauses(text: str) -> list[str]:
    """The non-empty clauses of ``text``, in order (one, the whole text stripped, when it has no break)."""
    return [c.strip() for c in _CLAUSE.split(text) if c and c.strip()]
