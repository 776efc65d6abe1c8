"""Fit the relevance floor's operating point to a user's own labelled questions (``hindsight tune``).

The floor's height (``floor_anchor_base``: how far above chance's best the evidence must stand) was
fitted on the development sets with the default embedder. Another embedder, or conversations unlike
those sets, move the evidence a real match and an unrelated question reach, so bars that were right
there refuse an answer or let an off-topic question through here. A user who can say, for some
questions, which memories answer them — and, for others, that nothing should be injected — has what it
takes to move the bars.

Every setting is judged as the user meets it: by what ``recall`` injects at the adapters' ``k`` over the
namespace's tree, read-only (``track=False``). An answerable question passes when an injected hit (or a
fact it folded in) is one of its answers; an unanswerable one when nothing is injected. A bar low enough
to answer everything also lets in what the user never wants to see again — the old budget beside the
new one, "Thanks, bye!" — so an example may also name memories that must not be injected (``forbid``):
an answerable question with one injected fails, and a question with only ``forbid`` (a guarded one) is
judged on that alone. The score is the mean of the pass rates of the kinds present, so a set with many
more of one kind is not fitted to that kind alone, and a tie goes to the setting that answers more (then
to the smaller change). Which setting wins is chosen on all folds but one and measured on the held one,
fold by fold: the before/after table is what the change does to questions its fit did not see, and
nothing is written unless that is better than today."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from hindsight_core.clock import aware
from hindsight_core.config import HindsightConfig, RecallConfig
from hindsight_core.errors import InvalidInputError

if TYPE_CHECKING:
    from hindsight_core.engine import Hindsight
    from hindsight_core.recall.types import RecallHit, RecallResult

#: The field a tune moves: where the bar for "something here answers this" sits. The bar the other hits
#: of an answered question need (chance's best, floor.py) moves with it by as much.
TUNED_FIELDS = ("floor_anchor_base",)
#: Offsets tried around today's ``floor_anchor_base``: evidence is in standard deviations, and ±3 spans
#: the bar fitted here and one a permissive embedder needs (a bar 3.6 too low let 10 of 12 off-topic
#: questions through; tuning from there restored 11 of 12, tests/recall/test_tuning.py).
ANCHOR_OFFSETS = tuple(x / 2 for x in range(-6, 7))
FOLDS = 5
#: Fewer labelled questions than this of either kind and a fold holds too few to measure the change
#: on (with 5 folds, 4 answerable and 2 unanswerable ones): ``tune`` refuses rather than overfit.
MIN_ANSWERABLE = 20
MIN_UNANSWERABLE = 10


#: The kinds of example, each a pass rate of its own in the score.
ANSWERABLE, UNANSWERABLE, GUARDED = "answerable", "unanswerable", "guarded"
KINDS = (ANSWERABLE, UNANSWERABLE, GUARDED)


@dataclass(frozen=True)
class Example:
    """One labelled question: the memories that answer it (ids or the ``source_id`` given to ``record``),
    none for a question nothing in the memory should be injected for; and the memories that must not be
    injected for it (``forbid``: a value the answer replaced, small talk). With ``forbid`` and no
    ``answers`` the question is *guarded*: judged on ``forbid`` alone."""

    question: str
    namespace: str
    answers: frozenset[str]
    session_id: str | None = None
    #: The clock when it was asked ("last week" means the week before it); ``None``: the engine's now.
    at: datetime | None = None
    forbid: frozenset[str] = frozenset()

    @property
    def kind(self) -> str:
        if self.answers:
            return ANSWERABLE
        return GUARDED if self.forbid else UNANSWERABLE


def read_examples(lines: Iterable[str], *, namespace: str | None = None, source: str = "examples") -> list[Example]:
    """Examples from JSON lines: ``{"question": ..., "answers": [memory id or source_id, ...],
    "forbid": [...], "namespace": ..., "session_id": ..., "at": ISO time}``; ``answers`` ``[]`` means
    nothing should be injected, and may be left out when ``forbid`` is given (a guarded question, judged on
    ``forbid`` alone); ``forbid`` (optional) names memories that must not be injected; ``namespace`` may
    come from the caller instead, ``at`` (when it was asked) is optional. Blank lines are skipped; a bad
    line raises :class:`InvalidInputError` naming it."""
    out: list[Example] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{source}, line {number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{where}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise InvalidInputError(f"{where}: expected an object with question and answers")
        question, forbid = row.get("question"), row.get("forbid", [])
        answers = row.get("answers", [] if forbid else None)
        ns = row.get("namespace", namespace)
        session = row.get("session_id")
        if not isinstance(question, str) or not question.strip():
            raise InvalidInputError(f"{where}: question must be a non-empty string")
        if not isinstance(answers, list) or not all(isinstance(a, str) and a for a in answers):
            raise InvalidInputError(f"{where}: answers must be a list of memory ids or source_ids ([] for none)")
        if not isinstance(forbid, list) or not all(isinstance(a, str) and a for a in forbid):
            raise InvalidInputError(f"{where}: forbid must be a list of memory ids or source_ids")
        if set(answers) & set(forbid):
            raise InvalidInputError(f"{where}: {sorted(set(answers) & set(forbid))} both answers and is forbidden")
        if not isinstance(ns, str) or not ns:
            raise InvalidInputError(f"{where}: no namespace (give one on the line or --namespace)")
        if session is not None and not isinstance(session, str):
            raise InvalidInputError(f"{where}: session_id must be a string")
        at = row.get("at")
        if at is not None:
            try:
                at = aware(datetime.fromisoformat(at), what="at")
            except (TypeError, ValueError, InvalidInputError):
                raise InvalidInputError(f"{where}: at must be an ISO time with its offset") from None
        out.append(Example(question, ns, frozenset(answers), session, at, frozenset(forbid)))
    return out


@dataclass(frozen=True)
class Measure:
    """Passes of one setting over some examples."""

    answered: int
    answerable: int
    quiet: int
    unanswerable: int
    #: Guarded questions given nothing they forbid, of how many.
    clean: int = 0
    guarded: int = 0

    @property
    def score(self) -> float:
        """Mean of the pass rates of the kinds with examples (1.0 with none)."""
        rates = [passes / asked for passes, asked in ((self.answered, self.answerable), (self.quiet, self.unanswerable),
                                                      (self.clean, self.guarded)) if asked]
        return sum(rates) / len(rates) if rates else 1.0

    def __add__(self, other: Measure) -> Measure:
        return Measure(self.answered + other.answered, self.answerable + other.answerable,
                       self.quiet + other.quiet, self.unanswerable + other.unanswerable,
                       self.clean + other.clean, self.guarded + other.guarded)


@dataclass(frozen=True)
class TuneReport:
    """What a tune measured: today's settings and the fitted ones on held-out folds, and the fit on
    every example (what :meth:`config` writes)."""

    before: Measure
    after: Measure
    current: dict[str, float]
    fitted: dict[str, float]
    folds: int
    examples: int
    #: The operating-point curve on every example: for each ``floor_anchor_base`` tried, what it answers
    #: and keeps quiet; lower bars answer more and let more through.
    curve: tuple[tuple[float, Measure], ...] = ()

    @property
    def improved(self) -> bool:
        return self.after.score > self.before.score

    def config(self, base: HindsightConfig) -> HindsightConfig:
        """``base`` with the fitted recall settings."""
        return base.model_copy(update={"recall": base.recall.model_copy(update=self.fitted)})


def passed(result: RecallResult, example: Example) -> bool:
    """An answerable question passes when an injected hit, or a memory folded into one, is an answer and
    none is forbidden; a guarded one when none is forbidden; an unanswerable one when nothing is
    injected. A hit's folded memories and cited sources count as injected: the prompt quotes them."""
    if any(_names(hit) & example.forbid for hit in result.hits):
        return False
    if example.kind == UNANSWERABLE:
        return not result.hits
    return example.kind == GUARDED or any(_names(hit) & example.answers for hit in result.hits)


