"""The recall pipeline: the read path's stages (docs/architecture.md), wired together.

Every stage is a function in its own module; this one only moves data between them and keeps the
per-engine state (namespace snapshots, background vectors, reranker). The stages run in the caller's
thread, one after the other; only the recall log's flush goes to a worker."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import NamedTuple

import numpy as np

from hindsight_core.activation.base import ActivationIndex
from hindsight_core.clock import to_ts
from hindsight_core.config import HindsightConfig, RecallConfig
from hindsight_core.context import Changes
from hindsight_core.embeddings.base import Embedder
from hindsight_core.recall import channels as ch
from hindsight_core.recall import sentence_kinds
from hindsight_core.recall.analysis import analyze
from hindsight_core.recall.budget import pack
from hindsight_core.recall.collapse import Sameness, brings_no_figure, collapse, is_agent
from hindsight_core.recall.corpus import Corpus, CorpusCache, VectorsFor
from hindsight_core.recall.floor import (
    Baseline,
    Evidence,
    LanguageBaselines,
    anchor_threshold,
    apply_floor,
    asking_background,
    baseline,
    chance_best,
    clears,
    cross_lingual_scale,
    floor_bars,
    is_anchored,
    keyword_coverage,
    memory_side_z,
    split_background,
)
from hindsight_core.recall.fusion import (
    Scored,
    candidate_pool,
    rrf,
    spread_to_neighbours,
    with_neighbours,
    zsum,
)
from hindsight_core.recall.keyword import tokenize
from hindsight_core.recall.log import LogEntry, RecallRecorder
from hindsight_core.recall.moments import Spread
from hindsight_core.recall.profile import CONTENT_FREE, DEFAULT, FACT, STATE, is_question, memory_kinds
from hindsight_core.recall.rerank import Reranker, rerank
from hindsight_core.recall.snapshot_file import SnapshotFiles
from hindsight_core.recall.supersede import Update, about_the_present, find_updates, hand_over, holds_for
from hindsight_core.recall.trace import FinalScore, FloorDecision, RecallTrace, TraceCandidate
from hindsight_core.recall.types import Conflict, QueryAnalysis, RecallHit, RecallResult, render_hit
from hindsight_core.store import demotions
from hindsight_core.store.sql import RelationalStore
from hindsight_core.text.clauses import clauses
from hindsight_core.text.script import is_cjk
from hindsight_core.text.tokens import TokenCounter, truncate_to_tokens
from hindsight_core.types import Activation, Layer, Memory, Status
from hindsight_core.vectors.base import LoadsInBackground, SharesCollections, VectorIndex
from hindsight_core.write.outbox import ACTIVATION, VECTOR, OutboxApplier, unreachable


def _content_free(corpus: Corpus, i: int, max_terms: int) -> bool:
    """Small talk: flagged by its kind (profile.CONTENT_FREE) and no longer than the small talk the
    classifier learned from (``max_terms``: ``sentence_kinds.content_free_max_terms``)."""
    return CONTENT_FREE in corpus.standing[i] and len(corpus.keyword.terms[i]) <= max_terms


log = logging.getLogger("hindsight.recall")

#: The recall settings of the call in progress, when it was given its own (``run(config=...)``).
_CALL_CONFIG: ContextVar[RecallConfig | None] = ContextVar("hindsight_recall_config", default=None)

CHANNELS = ("vector", "keyword", "temporal", "entity", "profile", "activation")


class CachedCounter:
    """A token counter with a bounded memo (most recall texts are memories counted before)."""

    def __init__(self, counter: TokenCounter, capacity: int = 50_000) -> None:
        self._counter = counter
        self._capacity = capacity
        self._memo: dict[str, int] = {}
        self._lock = threading.Lock()

    def count(self, text: str) -> int:
        with self._lock:
            cached = self._memo.get(text)
        if cached is not None:
            return cached
        value = self._counter.count(text)
        with self._lock:
            if len(self._memo) >= self._capacity:
                self._memo.clear()
            self._memo[text] = value
        return value

    def at_most(self, text: str) -> int:
        """The count when it is known, else the wrapped counter's bound (its count without one)."""
        with self._lock:
            cached = self._memo.get(text)
        if cached is not None:
            return cached
        bound = getattr(self._counter, "at_most", None)
        return int(bound(text)) if bound is not None else self.count(text)


class _QueryReading(NamedTuple):
    """What a recall reads off its query once and uses in every namespace it searches."""

    baselines: LanguageBaselines
    #: The standing-fact kinds it asks to be offered (a request: ``_requested``).
    requested: set[str]
    #: About the asker: anchors on weaker evidence; ``asker_offered``: sure of it, so offered a fact by kind.
    about_asker: bool
    asker_offered: bool


@dataclass
class _Part:
    """One namespace's candidates after the floor (``RecallPipeline._candidates``)."""

    namespace: str
    corpus: Corpus
    rankings: dict[str, ch.Ranked]
    weights: dict[str, float]
    ordered: list[tuple[str, float]]
    replaced: dict[str, str]
    fresh: dict[str, Memory]
    reranked: dict[str, float] | None
    evidence: dict[str, Evidence]
    kept: set[str]
    keep: list[tuple[str, float]]
    history: bool
    updates: list[Update]
    #: Kept only as standing facts offered to a request: shown, not reinforced (profile.py).
    offered: set[str]
    #: Demoted on request (``Hindsight.demote``): ranked below what is still wanted.
    demoted: set[str]
    #: Starting memories from a template (``Memory.starting``): ranked below the user's own, not reinforced.
    starting: set[str]


