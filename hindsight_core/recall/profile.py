"""Standing facts: what a person said once of themselves that should shape their later requests.

An allergy matters to "recommend a dessert", a night shift to "when should I go to the gym", although
each pair shares no words and sits far apart in embedding space. No list of domains can name every such
pair, so a memory is a standing fact by what kind of sentence it is (``sentence_kinds.py``): a person's
own statement (first person, or Chinese with the subject dropped; not the agent's turn) of a lasting
state, condition, habit or preference,
or a distilled fact or preference that reads as one. A query that is a request gets the namespace's
standing facts closest to it offered as evidence (``RecallConfig.standing_offers``); a question about
the asker ("我是做哪一行的？", ``SentenceKinds.about_asker``) gets the one closest of those and of every
other distilled fact (``FACT``), since it asks for one thing about them and e5 often puts its answer
barely above unrelated sentences; a question of fact or about the past gets none, whatever it
resembles."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from hindsight_core.text.script import has_cjk
from hindsight_core.types import AGENT_ROLES, Layer, Memory

#: The kind of standing fact (``Corpus.standing_index`` is keyed by kind).
STATE = "state"
#: A starting memory that is a standing fact: a template's default (starting.py). A request is offered it
#: as it is offered the person's own standing facts (a new user's "prefers short answers" shapes their
#: first request); a question about the asker is not, since it is not what they said of themselves. Offered by
#: kind to those too, an eight-memory template answered every unanswerable question about the asker on
#: the behaviour set (282 of 282) and took the one offer from the user's own fact ("我姐姐是做什么的？" was
#: given "用户是初学者。").
DEFAULT = "default"
#: A fact distilled from what the person said (``Layer.SEMANTIC``, not a starting memory) that the standing
#: classifier does not read as a lasting state: "用户现在住在大连（搬家后）" reads as an event, yet it is the
#: person's current home. A question about the asker is offered the closest of these and of ``STATE``: a
#: distilled fact is about the person by construction, and without it the offer went to the closest
#: episode, "我叫马丽，在天津当幼师，有两个孩子。", the old city beside the new one. A request is not offered
#: it: only a lasting state bears on what to choose.
FACT = "fact"
#: A turn with nothing to recall: thanks, greetings, acknowledgements (``SentenceKinds.content_free``). It
#: stays in the transcript and is never a recall candidate; kept beside ``STATE`` so a snapshot holds both.
CONTENT_FREE = "content_free"

#: The first person in English and Chinese: grammar, a closed class, not a topic list.
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i’m|i've|i'd|i'll|me|my|mine|myself)\b|我", re.IGNORECASE)
#: Chinese drops the subject: "最近膝盖受伤了，医生说三个月不能跑步。" is the speaker's own knee. A Chinese
#: statement that names no person (no pronoun of the first, second or third person) is said of the speaker.
_CHINESE_PERSON = re.compile(r"[我你您他她它咱]")


def memory_kinds(memories: Sequence[Memory], scores: np.ndarray, content_free: np.ndarray, *,
                 standing_margin: float) -> list[tuple[str, ...]]:
    """For each memory, its kind: ``(STATE,)`` for a standing fact (``(DEFAULT,)`` for a starting memory
    that is one), ``(FACT,)`` for another distilled fact, ``(CONTENT_FREE,)`` for a turn that says nothing
    to recall, or none. ``scores`` are the
    standing-state classifier's and ``content_free`` the content-free classifier's (``SentenceKinds``) for
    the memories' vectors; ``standing_margin`` the standing classifier's held-out margin (``is_standing``)."""
    out: list[tuple[str, ...]] = []
    for m, s, free in zip(memories, scores, content_free, strict=True):
        if m.layer == Layer.EPISODIC and float(free) > 0.0:
            out.append((CONTENT_FREE,))
        elif is_standing(m, float(s), standing_margin):
            out.append((DEFAULT if m.starting else STATE,))
        elif m.layer == Layer.SEMANTIC and not m.starting and not is_question(m.content):
            out.append((FACT,))
        else:
            out.append(())
    return out


def is_question(text: str) -> bool:
    """Whether ``text`` asks rather than states (grammar: its closing mark). "When do I use whom instead of
    who?" is in the first person and reads like a habit to the classifier, yet says nothing of what holds
    for the person who asked it."""
    return text.rstrip().endswith(("?", "？"))


def is_standing(memory: Memory, score: float, margin: float) -> bool:
    """Whether ``memory`` is a standing fact, given the standing classifier's ``score`` for its vector and
    its held-out ``margin`` (``SentenceKinds.standing_margin``), which a statement naming no one must pass."""
    if score <= 0.0 or is_question(memory.content):
        return False
    if memory.layer == Layer.SEMANTIC:
        return True  # distilled from what the person said about themselves
    if memory.layer != Layer.EPISODIC:
        return False
    if memory.role is not None and memory.role.lower() in AGENT_ROLES:
        return False
    return said_of_self(memory.content, sure=score > margin)


def said_of_self(text: str, *, sure: bool) -> bool:
    """Whether a person's statement is about themself: in the first person, or in Chinese with its subject
    dropped (``_CHINESE_PERSON``) when the classifier is ``sure`` it states a standing state. A turn about
    someone else ("他喜欢钓鱼", "The printer is broken again") is not the person's standing fact, whatever
    the classifier reads in it. A dropped subject is often the topic of the turn before, not the speaker
    ("就是冬天风大。" of a new city, "所以去重庆出差简直是灾难。" of spicy food), and such remarks score near 0;
    past the held-out margin the classifier reads a lasting state of the speaker ("家用为主，偶尔跑长途。",
    "夏天好多水果都不敢乱吃。", the knee injury)."""
    if _FIRST_PERSON.search(text):
        return True
    return sure and has_cjk(text) and _CHINESE_PERSON.search(text) is None