def _names(hit: RecallHit) -> set[str]:
    names = {hit.memory.id, hit.memory.source_id}
    for source in hit.sources:
        names |= {source.id, source.source_id}
    names.discard(None)
    return names  # type: ignore[return-value]


def settings_around(current: RecallConfig) -> list[dict[str, float]]:
    """The grid: today's setting first, then every other anchor offset."""
    now = {f: float(getattr(current, f)) for f in TUNED_FIELDS}
    others = [{"floor_anchor_base": round(now["floor_anchor_base"] + offset, 4)} for offset in ANCHOR_OFFSETS]
    return [now, *(s for s in others if s != now)]


def fold_of(kinds: Sequence[str], folds: int) -> list[int]:
    """Stratified, deterministic folds: each kind dealt round the folds in file order."""
    out = [0] * len(kinds)
    dealt = dict.fromkeys(KINDS, 0)
    for i, kind in enumerate(kinds):
        out[i] = dealt[kind] % folds
        dealt[kind] += 1
    return out


def check_size(examples: Sequence[Example]) -> None:
    answerable = sum(ex.kind == ANSWERABLE for ex in examples)
    unanswerable = sum(ex.kind == UNANSWERABLE for ex in examples)
    if answerable < MIN_ANSWERABLE or unanswerable < MIN_UNANSWERABLE:
        raise InvalidInputError(
            f"too few examples to tune on: {answerable} answerable and {unanswerable} unanswerable, need at "
            f"least {MIN_ANSWERABLE} and {MIN_UNANSWERABLE} (questions with answers [] are the unanswerable "
            "ones: without them a fit would lower the bar until every question is given memories)"
        )