class RecallPipeline:
    def __init__(
        self,
        *,
        store: RelationalStore,
        vectors: VectorIndex,
        activation: ActivationIndex,
        embedder: Embedder,
        tokens: TokenCounter,
        config: HindsightConfig,
        outbox: OutboxApplier,
        reranker: Reranker | None,
        now: Callable[[], datetime],
        changes: Callable[[], AbstractContextManager[Changes]],
        snapshot_files: SnapshotFiles | None = None,
    ) -> None:
        self.store = store
        self.vectors = vectors
        self.activation = activation
        self.embedder = embedder
        self.tokens = tokens
        self.config = config
        self.outbox = outbox
        self.reranker = reranker
        self.corpora = CorpusCache(store, self._standing_of, files=snapshot_files,
                                   file_min=config.recall.snapshot_file_min_memories)
        #: Token counts are asked for the same memory texts again and again; the tokenizer is not free.
        self.counter = CachedCounter(tokens)
        self._flushing: Future[None] | None = None
        self.recorder = RecallRecorder(changes, config, lambda: to_ts(now()))
        self._background: tuple[np.ndarray, np.ndarray] | None = None
        #: ``floor.cross_lingual_scale`` of the embedder, measured on the background with it.
        self._cross_lingual_scale = 1.0
        #: Memories' cosines to the background (mean, spread), by vector and text: see _snapshot_lookups.
        self._spreads: dict[tuple[bytes, str], Baseline] = {}
        self._clause_vectors: dict[str, tuple[np.ndarray, ...]] = {}
        self._lock = threading.Lock()
        #: The recall log's flushes, off the caller's path. The stages themselves run in the caller's
        #: thread: handing the channels to workers cost more in thread hops than overlapping them won
        #: (docs/benchmark-log.md, "Fixed cost per recall").
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hindsight-recall")
        #: Indexes currently failing for recall: warned once per outage, not once per recall.
        self._outage: set[str] = set()
        self._outage_lock = threading.Lock()
        #: Vector collections recalls scanned around, to load after the recall (with a query vector).
        self._to_load: dict[tuple[str, str], np.ndarray] = {}
        self._loads_lock = threading.Lock()

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self.recorder.flush()
        self.corpora.close()

    # -- helpers ---------------------------------------------------------------------------------
    def background(self) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            if self._background is None:
                english, chinese = split_background()
                background = (self.embedder.embed_documents(english), self.embedder.embed_documents(chinese))
                self._cross_lingual_scale = cross_lingual_scale(*background)
                self._background = background
            return self._background

    def corpus(self, namespace: str, include_cold: bool, as_of: datetime | None = None) -> Corpus:
        vectors_for = VectorsFor(self.outbox.vectors_for, self.embedder.dim)
        if as_of is None:
            return self.corpora.get(namespace, include_cold, vectors_for)
        return self.corpora.as_of(namespace, include_cold, to_ts(as_of), vectors_for, self.embedder.name,
                                  self.embedder.embed_documents)

    def warm_up(self) -> None:
        """Load what the first recall of a process would (``Hindsight.warm_up``): the embedder's model,
        the background vectors, the sentence-kind classifiers, jieba's dictionary and part-of-speech model, the token
        counter, the reranker."""
        query_vector = self.embedder.embed_query("warm up")
        self.background()
        self._requested(query_vector)
        tokenize("预热一下")  # loads jieba's dictionary
        # a Chinese query's entities load jieba's part-of-speech model (1-2 s of its own)
        for text in ("上周王磊说了什么？", "what did Lily say last week?"):
            analyze(text, datetime.now(UTC))
        self.counter.count("warm up")
        rerank(self.reranker, "warm up", [("warm-up", "warm up")], 1)

    def empty(self, query: str, namespace: str, analysis: QueryAnalysis) -> RecallResult:
        return RecallResult(query=query, namespace=namespace, analysis=analysis)

    # -- the pipeline ----------------------------------------------------------------------------
    @property
    def recall_config(self) -> RecallConfig:
        """This call's recall settings: the ones ``run(config=...)`` was given, else the engine's."""
        return _CALL_CONFIG.get() or self.config.recall

    def run(
        self, query: str, namespaces: str | Sequence[str], *, session_id: str | None, k: int, budget_tokens: int,
        layers: tuple[Layer, ...], now: datetime, include_cold: bool, explain: bool = False, track: bool = True,
        root: str | None = None, as_of: datetime | None = None, config: RecallConfig | None = None,
        shared: Sequence[str] = (), shared_layers: tuple[Layer, ...] = (),
    ) -> RecallResult:
        """One recall (:meth:`_run`); ``config`` replaces the engine's recall settings for this call only
        (``hindsight tune`` compares settings on one engine, other calls in flight keep theirs)."""
        token = _CALL_CONFIG.set(config)
        try:
            return self._run(query, namespaces, session_id=session_id, k=k, budget_tokens=budget_tokens,
                             layers=layers, now=now, include_cold=include_cold, explain=explain, track=track,
                             root=root, as_of=as_of, shared=shared, shared_layers=shared_layers)
        finally:
            _CALL_CONFIG.reset(token)

    def _run(
        self, query: str, namespaces: str | Sequence[str], *, session_id: str | None, k: int, budget_tokens: int,
        layers: tuple[Layer, ...], now: datetime, include_cold: bool, explain: bool = False, track: bool = True,
        root: str | None = None, as_of: datetime | None = None, shared: Sequence[str] = (),
        shared_layers: tuple[Layer, ...] = (),
    ) -> RecallResult:
        """``explain`` fills ``result.trace`` (the result is otherwise the same); ``track=False`` logs and
        reinforces nothing, so looking at what recall would do does not change the memory. ``as_of``
        runs on the snapshot of that moment (``CorpusCache.as_of``): the vector and activation channels
        rank its own rows, since the indexes hold today's memories, and nothing is logged or reinforced.

        Several ``namespaces`` (a subtree, ``root`` first) are searched as one ranking: each keeps its
        own snapshot, channels, floor and collapse (its memories' evidence is its own), and the final
        scores share one scale (the best fused score over all of them, not per namespace), so the
        merged hits are packed into one budget by the same rule as one namespace's. The query is
        analysed and embedded once.

        ``shared`` namespaces (granted to the caller's, sharing.py) are searched the same way in
        ``shared_layers`` only; a shared memory on the same thing as a kept memory of the caller's own comes
        after it (``_shared_yields``), and nothing is logged or reinforced in a shared namespace."""
        names = [namespaces] if isinstance(namespaces, str) else list(namespaces)
        root_ns = root if root is not None else names[0]
        lent = [ns for ns in dict.fromkeys(shared) if ns not in names] if shared_layers else []
        layers_of = {**{ns: layers for ns in names}, **{ns: shared_layers for ns in lent}}
        names += lent
        past = as_of is not None
        track = track and not past
        corpora = [(ns, self.corpus(ns, include_cold, as_of)) for ns in names]
        # 1. analyse (entities known anywhere in the subtree)
        known: dict[str, str] = {}
        for _, corpus in corpora:
            for folded, name in corpus.entity_names.items():
                known.setdefault(folded, name)
        analysis = analyze(query, now, known_entities=list(known.values()))
        corpora = [(ns, c) for ns, c in corpora if c.size]
        if not corpora:
            result = self.empty(query, root_ns, analysis)
            if explain:
                result.trace = RecallTrace()
            return result
        degraded: list[str] = []
        readings: list[_QueryReading] = []
        query_vector = self.embedder.embed_query(query)
        if self._small_talk(query, query_vector):
            result = self.empty(query, root_ns, analysis)
            if explain:
                result.trace = RecallTrace(small_talk=True)
            return result
        parts = [
            self._candidates(query, ns, corpus, analysis, query_vector, readings, degraded, session_id=session_id,
                             layers=layers_of[ns], now=now, k=k, past=past, lent=ns in lent)
            for ns, corpus in corpora
        ]
        base = readings[0][0]
        analysis.about_user = readings[0].about_asker
        english, chinese = self.background()
        history = parts[0].history
        trace = self._trace_parts(parts, history) if explain else None
        if not any(p.keep for p in parts):
            result = self.empty(query, root_ns, analysis)
            result.degraded = sorted(set(degraded))
            result.trace = trace
            if track:
                for p in parts:
                    if p.namespace not in lent:
                        self._record(p.namespace, result, session_id, now, p.rankings, [], {}, 1.0)
            return result
        # 5. final score, on one scale over every namespace searched: the best kept candidate's relevance
        # is 1, and none falls below 0 (every kept score may be below the namespace's average, or only one
        # candidate kept, whose fused score is then 0)
        fused = [score for p in parts for _, score in p.keep]
        top = max(fused)
        scale = max(abs(top), top - min(fused), 1e-9)
        scored: list[RecallHit] = []
        considered: list[RecallHit] = []
        relevances: dict[str, float] = {}
        for p in parts:
            own = self._final_scores(p, top, scale, relevances if trace is not None else None)
            considered += own  # the trace shows every kept candidate, collapsed or not
            scored += self._collapse(own, p.corpus, base, english, chinese)
        yielded, above = self._shared_yields(scored, parts, set(lent), english, chinese)
        scored = [h for h in scored if h.memory.id not in yielded]
        for h in scored:
            if h.memory.id in above:  # the grantee's own memory on the same thing comes first, both shown
                h.score = max(h.score, above[h.memory.id] + 1e-6)
        penalised = {mid for p in parts for mid in p.demoted | p.starting}
        scored.sort(key=lambda h: (-h.score, h.memory.id in penalised))
        considered.sort(key=lambda h: (-h.score, h.memory.id in penalised))
        if trace is not None:  # before packing: rendering adds cited sources to a hit's sources
            heads = {h.memory.id for h in scored}
            candidates = {h.memory.id for h in considered}
            trace.folded = {s.id: h.memory.id for h in scored for s in h.sources
                            if s.id in candidates and s.id not in heads}
        # 6. conflicts: superseded memories are out of the indexes; report those whose successor is shown
        # 8. sources, then 9. budget
        injected, idle = pack(scored, k, budget_tokens, self.counter,
                              render=lambda hit: self._render(hit, shared_from=hit.memory.namespace in lent))
        conflicts: list[Conflict] = []
        for p in [] if past else parts:
            mine = [h for h in injected if h.memory.namespace == p.namespace]
            conflicts += self._conflicts(p.namespace, mine, p.replaced, p.fresh, p.corpus.has_superseded, p.updates)
        by_id = {h.memory.id: h.memory for h in injected}
        conflicts += [Conflict(superseded=old, successor=by_id[own]) for old, own in yielded.values() if own in by_id]
        result = RecallResult(query=query, namespace=root_ns, hits=injected, conflicts=conflicts, analysis=analysis,
                              degraded=sorted(set(degraded)))
        result.count_tokens_with(self.counter.count)  # counted when read (RecallResult.tokens)
        if trace is not None:
            shown = {h.memory.id for h in injected}
            trace.final = [
                FinalScore(id=h.memory.id, relevance=relevances[h.memory.id], score=h.score,
                           injected=h.memory.id in shown)
                for h in considered
            ]
            result.trace = trace
        # 10. log and reinforce: one log row per namespace searched, boosts on the shared scale
        if track:
            top = max(max((h.score for h in injected), default=1.0), 0.0) or 1.0
            for p in parts:
                if p.namespace in lent:  # the caller's query and use stay the caller's (sharing.py)
                    continue
                share = result.model_copy(update={"hits": [h for h in injected if h.memory.namespace == p.namespace]})
                self._record(p.namespace, share, session_id, now, p.rankings,
                             [h for h in idle if h.memory.namespace == p.namespace],
                             {h.memory.id: h.score for h in share.hits
                              if h.memory.id not in p.offered and h.memory.id not in p.starting}, top)
        return result

    def _candidates(
        self, query: str, namespace: str, corpus: Corpus, analysis: QueryAnalysis, query_vector: np.ndarray,
        shared: list[_QueryReading], degraded: list[str], *, session_id: str | None,
        layers: tuple[Layer, ...], now: datetime, k: int, past: bool = False, lent: bool = False,
    ) -> _Part:
        """Stages 2–4 and 7 for one namespace: channels, fusion, fresh rows, rerank, relevance floor.
        ``shared`` holds what is read from the query alone (its baselines, the standing-fact kinds it
        requests, whether it asks about the asker), once the first namespace computed it;
        ``past`` (an ``as_of`` recall) ranks the snapshot's own rows instead of today's indexes. A ``lent``
        namespace (shared with the caller's, sharing.py) knows nothing of the asker: it offers no standing
        fact and a question about the asker gets no relief of its floor there."""
        cfg = self.recall_config
        inp = ch.ChannelInput(
            corpus=corpus, analysis=analysis, namespace=namespace, session_id=session_id, layers=layers,
            n=cfg.per_channel, now=now,
        )
        terms = tokenize(query)
        # 2. channels
        keyword_docs, keyword_values = corpus.keyword.sparse(terms)
        rates = {layer: self.config.activation.rate(layer) for layer in Layer}
        heat = ch.activation_from_snapshot(inp, rates) if past else self._activation_channel(inp, rates, degraded)
        # every per-memory number below is computed for candidates only, from their snapshot rows
        similarity = ch.Similarity(corpus.vectors, query_vector)
        vector = self._vector_channel(inp, query_vector, similarity, degraded, past)
        english, chinese = self.background()
        if not shared:
            first = LanguageBaselines(query_vector, english, chinese)
            shared.append(_QueryReading(first, self._requested(query_vector), *self._about_asker(query_vector)))
        base, requested, about_asker, asker_offered = shared[0]
        if lent:
            requested, about_asker, asker_offered = set(), False, False
        rankings: dict[str, ch.Ranked] = {
            "vector": vector,
            "keyword": ch.keyword_channel(inp, keyword_docs, keyword_values),
            "temporal": ch.temporal_channel(inp, similarity),
            "entity": ch.entity_channel(inp, similarity),
            "profile": self._offers(inp, similarity, requested, asker_offered),
            "activation": heat,
        }
        # 3. fuse, with conversational context
        weights = cfg.channel_weights
        pool = candidate_pool(rankings, corpus)
        if cfg.fusion == "rrf":
            fused = rrf(rankings, weights, cfg.rrf_k)
            spread = dict(fused)
            for share, across in ((cfg.context_weight, True), (cfg.context_same_speaker_weight, False)):
                if share > 0:  # each pair lends by its own share (fusion.context_share), added up
                    neighbours = {
                        corpus.memories.id_at(i): [corpus.memories.id_at(j) for j in corpus.neighbours[i]
                                                   if _crosses(corpus, i, j) == across]
                        for i in (corpus.position[mid] for mid in fused)
                    }
                    for mid, value in spread_to_neighbours(fused, neighbours, share).items():
                        spread[mid] = spread.get(mid, 0.0) + value - fused.get(mid, 0.0)
            placed = [corpus.position[mid] for mid in spread]
            scores = list(spread.values())
        else:
            membership = {name: [corpus.position[mid] for mid, _ in ranked] for name, ranked in rankings.items()}
            rows = with_neighbours(pool, corpus.previous, corpus.following)
            assert corpus.moments is not None
            scored = {
                "vector": Scored(similarity(rows), corpus.moments.spread(query_vector)),
                "keyword": Scored(_sparse_at(keyword_docs, keyword_values, rows),
                                  Spread.of_sparse(keyword_values, corpus.size)),
            }
            combined = zsum(scored, membership, weights, rows, context=cfg.context_weight,
                            previous=corpus.previous, following=corpus.following, reply=corpus.reply,
                            same_speaker=cfg.context_same_speaker_weight)
            placed = pool
            scores = combined[np.searchsorted(rows, np.asarray(pool, dtype=np.int64))].tolist()
        # the best fused, ties in pool order (a stable sort's); a content-free turn ("thanks!", "好的") is
        # never a candidate, however close its neighbours are
        small_talk = sentence_kinds.for_embedder(self.embedder).content_free_max_terms
        wanted = max(cfg.per_channel, k * 2)
        ordered: list[tuple[str, float]] = []
        for j in np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable").tolist():
            if len(ordered) >= wanted:
                break
            if not _content_free(corpus, placed[j], small_talk):
                ordered.append((corpus.memories.id_at(placed[j]), scores[j]))
        # an offered standing fact is a candidate by its kind, not by its fused rank: in a long history of
        # other talk (200 turns of homework questions) the cut above would drop "I'm pescatarian" unseen
        if rankings["profile"]:
            listed = {mid for mid, _ in ordered}
            score_at = dict(zip(placed, scores, strict=True))
            ordered += [(mid, score_at[i]) for mid, _ in rankings["profile"]
                        if mid not in listed and (i := corpus.position.get(mid)) is not None and i in score_at]
        # the candidates' rows: the snapshot's, current as of this recall's change-log seek, with the
        # activation that reinforcement moved since (a memory deleted since the seek is dropped)
        held, just_read = corpus.memories.many_read([corpus.position[mid] for mid, _ in ordered])
        if past:  # the memories as they stood, all current then
            fresh = {m.id: m for m in held}
            replaced: dict[str, str] = {}
        else:  # a row read from the store by this recall holds its current activation already
            current = self.store.activations_in(namespace, (m.id for m in held if m.id not in just_read))
            current.update((mid, (m.activation.log_base, m.activation.ref_time, m.access_count))
                           for mid, m in just_read.items())
            fresh = _with_activation(held, current)
            ordered, replaced = self._live(ordered, fresh, namespace)
        # 4. rerank
        texts = [(mid, fresh[mid].content) for mid, _ in ordered]
        reranked = rerank(self.reranker, query, texts, cfg.rerank_top_n)
        # 7. floor: evidence measured on the query itself, before weights and activation
        weights_by_term = {t: corpus.keyword.smooth_idf(t) for t in set(terms)}
        offers = {mid for mid, _ in rankings["profile"]}  # the standing facts offered to a request
        window = analysis.time_window
        evidence: dict[str, Evidence] = {}
        positions = [i for i in (corpus.position.get(mid) for mid, _ in ordered) if i is not None]
        # a bare answer means what it answers ("Hill" to "maiden name?"): it is measured with that turn too
        role_of = self._roles(corpus, fresh)
        answers = set(np.asarray(positions)[sentence_kinds.for_embedder(self.embedder).answer(
            corpus.vectors[positions]) > 0.0].tolist()) if positions else set()
        # the turns before the bare answers, read in one call: ``role_of`` and the question test below read them
        corpus.memories.many([b for b in (int(corpus.previous[i]) for i in answers) if b >= 0])
        asked = {i: a for i in positions if (a := corpus.prompting_turn(i, answers.__contains__, role_of)) is not None}
        # to a question: the agent's "Law firms can be brutal." after a statement comments on it, and reads as
        # short as an answer (the turns asked are read once, and again below from what this read)
        asked = {i: a for (i, a), turn in zip(asked.items(), corpus.memories.many(list(asked.values())), strict=True)
                 if is_question(turn.content)}
        measured = list(dict.fromkeys([*(mid for mid, _ in ordered),
                                       *(corpus.memories.id_at(a) for a in asked.values())]))
        two_sided = self._two_sided_z(query, query_vector, base, measured, fresh, corpus)
        for mid, _ in ordered:
            i = corpus.position.get(mid)
            memory = fresh[mid]
            z = two_sided[mid]
            if i is None:  # the successor of a superseded candidate, outside this snapshot
                cover, standing = 0.0, False
            else:
                cover = keyword_coverage(weights_by_term, corpus.keyword.terms[i])
                standing = mid in offers and bool(requested)  # a question's offer is a fallback (below)
                if i in asked:
                    z = max(z, two_sided[corpus.memories.id_at(asked[i])])
                    cover = max(cover, keyword_coverage(weights_by_term, corpus.keyword.terms[asked[i]]))
            in_window = window is not None and window.start <= memory.occurred_at < window.end
            evidence[mid] = Evidence(z=z, coverage=cover, in_window=in_window, standing=standing,
                                     rerank=reranked.get(mid) if reranked else None)
        # a question about the asker ("What's my trade?") points at their memory as a history cue does:
        # its answer can be nowhere else, though e5 puts "trade" far from "I'm a plumber"
        history = bool(analysis.history_cues or window) or about_asker
        kept = apply_floor(evidence, cfg, history=history, size=corpus.size)
        if analysis.last_conversation and window is None and all(is_question(fresh[mid].content) for mid in kept):
            # "What did we conclude last time?" names no content to match: its answer is the last
            # conversation itself, its time window, as "last week" names a week; what clears the floor
            # may be a question the person asked in it ("Lease or buy the EV6?"), which concluded nothing.
            # Before the offer below: "What did we talk about last time?" reads as a question about the
            # asker, and its offer (the closest standing fact, "I drive a 2015 Honda Civic" from three
            # conversations back) took the place of the last conversation
            last = self._last_session(ordered, fresh, session_id)
            evidence.update({mid: replace(evidence[mid], in_window=True) for mid in last})
            kept = apply_floor(evidence, cfg, history=history, size=corpus.size)
        if not requested and offers and all(is_question(fresh[mid].content) for mid in kept):
            # a question about the asker that nothing answers on its evidence gets its offer (_offers): what
            # cleared the floor, if anything, are questions the person asked ("What's the past tense of
            # spin?" for "What's my job?"), which state nothing about them, so they give the offer their
            # place; one that something answers does not: the closest standing fact may be the old value
            # ("I work as a nurse") beside the answer ("I got a new job as a teacher")
            evidence.update({mid: replace(evidence[mid], standing=True) for mid in offers if mid in evidence})
            kept = {mid for mid in apply_floor(evidence, cfg, history=history, size=corpus.size)
                    if not is_question(fresh[mid].content)}
        keep_bar = floor_bars(cfg, history=history, size=corpus.size)[1]
        offered = {mid for mid in kept if evidence[mid].standing and not clears(evidence[mid], cfg, keep_bar)}
        # 6a. recall-time updates (supersede.py): an older value hands its place to the newer one
        found = self._updates(query, ordered, kept, fresh, corpus, english, chinese, role_of)
        updates = [u for u in found if holds_for(u, lambda mid: self._closest_clause(query_vector, fresh[mid].content))]
        ordered, kept = hand_over(ordered, kept, updates)
        ordered, kept = hand_over(ordered, kept, [u for u in found if u not in updates], beside=True)
        # 6b. a starting memory gives its place to the user's own word on the same attribute (starting.py)
        yields = self._starting_yields(ordered, kept, fresh, corpus, english, chinese)
        ordered, kept = hand_over(ordered, kept, yields)
        updates = [*updates, *yields]
        # 6c. the agent's echo of a statement brings the statement in: the person's words are shown
        ordered, kept = self._echoed(ordered, kept, fresh, corpus, english, chinese, role_of,
                                     hidden={u.older for u in updates})
        return _Part(
            namespace=namespace, corpus=corpus, rankings=rankings, weights=weights, ordered=ordered,
            replaced=replaced, fresh=fresh, reranked=reranked, evidence=evidence, kept=kept,
            keep=[(mid, score) for mid, score in ordered if mid in kept], history=history,
            updates=updates, offered=offered,
            # a demotion is today's state, like cold: not versioned, so a point-in-time recall ignores it
            demoted=set() if past else demotions.demoted_among(self.store, kept),
            starting={mid for mid in kept if fresh[mid].starting},
        )

    @staticmethod
    def _last_session(ordered: Sequence[tuple[str, float]], fresh: Mapping[str, Memory],
                      session_id: str | None) -> list[str]:
        """The candidates said in the latest session before the current one (``session_id``): episodes
        only, a distilled fact being no one's turn."""
        turns = [fresh[mid] for mid, _ in ordered
                 if fresh[mid].layer == Layer.EPISODIC and fresh[mid].session_id not in (None, session_id)]
        if not turns:
            return []
        latest = max(turns, key=lambda m: m.occurred_at).session_id
        return [m.id for m in turns if m.session_id == latest]

    def _final_scores(
        self, p: _Part, top: float, scale: float, relevances: dict[str, float] | None
    ) -> list[RecallHit]:
        """Stage 5 for one namespace's kept candidates, on the scale of every namespace searched (``top``,
        the best fused score, and ``scale``): the final score is the relevance (1 less how far the fused
        score is from the best, in ``scale``, or the reranker's), less the penalties of a demoted or a
        starting memory, which rank after a memory of the same score that has none. A memory's strength
        and use enter through the activation channel's vote in the fusion; a second, additive term for
        them here cost LoCoMo dev recall@10 0.011 and changed nothing on the behaviour set or LongMemEval
        (docs/benchmark-log.md)."""
        cfg = self.recall_config
        reranked = p.reranked
        # each candidate's rank and score in every channel, looked up instead of searched per candidate
        placed: dict[str, dict[str, tuple[int, float]]] = {}
        for name, ranked in p.rankings.items():
            places = placed[name] = {}
            for rank, (other, s) in enumerate(ranked, start=1):
                places.setdefault(other, (rank, s))
        scored: list[RecallHit] = []
        for mid, score in p.keep:
            memory = p.fresh[mid]
            # a kept candidate the query's evidence puts under the namespace's average still ranks by that
            # evidence, not by recency alone
            relevance = reranked[mid] if reranked and mid in reranked else 1.0 + (score - top) / scale
            if reranked and mid not in reranked:
                relevance *= min(reranked.values(), default=1.0)
            if relevances is not None:
                relevances[mid] = relevance
            total = relevance
            if mid in p.demoted:
                total -= cfg.demoted_penalty
            if mid in p.starting:
                total -= cfg.starting_penalty
            per_channel = {name: placed[name][mid][1] for name in CHANNELS if mid in placed.get(name, {})}
            scored.append(
                RecallHit(
                    memory=memory, score=total, channels=per_channel,
                    reason=self._reason(placed, mid, p.evidence[mid], p.replaced.get(mid)),
                )
            )
        penalised = p.demoted | p.starting
        scored.sort(key=lambda h: (-h.score, h.memory.id in penalised))
        return scored

    def _trace_parts(self, parts: Sequence[_Part], history: bool) -> RecallTrace:
        """The trace of one namespace, or of several merged (channels and fusion interleaved by score,
        the floor's bars those of the whole subtree's size)."""
        if len(parts) == 1:
            p = parts[0]
            return self._trace(p.corpus.size, p.rankings, p.weights, p.ordered, p.replaced, p.reranked, p.evidence,
                               p.kept, history, {u.older: u.newer for u in p.updates})
        rankings: dict[str, ch.Ranked] = {}
        for p in parts:
            for name, ranked in p.rankings.items():
                rankings[name] = [*rankings.get(name, []), *ranked]
        rankings = {name: sorted(r, key=lambda kv: -kv[1]) for name, r in rankings.items()}
        ordered = sorted((c for p in parts for c in p.ordered), key=lambda kv: -kv[1])
        replaced = {a: b for p in parts for a, b in p.replaced.items()}
        reranked = {a: b for p in parts for a, b in (p.reranked or {}).items()}
        evidence = {a: b for p in parts for a, b in p.evidence.items()}
        kept = {mid for p in parts for mid in p.kept}
        size = sum(p.corpus.size for p in parts)
        updated = {u.older: u.newer for p in parts for u in p.updates}
        return self._trace(size, rankings, parts[0].weights, ordered, replaced, reranked or None, evidence, kept,
                           history, updated)

    def _trace(
        self, size: int, rankings: dict[str, ch.Ranked], weights: dict[str, float], ordered: list[tuple[str, float]],
        replaced: dict[str, str], reranked: dict[str, float] | None, evidence: dict[str, Evidence], kept: set[str],
        history: bool, updated: dict[str, str] | None = None,
    ) -> RecallTrace:
        """The stages' view of one recall, for ``explain=True`` (built from what ``run`` computed anyway)."""
        cfg = self.recall_config
        anchor, keep = floor_bars(cfg, history=history, size=size)
        w = cfg.floor_coverage_weight

        def ranked(items: Sequence[tuple[str, float]]) -> list[TraceCandidate]:
            return [TraceCandidate(id=mid, rank=r, score=float(s)) for r, (mid, s) in enumerate(items, start=1)]

        return RecallTrace(
            corpus_size=size,
            channels={name: ranked(items) for name, items in rankings.items()},
            weights=dict(weights),
            fusion=cfg.fusion,
            fused=ranked(ordered),
            replaced=dict(replaced),
            updated=dict(updated or {}),
            reranked=dict(reranked or {}),
            anchor_bar=anchor,
            keep_bar=keep,
            anchored=is_anchored(evidence, cfg, anchor),
            floor=[
                FloorDecision(id=mid, z=e.z, coverage=e.coverage, strength=e.strength(w), in_window=e.in_window,
                              standing=e.standing, rerank=e.rerank, kept=mid in kept)
                for mid, e in ((mid, evidence[mid]) for mid, _ in ordered)
            ],
        )

    # -- degraded channels -----------------------------------------------------------------------
    def _activation_channel(self, inp: ch.ChannelInput, rates: dict[Layer, float], degraded: list[str]) -> ch.Ranked:
        try:
            ranked = ch.activation_channel(inp, self.activation, rates)
        except Exception as exc:
            if not unreachable(exc):
                raise
            # the index is derived: the relational store knows every activation
            self._failed(ACTIVATION, exc, degraded)
            return ch.activation_from_store(inp, self.store, rates)
        self._answered(ACTIVATION)
        return ranked

    def _scans_vectors(self, inp: ch.ChannelInput, query_vector: np.ndarray, past: bool) -> bool:
        """Whether the vector channel scans the snapshot's vectors rather than querying the index: for a
        point-in-time recall (the index holds today's memories), for a namespace small enough that one
        matrix-vector product costs less than an index query (docs/benchmark-log.md, "Exact scan or
        index"), and while the namespace's collections are not loaded in this process (the first query
        would wait seconds for the index to load; it loads in the background after this recall, see
        :meth:`load_indexes`). With :meth:`_scanned_layers`, the one place that choice is made."""
        limit = self.recall_config.exact_vector_max_memories
        if past or 0 < inp.corpus.size <= limit:
            return True
        index = self.vectors
        if not self.recall_config.scan_until_index_loaded or not isinstance(index, LoadsInBackground):
            return False
        unloaded = [layer.value for layer in inp.layers
                    if layer in inp.corpus.layers and not index.loaded(inp.namespace, layer.value)]
        if not unloaded:
            return False
        with self._loads_lock:
            for layer in unloaded:
                self._to_load.setdefault((inp.namespace, layer), query_vector)
        return True

    def _scanned_layers(self, inp: ch.ChannelInput) -> dict[Layer, np.ndarray]:
        """The layers the vector channel scans in the snapshot (their rows' positions) while it queries
        the index for the others: those whose few entries the index keeps in a collection shared with
        other namespaces (``SharesCollections``: Chroma's namespace filter there cost 35-50 ms a query
        with 100k memories stored, where a scan of under a thousand rows costs microseconds), as long as
        they are few enough for a scan (``exact_vector_max_memories``; 0 reads the index always)."""
        index, limit = self.vectors, self.recall_config.exact_vector_max_memories
        if not isinstance(index, SharesCollections) or not limit:
            return {}
        scanned = {}
        for layer in inp.layers:
            if layer in inp.corpus.layers and index.shared(inp.namespace, layer.value):
                rows = inp.corpus.rows_of(layer)
                if rows.size <= limit:
                    scanned[layer] = rows
        return scanned

    def load_indexes(self) -> None:
        """Load, in the background, the vector collections recalls scanned around (called after a
        recall, so loading does not compete with it)."""
        with self._loads_lock:
            wanted, self._to_load = self._to_load, {}
        if wanted and isinstance(self.vectors, LoadsInBackground):
            for (namespace, layer), vector in wanted.items():
                self.vectors.load(namespace, [layer], vector)

    def _vector_channel(
        self, inp: ch.ChannelInput, query_vector: np.ndarray, similarity: ch.Similarity, degraded: list[str],
        past: bool,
    ) -> ch.Ranked:
        if self._scans_vectors(inp, query_vector, past):
            return ch.vector_from_snapshot(inp, similarity)
        try:
            ranked = ch.vector_channel(inp, self.vectors, query_vector, similarity, self._scanned_layers(inp))
        except Exception as exc:
            if not unreachable(exc):
                raise
            # the snapshot holds every vector the index holds
            self._failed(VECTOR, exc, degraded)
            return ch.vector_from_snapshot(inp, similarity)
        self._answered(VECTOR)
        return ranked

    def _failed(self, index: str, exc: Exception, degraded: list[str]) -> None:
        degraded.append(index)
        with self._outage_lock:
            first = index not in self._outage
            self._outage.add(index)
        if first:
            log.warning("%s index unavailable; recall continues degraded from the relational store: %s: %s",
                        index, type(exc).__name__, exc)

    def _answered(self, index: str) -> None:
        with self._outage_lock:
            if index not in self._outage:
                return
            self._outage.discard(index)
        log.warning("%s index answers again; recall is no longer degraded", index)
        if self.outbox.on_recovered is not None:  # it may have come back empty
            self.outbox.on_recovered(index)

    # -- stage helpers ---------------------------------------------------------------------------
    def _collapse(
        self, scored: list[RecallHit], corpus: Corpus, base: LanguageBaselines, english: np.ndarray,
        chinese: np.ndarray,
    ) -> list[RecallHit]:
        """One hit per fact (collapse.py), measured on the snapshot's vectors and keyword terms."""
        cfg = self.recall_config

        vector, terms, spread = _snapshot_lookups(corpus, english, chinese, self._spreads)

        def adjacent(ids: Sequence[str]) -> np.ndarray:
            at = np.asarray([corpus.position.get(mid, -1) for mid in ids], dtype=np.int64)
            inside = at >= 0
            # -1 (no neighbour) never equals a position; -2 marks a memory outside the snapshot
            before = np.where(inside, corpus.previous[np.maximum(at, 0)], -2)
            after = np.where(inside, corpus.following[np.maximum(at, 0)], -2)
            return ((before[:, None] == at[None, :]) | (after[:, None] == at[None, :])) & inside[None, :]

        same = Sameness(duplicate_z=cfg.collapse_duplicate_z)
        return collapse(scored, vector=vector, spread=spread, terms=terms, idf=corpus.keyword.smooth_idf,
                        adjacent=adjacent, same=same)

    def _updates(
        self, query: str, ordered: Sequence[tuple[str, float]], kept: set[str], fresh: dict[str, Memory],
        corpus: Corpus, english: np.ndarray, chinese: np.ndarray, role_of: Callable[[int], str | None],
    ) -> list[Update]:
        """Kept candidates (and the agent's echoes of them) that a newer candidate updates (supersede.py);
        only for a query about the present (a question about the past asks for the old value).
        ``role_of`` reads a snapshot position's speaker.

        The pair must be each other's closest among the speaker's memories, so by chance alone it reaches
        the best of the namespace's n memories: its z (mean of both directions) must reach that,
        ``chance_best(n)``, as every kept candidate must reach it against the query. This was the fitted
        ``supersede_z`` (2.7), which is chance's best near n = 200: a namespace of a dozen memories asked
        a pair for 2.7 where its own chance reaches 1.7 ("我住在长沙岳麓区，离橘子洲不远。" and "我上个月搬到
        合肥了" stood between the two, and the weekend outing near home was offered 长沙). The change
        classifier, one speaker and a later conversation guard the pair as before."""
        cfg = self.recall_config
        if not cfg.supersede or len(kept) == 0 or not about_the_present(query):
            return []
        bar = chance_best(corpus.size)

        vector, terms, spread = _snapshot_lookups(corpus, english, chinese, self._spreads)

        def pair_z(u: np.ndarray, v: np.ndarray, text: str) -> float:
            """How far the cosine of two memories stands above u's cosines to unrelated sentences in the
            language of ``text``, v's: cosines across languages run lower, as the floor knows
            (``LanguageBaselines``)."""
            return float(spread(u, text).z(float(u @ v)))

        nearest_of: dict[tuple[str, bool], str | None] = {}

        def asks(j: int) -> bool:
            """Whether a turn is a question (its row as ``role_of`` reads it): a question states no value,
            so it is never the value an update replaces or the one that replaces it (supersede.py)."""
            return is_question(self._row_at(corpus, fresh, j).content)

        def nearest(mid: str, later: bool) -> str | None:
            """The closest memory on one side in time, among what the same speaker said in other
            conversations: only those can be an update (supersede.is_update); the agent's reply ("October
            20, understood.") is not a rival of the user's statement it answers. Turns only: a semantic
            memory is superseded by consolidation, or written by the caller as it stands, and two facts
            written without a session into a new namespace ("Refunds are accepted within 30 days",
            "Orders over 50 euros ship for free") stood above the chance of two memories (0.5), so the
            newer one hid the older from the question it answered. Not a question (``asks``): people ask
            about a value before it is theirs ("What does a UX designer actually do all day?" before "I'm a
            UX designer at a startup now"), and the question stood between the two values as the closest
            turn of one of them, so the old job was shown beside the new one."""
            if (mid, later) not in nearest_of:
                i = corpus.position.get(mid)
                found = None
                if i is not None and corpus.memories.layer_at(i) == Layer.EPISODIC:
                    sims = corpus.vectors @ corpus.vectors[i]
                    side = corpus.occurred > corpus.occurred[i] if later else corpus.occurred < corpus.occurred[i]
                    sims = np.where(side & (sims < 0.9999), sims, -2.0)  # exact repeats are not another value
                    session, speaker = corpus.memories.session_at(i), role_of(i)
                    while (j := int(np.argmax(sims))) >= 0 and sims[j] > -2.0:  # a pass per turn passed over
                        if (corpus.memories.layer_at(j) == Layer.EPISODIC
                                and (session is None or corpus.memories.session_at(j) != session)
                                and role_of(j) == speaker and not asks(j)):
                            found = corpus.memories.id_at(j)
                            break
                        sims[j] = -2.0
                nearest_of[(mid, later)] = found
            return nearest_of[(mid, later)]

        def echoes(mid: str) -> list[str]:
            """The next turn when the agent said it about the same attribute after a person (the agent
            repeating a value back): it goes where the statement goes. Only the agent's turn repeats: a
            person's turn after the agent's is what they said next ("家用为主，偶尔跑长途。" after
            "好的，十五万以内。"), and it went with the agent's turn when that one was updated."""
            i = corpus.position.get(mid)
            if (i is None or (j := int(corpus.following[i])) < 0 or not corpus.reply[j]
                    or is_agent(role_of(i)) or not is_agent(role_of(j))):
                return []
            u, v = corpus.vectors[i], corpus.vectors[j]
            echo = corpus.memories.id_at(j)
            said = fresh[mid] if mid in fresh else corpus.memories.many([i])[0]
            repeated = fresh[echo] if echo in fresh else corpus.memories.many([j])[0]
            z = (pair_z(u, v, repeated.content) + pair_z(v, u, said.content)) / 2
            return [echo] if z >= bar else []

        kinds = sentence_kinds.for_embedder(self.embedder)

        def states_a_change(v: np.ndarray) -> bool:
            return bool(kinds.change(v[None, :])[0] > 0.0)

        def clause_vectors(mid: str) -> tuple[np.ndarray, ...]:
            return self._clauses_of(fresh[mid].content)

        def changed_clause(mid: str, newer: str) -> int | None:
            """The clause of a memory that ``newer`` updates, when the memory also states something else:
            a clause that is not small talk ("Hi, I live in Lisbon." states one thing, as consolidation
            asks of an episode it retires) and not about the same attribute as ``newer`` by the bar an
            update's pair must clear ("想买辆车" stands at 2.9 with "预算加到十八万", "I have a beagle called
            Max" at 0.8 with "I'm a software tester now"). ``None`` for a memory that states one thing, and
            for the agent's turn: what it adds to a value it repeats ("Let's plan backwards from there") is
            no fact of the person's, as the agent's turns never originate a memory (integrate.py)."""
            if is_agent(fresh[mid].role):
                return None
            parts, vn = clause_vectors(mid), vector(newer)
            if len(parts) <= 1 or vn is None:
                return None
            said, later = fresh[mid].content, fresh[newer].content
            z = np.array([(pair_z(p, vn, later) + pair_z(vn, p, said)) / 2 for p in parts])
            changed = int(np.argmax(z))
            other = (kinds.content_free(np.stack(parts)) <= 0.0) & (z < bar)
            other[changed] = False
            return changed if other.any() else None

        return find_updates(ordered, kept, fresh, vector=vector, pair_z=pair_z, terms=terms,
                            idf=corpus.keyword.smooth_idf, bar=bar,
                            nearest=nearest, changes=states_a_change if cfg.supersede_needs_change else None,
                            echoes=echoes, clause_vectors=clause_vectors, changed_clause=changed_clause)

    def _clauses_of(self, text: str) -> tuple[np.ndarray, ...]:
        """The vectors of a memory's clauses (none for one clause), embedded once and kept across recalls
        as the background spreads are: asked only of two memories that are each other's closest
        (supersede.py)."""
        if text not in self._clause_vectors:
            if len(self._clause_vectors) >= SPREADS_KEPT:
                self._clause_vectors.clear()
            parts = clauses(text)
            self._clause_vectors[text] = tuple(self.embedder.embed_documents(parts)) if len(parts) > 1 else ()
        return self._clause_vectors[text]

    def _closest_clause(self, query_vector: np.ndarray, text: str) -> int:
        """The index of the clause of ``text`` closest to the query."""
        parts = self._clauses_of(text)
        return int(np.argmax(np.stack(parts) @ query_vector)) if parts else 0

    def _echoed(
        self, ordered: Sequence[tuple[str, float]], kept: set[str], fresh: dict[str, Memory], corpus: Corpus,
        english: np.ndarray, chinese: np.ndarray, role_of: Callable[[int], str | None], hidden: set[str],
    ) -> tuple[list[tuple[str, float]], set[str]]:
        """Kept, with the statement each kept echo repeats ("八千块，够玩得挺好。" after "这回去厦门，总共准备了
        八千块。"), at the echo's place when that is higher. The agent's restatement can stand closer to a
        question than the person's own words ("这次出去玩能花多少？": z 2.8 against 0.4), and shown alone it
        puts the agent's paraphrase where the person's statement belongs; with both kept, collapse folds
        the echo into the statement (collapse.py). An echo is as collapse tells one: the agent's reply to
        the turn before it, by a person, whose cosine stands ``collapse_duplicate_z`` above the background
        from both sides and that brings no figure of its own (``collapse.brings_no_figure``); a question is
        not a statement, and the reply to it is its answer. Only a statement among the candidates is
        brought in, and not one a recall-time update ``hidden``."""
        bar = self.recall_config.collapse_duplicate_z
        if bar is None:
            return list(ordered), kept
        _, _, spread = _snapshot_lookups(corpus, english, chinese, self._spreads)
        scores = dict(ordered)
        brought: set[str] = set()
        for mid in [m for m, _ in ordered if m in kept and is_agent(fresh[m].role)]:
            j = corpus.position.get(mid)
            if j is None or not corpus.reply[j] or (i := int(corpus.previous[j])) < 0:
                continue
            said = corpus.memories.id_at(i)
            if (said in kept or said in hidden or said not in fresh or is_agent(role_of(i))
                    or is_question(fresh[said].content)):
                continue  # the agent's reply to a question answers it: it repeats nothing
            u, v = corpus.vectors[i], corpus.vectors[j]
            z = min(float(spread(u, fresh[said].content).z(float(u @ v))),
                    float(spread(v, fresh[mid].content).z(float(v @ u))))
            if z >= bar and brings_no_figure(corpus.keyword.terms[j], corpus.keyword.terms[i]):
                scores[said] = max(scores.get(said, scores[mid]), scores[mid])
                brought.add(said)
        if not brought:
            return list(ordered), kept
        return sorted(scores.items(), key=lambda kv: -kv[1]), kept | brought

    def _starting_yields(
        self, ordered: Sequence[tuple[str, float]], kept: set[str], fresh: dict[str, Memory], corpus: Corpus,
        english: np.ndarray, chinese: np.ndarray,
    ) -> list[Update]:
        """Kept starting memories that a turn of the user's own among the candidates (not the agent's
        turn, not a distilled fact) speaks to: the same attribute, by the background z of the pair (mean
        of both directions, ``floor.anchor_threshold`` over the starting candidates), whatever its time,
        session or wording. A template's default never stands next to what the user said about the same
        thing, nor above it. A distilled
        fact shares a template item's framing ("The user is a backend engineer" against "The user is a
        beginner."), which alone put such pairs above the bar; the turns it came from are what the user
        said, as consolidation measures them (lifecycle/integrate.py)."""
        starting = [fresh[mid] for mid, _ in ordered if mid in fresh and fresh[mid].starting]
        if not self.recall_config.supersede or not any(m.id in kept for m in starting):
            return []
        bar = anchor_threshold(self.recall_config, len(starting))
        # a question says nothing of what holds for the user (profile.is_question)
        own = [fresh[mid] for mid, _ in ordered if mid in fresh and fresh[mid].layer == Layer.EPISODIC
               and not fresh[mid].starting and not is_agent(fresh[mid].role) and not is_question(fresh[mid].content)]
        vector, _, spread = _snapshot_lookups(corpus, english, chinese, self._spreads)
        pairs = _each_others_closest(starting, own, lambda m: vector(m.id), spread, bar)
        return [Update(older=sid, newer=oid) for sid, oid in pairs.items() if sid in kept]

    def _shared_yields(
        self, scored: Sequence[RecallHit], parts: Sequence[_Part], lent: set[str], english: np.ndarray,
        chinese: np.ndarray,
    ) -> tuple[dict[str, tuple[Memory, str]], dict[str, float]]:
        """The shared hits the caller's own memories speak to: a shared hit and a kept memory of the
        caller's own (what the person said or what was distilled from it, not the agent's turn, not a
        question) that are each other's closest, at the background z of the pair (mean of both
        directions) of at least ``floor.anchor_threshold`` over the shared hits, as a starting memory
        yields to the user's word.

        Returns ``({shared id: (that memory, the own memory's id)}, {own id: the shared one's score})``:
        when the own memory states a change (``SentenceKinds.change``, as a recall-time update must: "Our
        standup moved to 10:30"), the shared one is hidden and reported as a conflict; otherwise the own
        one is lifted to just above it and both are shown. Two memories on one topic are not one fact:
        hiding the shared one, or ranking it after the own one, whenever they were each other's closest
        made LoCoMo's shared facts ("Nate is currently playing this awesome fantasy RPG") give way to a
        turn of the second agent's on the same topic ("it's a team shooter game") that ranked below k
        (benchmarks/sharing.py, docs/benchmark-log.md)."""
        theirs = [h.memory for h in scored if h.memory.namespace in lent]
        own = [h.memory for h in scored if h.memory.namespace not in lent and not h.memory.starting
               and not is_agent(h.memory.role) and not is_question(h.memory.content)]
        if not self.recall_config.supersede or not theirs or not own:
            return {}, {}
        bar = anchor_threshold(self.recall_config, len(theirs))
        lookups = {p.namespace: _snapshot_lookups(p.corpus, english, chinese, self._spreads) for p in parts}

        def vector(m: Memory) -> np.ndarray | None:
            return lookups[m.namespace][0](m.id)

        # the background spread depends on the vector and its text alone: any namespace's lookup serves
        pairs = _each_others_closest(theirs, own, vector, lookups[own[0].namespace][2], bar)
        if not pairs:
            return {}, {}
        speaking = [o for o in own if o.id in set(pairs.values())]
        kinds = sentence_kinds.for_embedder(self.embedder)
        states = kinds.change(np.stack([vector(o) for o in speaking]))  # type: ignore[misc]
        changes = {o.id: bool(c > 0.0) for o, c in zip(speaking, states, strict=True)}
        shared = {m.id: m for m in theirs}
        score = {h.memory.id: h.score for h in scored}
        yielded = {sid: (shared[sid], oid) for sid, oid in pairs.items() if changes[oid]}
        above: dict[str, float] = {}
        for sid, oid in pairs.items():
            if not changes[oid]:
                above[oid] = max(above.get(oid, score[sid]), score[sid])
        return yielded, above

    @staticmethod
    def _roles(corpus: Corpus, fresh: dict[str, Memory]) -> Callable[[int], str | None]:
        """A position's role: the candidates' from their fresh rows, any other row's from the snapshot's
        rows (a loaded snapshot reads a row once, on demand, and keeps it: a role never changes; a row
        erased since the snapshot has none)."""

        def role_of(i: int) -> str | None:
            return RecallPipeline._row_at(corpus, fresh, i).role

        return role_of

    @staticmethod
    def _row_at(corpus: Corpus, fresh: dict[str, Memory], i: int) -> Memory:
        """A snapshot position's row: the candidate's fresh one, else the snapshot's (read once, kept)."""
        row = fresh.get(corpus.memories.id_at(i))
        return row if row is not None else corpus.memories[i]

    def _two_sided_z(
        self, query: str, query_vector: np.ndarray, base: LanguageBaselines, ids: Sequence[str],
        fresh: dict[str, Memory], corpus: Corpus,
    ) -> dict[str, float]:
        """Each candidate's floor z: the mean of the query-side z (its cosine against the query's cosines
        to the background, to its questions for a memory that asks) and the memory-side z (against the
        memory's own cosines to it, floor.py); the query side alone for a memory in the other language,
        less ``floor_cross_lingual_offset``. For a Chinese query that side is scaled up
        (``floor.cross_lingual_scale``, measured on the background with this embedder), and it scales up a
        short English turn's closeness to any Chinese query with it ("May 14, got it." stood at 2.9 from
        "长城有多长？"): such a pair must also stand out from the memory's own cosines to the Chinese
        background, the memory side across the pair's two languages (the background is the same sentences
        in both)."""
        cfg = self.recall_config
        english, chinese = self.background()
        inside = [mid for mid in ids if mid in corpus.position]
        outside = [mid for mid in ids if mid not in corpus.position]  # successors of superseded candidates
        rows = [corpus.position[mid] for mid in inside]
        vectors = corpus.vectors[rows]
        cjk = corpus.cjk_mask[rows]
        if outside:
            found = self.outbox.vectors_for([fresh[mid] for mid in outside])
            extra = np.stack([np.asarray(found[mid], dtype=np.float32) for mid in outside])
            vectors = np.vstack([vectors, extra]) if rows else extra
            cjk = np.concatenate([cjk, np.asarray([is_cjk(fresh[mid].content) for mid in outside], dtype=bool)])
        sims = vectors @ query_vector
        missing = [mid for mid in inside if mid not in fresh]  # a short reply's prompting turn
        text = {**{m.id: m.content for m in corpus.memories.many([corpus.position[mid] for mid in missing])},
                **{mid: fresh[mid].content for mid in ids if mid in fresh}}
        asks = np.asarray([is_question(text[mid]) for mid in [*inside, *outside]], dtype=bool)
        query_side = base.z_array(sims, cjk, asks)
        asking_english, asking_chinese = asking_background()
        if is_cjk(query):
            query_side = np.where(cjk, query_side, query_side * self._cross_lingual_scale)
            same = cjk
            memory_side = memory_side_z(sims, vectors, chinese, asks, asking_chinese)
        else:
            same = ~cjk
            memory_side = memory_side_z(sims, vectors, english, asks, asking_english)
        z = np.where(same, (query_side + memory_side) / 2.0, query_side - cfg.floor_cross_lingual_offset)
        if is_cjk(query):
            z = np.where(same, z, np.minimum(z, memory_side))
        return {mid: float(v) for mid, v in zip([*inside, *outside], z, strict=True)}

    def _small_talk(self, query: str, query_vector: np.ndarray) -> bool:
        """Whether the query itself says nothing to recall for: "Thanks again", "ok cool", "好的谢谢" (the
        content-free classifier that keeps such turns out of the candidates, ``sentence_kinds``, and no
        longer than its examples, as for a memory). A chat loop recalls for every user message; the
        floor, measuring relevance only, gave "Thanks again" the agent's "Window seats, noted." in a
        namespace of six memories, where chance's best is low. A short message with content ("Hill",
        "绵阳", "Porto") scores below zero. A question asks for something, and on query vectors the
        classifier is not sure of short ones ("Do I work in healthcare?" scored above zero with e5, four
        of LoCoMo's questions about Joanna with all-MiniLM-L6-v2), so a question is small talk only past
        the classifier's held-out margin (``SentenceKinds.content_free_margin``): "How are you?" and
        "你好吗？" are (read as questions about the asker, each was given a memory: "How are you?" the
        person's "我对花生过敏。"), none of the development sets' questions is."""
        kinds = sentence_kinds.for_embedder(self.embedder)
        bar = kinds.content_free_margin if is_question(query) else 0.0
        return bool(kinds.content_free(query_vector[None, :])[0] > bar
                    and len(set(tokenize(query))) <= kinds.content_free_max_terms)

    def _requested(self, query_vector: np.ndarray) -> set[str]:
        """The standing-fact kinds a query asks to be offered: for a request, the person's own and the
        starting memories' (``STATE``, ``DEFAULT``; profile.py)."""
        kinds = sentence_kinds.for_embedder(self.embedder)
        return {STATE, DEFAULT} if kinds.is_request(query_vector) else set()

    def _offers(self, inp: ch.ChannelInput, similarity: ch.Similarity, requested: set[str], about_asker: bool
                ) -> ch.Ranked:
        """The standing facts offered to the query (profile.py), which pass the floor by their kind: for a
        request, the ``standing_offers`` closest (a dinner suggestion bears on a diet and an allergy alike);
        for a question about the asker, the closest one, and only when nothing but the asker's own questions
        clears the floor on its own evidence (``_candidates``). e5 puts "我是做哪一行的？" barely above
        unrelated sentences from "我叫林峰，在厦门当牙医。" (z 0.2), so no relevance bar tells it from an
        unanswerable question about the asker (docs/benchmark-log.md); a question asks for one thing about
        the person, so one standing fact of theirs, or one fact distilled from what they said
        (``profile.FACT``), is what it is offered."""
        offers = self.recall_config.standing_offers
        if requested:
            return ch.profile_channel(inp, similarity, requested, offers)
        return ch.profile_channel(inp, similarity, {STATE, FACT}, min(offers, 1)) if about_asker else []

    def _about_asker(self, query_vector: np.ndarray) -> tuple[bool, bool]:
        """Whether the query asks for a fact of the asker's own life (``SentenceKinds.about_asker``), and
        whether the classifier is sure of it. Past its boundary the query anchors on weaker evidence (its
        answer still needs evidence); only past the held-out margin (sentence_kinds.py) is it offered a
        standing fact by kind alone (``_offers``): a guess may lower the bar, not stand in for evidence."""
        kinds = sentence_kinds.for_embedder(self.embedder)
        score = kinds.about_asker(query_vector)
        return score > 0.0, score > kinds.about_asker_margin

    def _standing_of(self, memories: Sequence[Memory], vectors: np.ndarray) -> list[tuple[str, ...]]:
        """The kinds (standing fact, content-free) of memories being added to a snapshot (``CorpusCache``)."""
        if not memories:
            return []
        kinds = sentence_kinds.for_embedder(self.embedder)
        return memory_kinds(memories, kinds.standing(vectors), kinds.content_free(vectors),
                            standing_margin=kinds.standing_margin)

    def _live(
        self, ordered: list[tuple[str, float]], fresh: dict[str, Memory], namespace: str
    ) -> tuple[list[tuple[str, float]], dict[str, str]]:
        """Drop candidates that are gone or no longer active; a superseded one hands its place to its
        successor. Returns the list and ``{successor id: superseded id}``."""
        out: dict[str, float] = {}
        replaced: dict[str, str] = {}
        for mid, score in ordered:
            memory = fresh.get(mid)
            if memory is None:
                continue
            if memory.status in (Status.ACTIVE, Status.COLD):
                out[mid] = max(score, out.get(mid, -math.inf))
                continue
            successor_id = memory.superseded_by
            if memory.status == Status.SUPERSEDED and successor_id:
                successor = fresh.get(successor_id) or self.store.get_many_in(namespace, [successor_id]).get(
                    successor_id
                )
                if successor is not None and successor.status == Status.ACTIVE:
                    fresh[successor_id] = successor
                    out[successor_id] = max(score, out.get(successor_id, -math.inf))
                    replaced[successor_id] = mid
        return sorted(out.items(), key=lambda kv: -kv[1]), replaced

    @staticmethod
    def _reason(placed: dict[str, dict[str, tuple[int, float]]], mid: str, ev: Evidence, replaced: str | None) -> str:
        """``placed``: channel -> candidate -> (rank, score), the channels in ranking order."""
        parts = []
        for name, places in placed.items():
            if mid in places:
                rank, score = places[mid]
                parts.append(f"{name} #{rank} ({score:.3g})")
        if not parts:
            parts.append("next to a matching turn")
        text = "; ".join(parts) + f"; evidence z={ev.z:.1f}, keyword coverage={ev.coverage:.2f}"
        if ev.standing:
            text += "; standing fact for this kind of request"
        if ev.in_window:
            text += "; inside the time window"
        if ev.rerank is not None:
            text += f"; reranker {ev.rerank:.2f}"
        if replaced:
            text += f"; replaces superseded {replaced}"
        return text

    def _render(self, hit: RecallHit, shared_from: bool = False) -> None:
        cfg = self.recall_config
        body = truncate_to_tokens(hit.memory.content, cfg.max_memory_tokens, self.counter)
        excerpts: list[str] = []
        if hit.memory.layer != Layer.EPISODIC and hit.memory.source_ids:
            sources = self.store.get_many_in(hit.memory.namespace, hit.memory.source_ids)
            # a superseded episode carries a stale value: a fact still drawn from it (what the episode said
            # besides that value, integrate.py) is shown without it
            cited = [sources[s] for s in hit.memory.source_ids
                     if s in sources and sources[s].status != Status.SUPERSEDED]
            collapsed = [m for m in hit.sources if m.id not in sources]
            hit.sources = cited[: cfg.max_sources] + collapsed
            excerpts = [truncate_to_tokens(s.content, cfg.source_excerpt_tokens, self.counter)
                        for s in hit.sources[: cfg.max_sources]]
        hit.text = render_hit(hit.memory, body, excerpts, shared_from=shared_from)

    def _conflicts(
        self, namespace: str, injected: Sequence[RecallHit], replaced: dict[str, str], fresh: dict[str, Memory],
        has_superseded: bool, updates: Sequence[Update] = (),
    ) -> list[Conflict]:
        if not injected or not (has_superseded or replaced or updates):
            return []
        by_id = {h.memory.id: h.memory for h in injected}
        old = self.store.superseded_by_any(namespace, list(by_id))
        conflicts = [Conflict(superseded=m, successor=by_id[m.superseded_by]) for m in old if m.superseded_by]
        seen = {c.superseded.id for c in conflicts}
        for successor_id, old_id in [*replaced.items(), *((u.newer, u.older) for u in updates)]:
            if successor_id in by_id and old_id not in seen and old_id in fresh:
                seen.add(old_id)
                conflicts.append(Conflict(superseded=fresh[old_id], successor=by_id[successor_id]))
        return conflicts

    def _record(
        self, namespace: str, result: RecallResult, session_id: str | None, now: datetime,
        rankings: dict[str, ch.Ranked], idle: Sequence[RecallHit], boosts: dict[str, float], top: float,
    ) -> None:
        """Log one namespace's share of a recall and reinforce its injected memories by ``score / top``."""
        cfg = self.recall_config
        entry = None
        if cfg.log:
            entry = LogEntry(
                namespace=namespace, session_id=session_id, query=result.query, at=to_ts(now),
                candidates={name: [[mid, round(s, 4)] for mid, s in ranked] for name, ranked in rankings.items()},
                injected=[h.memory.id for h in result.hits],
                scores={h.memory.id: round(h.score, 4) for h in result.hits},
                idle=[h.memory.id for h in idle],
            )
        if self.recorder.add(entry, {mid: max(s, 0.0) / top for mid, s in boosts.items()}):
            # off the caller's path: the flush is one transaction, but it is still a disk write
            self._flushing = self._pool.submit(self._flush_quietly)

    def drain(self) -> None:
        """Wait for a background flush in flight (stats and tests read what it writes)."""
        pending = self._flushing
        if pending is not None:
            pending.result()

    def _flush_quietly(self) -> None:
        try:
            self.recorder.flush()
        except Exception as exc:  # the buffer is kept by the next flush attempt; recall must not fail
            log.warning("recall log flush failed: %s", exc)


