"""Recall-time updates: when a query meets two memories that state the same thing about the same
subject with different values, the newer one is shown and the older reported as superseded — before any
consolidation has linked them.

"Our backend uses MySQL 5.7" and, weeks later, "the team has migrated the backend to PostgreSQL 16";
"I live in Munich" and, in a later conversation, "I moved to Berlin last month". No verb or phrase list
tells an update from an unrelated statement; these signals do, each general:

- *the same subject*: the same speaker (``role``) said both;
- *the same attribute*: their cosine stands far above the cosines of each to unrelated background
  sentences (the floor's z-score, as in collapse.py, so e5's crowded cosines do not matter; the mean
  of the two directions, as a short statement's background spread differs from a long one's). Each is
  measured against background sentences in the *other* one's language, as the floor measures a memory
  against the query's: "I drive a Toyota Corolla" and "我把旧车卖了，换了辆特斯拉" stand at z −2.5
  against their own languages' backgrounds and at 3.0 against each other's;
- *a different value*: they do not share most of their rare words (that would be a repeat, which
  collapse.py folds into one hit instead);
- *each other's closest*: the newer one is the closest to the older of all later memories the same
  speaker said in other conversations, and the older the closest to the newer of all earlier ones (the
  agent's "October 20, understood." is not a rival of the user's "The launch is set for October 1").
  In a long conversation one speaker says many things about one topic, all close to each other
  (LoCoMo: with the background z
  alone, later remarks on a topic replaced earlier ones and cost 0.16 recall@10); an update and what it
  replaces stand out from the rest as a pair, and a chain of updates (Shanghai, Hangzhou, Nanjing) is a
  chain of such pairs;
- *a change*: the newer one states that something changed ("moved to", "migrated to", "改到"), a kind of
  sentence learned from examples (``sentence_kinds.py``), not a verb list. A later remark that only says
  more on the topic ("My sister lives in Hamburg" after "I live in Munich"; in LoCoMo, a friend's later
  remark on a topic) is no update;
- *the clause that speaks to it*: a change is often said with a reason ("Launch slipped to October 20,
  the payment provider isn't ready"; "跟老婆商量了，预算加到十八万"), and the reason clause pulls the
  whole sentence away from the older statement (pair z 2.2 for the launch; the change classifier reads
  −0.02 for the budget). When the whole newer memory does not qualify but the two are each other's
  closest, its clauses are read: the clause closest to the older one is measured (3.3) and judged
  a change (0.15) on its own. Only then are its clauses embedded, once per memory (``clause_vectors``);
- *a later conversation*: the newer one was said in another session. Two statements of one
  conversation ("I'm allergic to peanuts … I'm also allergic to shellfish") add up; the same attribute
  restated in a later conversation is the user's state as it is now.

And it applies only to a query about the present. A question in the grammar of the past ("where did I
live in January?", "我以前住在哪") asks for the old value (``analysis.speaks_of_the_past``); a question
or a request about now gets the current value only ("book me a spin class" after the workout time
moved). A request *recorded* in a later session ("suggest a dinner for my vegan diet" after "I am
vegan") is no update: it states no change.

The agent's echo of the older value ("25,000 dollars, noted.", the next turn, by another speaker, about
the same attribute) goes where the older one goes.

An older memory may say more than the value that changed: "I live in Leeds, I work as a pharmacist and I
have a beagle called Max." before "I quit the pharmacy, I'm a software tester now." (the older one's
clauses are read too when the whole pair does not qualify: "我叫马丽，在天津当幼师，有两个孩子。" before "我们全家
搬到大连了"). It says more when one of its clauses is neither small talk nor about the newer one's attribute
(below the bar with it: the beagle stands at 0.8, where "想买辆车" stands at 2.9 with "预算加到十八万" and
is part of what changed). Then the update is *partial*: it holds for a query about the clause that
changed (the query's closest clause of the older memory: "What do I do for work?"), and for any other
("What's my dog's name?") the older memory keeps its place with its update beside it, so that what did not
change is still answered and what did never stands uncorrected. Consolidation does the same fact by fact
(``lifecycle/integrate.py`` keeps the rest of a retired episode).

The older one hands its place to the newer one (which may not have cleared the floor on its own: "I
moved to Berlin last month" is far from "where do I live now?" on its face), exactly as a memory that
consolidation superseded does in ``RecallPipeline._live``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hindsight_core.recall.analysis import speaks_of_the_past
from hindsight_core.recall.collapse import shares_more_than_apart
from hindsight_core.recall.profile import is_question
from hindsight_core.text.clauses import clauses
from hindsight_core.types import Memory


@dataclass(frozen=True)
class Update:
    """``older`` is superseded at recall time by ``newer`` (the newest of a chain). ``partial`` names the
    memory that says more than the value that changed ("I live in Leeds, I work as a pharmacist and I
    have a beagle called Max."): the older itself, or the statement an echo repeated; ``clause`` is the
    index of its clause that the newer one updates. Such an update holds only for a query about that
    clause (``holds_for``)."""

    older: str
    newer: str
    partial: str | None = None
    clause: int = 0


def holds_for(update: Update, closest_clause: Callable[[str], int]) -> bool:
    """Whether ``update`` applies to a query whose closest clause of a memory is ``closest_clause(id)``:
    always for an older memory that holds the changed value alone; for one that says more, when the query
    is about the clause that changed ("What do I do for work?" after "I'm a software tester now"), not
    about the rest ("What's my dog's name?", which only the older memory answers)."""
    return update.partial is None or closest_clause(update.partial) == update.clause


def about_the_present(query: str) -> bool:
    """A question or a request, not in the grammar of the past."""
    return not speaks_of_the_past(query)


def said_later_elsewhere(old: Memory, new: Memory) -> bool:
    """Whether ``new`` could update ``old`` by who said it and when: the same speaker, later, in another
    conversation (see the module doc)."""
    return (
        new.occurred_at > old.occurred_at
        and old.role == new.role
        and (old.session_id != new.session_id or old.session_id is None)
    )


def is_update(old: Memory, new: Memory, *, z: float, bar: float, repeats: bool) -> bool:
    """Whether ``new`` restates ``old``'s attribute with another value, later (see the module doc);
    ``repeats``: ``new`` shares more of ``old``'s rare words than it holds apart (a repeat, not a change)."""
    return said_later_elsewhere(old, new) and z >= bar and not repeats


def find_updates(
    ordered: Sequence[tuple[str, float]],
    kept: set[str],
    memories: Mapping[str, Memory],
    *,
    vector: Callable[[str], np.ndarray | None],
    pair_z: Callable[[np.ndarray, np.ndarray, str], float],
    terms: Callable[[str], frozenset[str] | None],
    idf: Callable[[str], float],
    bar: float,
    nearest: Callable[[str, bool], str | None],
    changes: Callable[[np.ndarray], bool] | None = None,
    echoes: Callable[[str], list[str]] | None = None,
    clause_vectors: Callable[[str], Sequence[np.ndarray]] | None = None,
    changed_clause: Callable[[str, str], int | None] | None = None,
) -> list[Update]:
    """The kept candidates that a newer candidate of ``ordered`` updates, each with its newest update.

    Only kept memories can be superseded (an older value that did not reach the floor is not shown
    anyway); the newer one may be any candidate the query reached. ``nearest(id, later)`` is the memory
    of the namespace closest to ``id`` among those after it (``later``) or before it (not an exact
    repeat of it). ``changes(vector)``, when given, must hold for the newer one: it states a change.
    ``echoes(id)``, when given, names the turns that repeated a memory back (the agent's "25,000, noted."):
    a kept echo of an updated memory is updated with it, whether or not the memory itself was kept.
    ``clause_vectors(id)``, when given, are the vectors of a memory's clauses (none for one clause): a
    pair the whole memories do not make is looked at clause by clause when they are each other's
    closest, on both sides: an older memory may state several things of which one changed ("我叫马丽，在天津
    当幼师，有两个孩子。" before "我们全家搬到大连了")."""
    # a question states no value: it neither updates a statement nor is updated ("Can we move the offsite
    # to Lisbon instead?" reads as a change to the classifier, and the offsite is still in Porto)
    ids = [mid for mid, _ in ordered if mid in memories and not is_question(memories[mid].content)]
    by_time = sorted(ids, key=lambda mid: memories[mid].occurred_at)
    candidates = set(ids)
    successor: dict[str, str] = {}

    def _by_clause(old_id: str, later: Sequence[str]) -> str | None:
        """The update of ``old_id`` read clause by clause: the two are each other's closest, and the
        newer one's clause closest to it qualifies as the whole would have to. Only for a kept memory
        with a later candidate that could be one (the same speaker in another conversation, a word in
        common, more than one clause on either side): the namespace-wide look costs a pass over every
        vector."""
        old, to = memories[old_id], terms(old_id)
        several = len(clauses(old.content)) > 1
        if old_id not in kept or to is None or not any(
                said_later_elsewhere(old, memories[n]) and to & (terms(n) or frozenset())
                and (several or len(clauses(memories[n].content)) > 1) for n in later):
            return None
        target = nearest(old_id, True)
        if target is None or target not in candidates or nearest(target, False) != old_id:
            return None
        assert clause_vectors is not None
        new = memories[target]
        vo, vn, tn = vector(old_id), vector(target), terms(target)
        if vo is None or vn is None or tn is None:
            return None
        olds, news = clause_vectors(old_id) or (vo,), clause_vectors(target) or (vn,)
        z, best = max(((pair_z(a, b, new.content) + pair_z(b, a, old.content)) / 2, j)
                      for a in olds for j, b in enumerate(news))
        if changes is not None and not changes(news[best]):
            return None
        ok = is_update(old, new, z=z, bar=bar, repeats=shares_more_than_apart(to, tn, idf))
        return target if ok else None
    for i in reversed(range(len(by_time))):  # newest first, so that a chain's later links are known
        old_id = by_time[i]
        old = memories[old_id]
        vo, to = vector(old_id), terms(old_id)
        if vo is None or to is None:
            continue
        possible: set[str] = set()
        for new_id in by_time[i + 1:]:
            new = memories[new_id]
            vn, tn = vector(new_id), terms(new_id)
            if vn is None or tn is None or (changes is not None and not changes(vn)):
                continue
            z = (pair_z(vo, vn, new.content) + pair_z(vn, vo, old.content)) / 2
            if is_update(old, new, z=z, bar=bar, repeats=shares_more_than_apart(to, tn, idf)):
                possible.add(new_id)
        if not possible:  # the namespace-wide look only when a pair qualifies, or may by a clause
            if clause_vectors is None or (target := _by_clause(old_id, by_time[i + 1:])) is None:
                continue
            successor[old_id] = target
            continue
        target = nearest(old_id, True)
        if target not in possible:
            continue
        back = nearest(target, False)  # the target's closest earlier: this one, or a link of its chain
        if back == old_id or (back is not None and successor.get(back) == target):
            successor[old_id] = target

    def newest_of(old_id: str) -> str:
        newest, seen = successor[old_id], {old_id}
        while newest in successor and newest not in seen:
            seen.add(newest)
            newest = successor[newest]
        return newest

    changed: dict[str, int | None] = {}

    def update(older: str, of: str, newer: str) -> Update:
        """``older``'s update, partial when ``of`` (older, or the statement it echoes) says more; read only
        for an update that is returned, as it may embed ``of``'s clauses."""
        if of not in changed:
            changed[of] = changed_clause(of, newest_of(of)) if changed_clause is not None else None
        clause = changed[of]
        return Update(older=older, newer=newer, partial=None if clause is None else of, clause=clause or 0)

    updates = [update(old_id, old_id, newest_of(old_id)) for old_id in ids if old_id in kept and old_id in successor]
    if echoes is not None:
        hidden = {u.older for u in updates}
        for old_id in (mid for mid in ids if mid in successor):
            newest = newest_of(old_id)
            for echo in echoes(old_id):
                if echo in kept and echo not in hidden and echo != newest:
                    hidden.add(echo)
                    updates.append(update(echo, old_id, newest))
    return updates


def hand_over(
    ordered: Sequence[tuple[str, float]], kept: set[str], updates: Sequence[Update], *, beside: bool = False
) -> tuple[list[tuple[str, float]], set[str]]:
    """Each superseded candidate gives its place (its fused score, if higher) to its update; ``beside``:
    keeps it too, its update shown next to it (a partial update that does not hold for the query: the
    older memory answers it, and the value that changed does not stand uncorrected)."""
    if not updates:
        return list(ordered), kept
    scores = dict(ordered)
    older = set() if beside else {u.older for u in updates}
    for u in updates:
        scores[u.newer] = max(scores.get(u.newer, 0.0), scores[u.older])
    out = sorted(((mid, s) for mid, s in scores.items() if mid not in older), key=lambda kv: -kv[1])
    return out, (kept - older) | {u.newer for u in updates}