def tune(
    hs: Hindsight,
    examples: Sequence[Example],
    *,
    k: int | None = None,
    subtree: bool = True,
    folds: int = FOLDS,
    progress: Callable[[int, int], None] | None = None,
) -> TuneReport:
    """Fit :data:`TUNED_FIELDS` to ``examples`` on ``hs``'s memories (read-only: nothing is logged or
    reinforced) and measure the fit on held-out folds. Raises :class:`InvalidInputError` when there are
    too few examples (:func:`check_size`)."""
    if not 2 <= folds <= 20:
        raise InvalidInputError(f"folds must be between 2 and 20, not {folds}")
    check_size(examples)
    grid = settings_around(hs.config.recall)
    outcome = outcomes(hs, examples, grid, k=k, subtree=subtree, progress=progress)
    return fit([ex.kind for ex in examples], grid, outcome, folds)


def outcomes(
    hs: Hindsight, examples: Sequence[Example], grid: Sequence[dict[str, float]], *, k: int | None = None,
    subtree: bool = True, progress: Callable[[int, int], None] | None = None,
) -> list[list[bool]]:
    """``[setting][example]``: whether each example passes under each setting of ``grid``."""
    current = hs.config.recall
    out: list[list[bool]] = []
    total, done = len(grid) * len(examples), 0
    for setting in grid:
        cfg = current.model_copy(update=setting)
        row = []
        for ex in examples:
            result = hs.recall(ex.question, ex.namespace, session_id=ex.session_id, k=k, subtree=subtree,
                               now=ex.at, track=False, config=cfg)
            row.append(passed(result, ex))
            done += 1
            if progress is not None:
                progress(done, total)
        out.append(row)
    return out


def tally(kinds: Sequence[str], passes: Sequence[bool], members: Iterable[int] | None = None) -> Measure:
    """What one setting's ``passes`` add up to over ``members`` (every example when ``None``), by the
    examples' ``kinds``."""
    counts = {kind: [0, 0] for kind in KINDS}
    for i in range(len(passes)) if members is None else members:
        counts[kinds[i]][0] += passes[i]
        counts[kinds[i]][1] += 1
    return Measure(*counts[ANSWERABLE], *counts[UNANSWERABLE], *counts[GUARDED])


def fit(
    kinds: Sequence[str], grid: Sequence[dict[str, float]], outcome: Sequence[Sequence[bool]], folds: int
) -> TuneReport:
    """Choose a setting of ``grid`` (``grid[0]`` is today's) from ``outcome[setting][example]``, fold by
    fold, and measure each choice on its held fold; then choose on every example. ``kinds``: each
    example's :attr:`Example.kind`."""
    fold = fold_of(kinds, folds)

    def measure(s: int, members: Iterable[int]) -> Measure:
        return tally(kinds, outcome[s], members)

    def change(s: int) -> float:
        return sum(abs(grid[s][f] - grid[0][f]) for f in TUNED_FIELDS)

    def best(members: list[int]) -> int:
        # the best mean pass rate; a tie to more answered, then to the smallest change from today's
        measured = [measure(s, members) for s in range(len(grid))]
        return max(range(len(grid)), key=lambda s: (measured[s].score, measured[s].answered, -change(s)))

    everyone = list(range(len(kinds)))
    before, after = Measure(0, 0, 0, 0), Measure(0, 0, 0, 0)
    for f in range(folds):
        held = [i for i in everyone if fold[i] == f]
        rest = [i for i in everyone if fold[i] != f]
        before += measure(0, held)
        after += measure(best(rest), held)
    chosen = grid[best(everyone)]
    curve = tuple(sorted(((grid[s]["floor_anchor_base"], measure(s, everyone)) for s in range(len(grid))),
                         key=lambda p: p[0]))
    return TuneReport(before=before, after=after, current=dict(grid[0]), fitted=dict(chosen), folds=folds,
                      examples=len(kinds), curve=curve)


def report_rows(report: TuneReport) -> list[tuple[str, str, str]]:
    """``(what, today, tuned)`` rows of the held-out comparison, for the CLI's table and its JSON."""
    b, a = report.before, report.after
    rows = [
        ("answerable questions answered", f"{b.answered}/{b.answerable}", f"{a.answered}/{a.answerable}"),
        ("unanswerable questions given nothing", f"{b.quiet}/{b.unanswerable}", f"{a.quiet}/{a.unanswerable}"),
    ]
    if b.guarded:
        rows.append(("guarded questions given nothing forbidden", f"{b.clean}/{b.guarded}", f"{a.clean}/{a.guarded}"))
    return [*rows, ("mean of the rates", f"{b.score:.3f}", f"{a.score:.3f}")]


def as_dict(report: TuneReport) -> dict[str, Any]:
    return {
        "examples": report.examples, "folds": report.folds, "improved": report.improved,
        "current": report.current, "fitted": report.fitted,
        "held_out": {name: {"today": today, "tuned": tuned} for name, today, tuned in report_rows(report)},
        "curve": [{"floor_anchor_base": bar, "answered": m.answered, "answerable": m.answerable,
                   "quiet": m.quiet, "unanswerable": m.unanswerable, "clean": m.clean, "guarded": m.guarded}
                  for bar, m in report.curve],
    }


__all__ = [
    "Example", "Measure", "TuneReport", "fit", "outcomes", "passed", "read_examples", "settings_around", "tally",
    "tune",
]