def _crosses(corpus: Corpus, i: int, j: int) -> bool:
    """Whether neighbouring turns ``i`` and ``j`` are by different speakers (``Corpus.reply``)."""
    later = i if int(corpus.previous[i]) == j else j
    return bool(corpus.reply[later])


def _sparse_at(docs: np.ndarray, values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The sparse scores (``docs`` ascending, ``values``) at ``rows``, zero where a row has none."""
    if not docs.size:
        return np.zeros(len(rows), dtype=np.float64)
    at = np.minimum(np.searchsorted(docs, rows), docs.size - 1)
    return np.where(docs[at] == rows, values[at], 0.0)


#: Background spreads kept between recalls (``_snapshot_lookups``): about 1.6 kB each at 384 dimensions.
SPREADS_KEPT = 4096


def _each_others_closest(
    theirs: Sequence[Memory], own: Sequence[Memory], vector: Callable[[Memory], np.ndarray | None],
    spread: Callable[[np.ndarray, str], Baseline], bar: float,
) -> dict[str, str]:
    """``{their id: own id}`` for the pairs on one attribute: each the other's closest, by the background
    z of the pair (the mean of both directions, each vector against its own text's background), at least
    ``bar``. A starting memory and the user's word meet this way, and so do a shared memory and the
    grantee's own: the own memory speaks of this one, not of another one beside it."""
    z: dict[tuple[str, str], float] = {}
    for t in theirs:
        vt = vector(t)
        for o in own:
            vo = vector(o)
            if vt is not None and vo is not None:
                cosine = float(vt @ vo)
                z[t.id, o.id] = float(spread(vt, t.content).z(cosine) + spread(vo, o.content).z(cosine)) / 2
    pairs: dict[str, str] = {}
    for t in theirs:
        mine = [(value, oid) for (tid, oid), value in z.items() if tid == t.id]
        if not mine:
            continue
        best_z, best = max(mine)
        rival = max(value for (_, oid), value in z.items() if oid == best)
        if best_z >= bar and best_z >= rival:
            pairs[t.id] = best
    return pairs


def _snapshot_lookups(
    corpus: Corpus, english: np.ndarray, chinese: np.ndarray, spreads: dict[tuple[bytes, str], Baseline],
) -> tuple[Callable[[str], np.ndarray | None], Callable[[str], frozenset[str] | None],
           Callable[[np.ndarray, str], Baseline]]:
    """What collapse and recall-time updates read of a candidate: its vector and keyword terms in the
    snapshot (``None`` for a memory outside it), and a vector's cosines to the background of its
    text's language, computed once per vector and text and kept in ``spreads`` (the pipeline's, for its
    fixed background) across recalls: a memory's spread does not depend on the query, and the same
    memories are hits of recall after recall."""

    def vector(mid: str) -> np.ndarray | None:
        i = corpus.position.get(mid)
        return None if i is None else corpus.vectors[i]

    def terms(mid: str) -> frozenset[str] | None:
        i = corpus.position.get(mid)
        return None if i is None else corpus.keyword.terms[i]

    def spread(u: np.ndarray, text: str) -> Baseline:
        key = (u.tobytes(), text)
        found = spreads.get(key)
        if found is None:
            if len(spreads) >= SPREADS_KEPT:
                spreads.clear()
            found = spreads[key] = baseline(u, chinese if is_cjk(text) else english)
        return found

    return vector, terms, spread


def _with_activation(rows: Sequence[Memory], current: Mapping[str, tuple[float, float, int]]) -> dict[str, Memory]:
    """Each row still stored, with its stored activation and access count (a copy where they moved)."""
    out: dict[str, Memory] = {}
    for m in rows:
        now = current.get(m.id)
        if now is None:
            continue
        log_base, ref_time, count = now
        if (m.activation.log_base, m.activation.ref_time, m.access_count) != now:
            m = m.model_copy(update={"activation": Activation(log_base=log_base, ref_time=ref_time),
                                     "access_count": count})
        out[m.id] = m
    return out
