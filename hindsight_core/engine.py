"""``Hindsight``: the engine's public API. Adapters call only this.

:class:`Hindsight` is a facade. Its constructor builds one :class:`~hindsight_core.context.EngineContext`
(stores, indexes, embedder, token counter, clock, configuration, outbox applier) and composes the
services over it: memories (record, read, erase), index maintenance (reconcile, re-embed), recall,
lifecycle (consolidation, procedures, sweep, restore), transcripts and portability (export, import).
What spans services is spelled out here, in one place: a record counts towards consolidation, an erase
reaches recall's buffers and the archive, ``forget_namespace`` purges every service in one unit of work,
``stats`` gathers every service's figures, and ``close`` stops them in order.

Every async method runs its sync twin in a worker thread (:func:`_twin`): one implementation path, the
real signature, and the event loop never blocks on SQLite, Chroma or the embedder."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import inspect
import logging
import os
import threading
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from hindsight_core import environment
from hindsight_core.activation.base import ActivationIndex
from hindsight_core.clock import Clock, system_clock, to_ts
from hindsight_core.config import HindsightConfig, RecallConfig
from hindsight_core.context import EngineContext
from hindsight_core.embeddings.base import Embedder
from hindsight_core.embeddings.resolve import resolve_embedder
from hindsight_core.environment import default_path
from hindsight_core.errors import EngineClosedError, EngineForkedError, InvalidInputError, UnknownNamespaceError
from hindsight_core.inspection import Inspection
from hindsight_core.lifecycle.api import LifecycleService
from hindsight_core.maintenance import IndexMaintenance
from hindsight_core.memories import MemoryService
from hindsight_core.namespaces import under, within
from hindsight_core.ownership import DirectoryLock, releases_on_failure
from hindsight_core.portability import ImportReport, PortabilityService
from hindsight_core.progress import Progress, track
from hindsight_core.recall.api import RecallService
from hindsight_core.sharing import SharingService
from hindsight_core.starting import StartingService
from hindsight_core.starting_template import StartingMemories, TemplateInput, template_of
from hindsight_core.store import open_store, workers
from hindsight_core.store.sql import RelationalStore
from hindsight_core.text.tokens import TokenCounter, default_token_counter
from hindsight_core.transcripts import Entries, TranscriptService
from hindsight_core.types import (
    Event,
    Grant,
    Kind,
    Layer,
    Memory,
    MemoryHistory,
    Stats,
    Status,
    WorkerStatus,
)
from hindsight_core.validation import check_id, check_namespace
from hindsight_core.vectors.base import VectorIndex
from hindsight_core.write.outbox import ACTIVATION, VECTOR, ApplyReport, OutboxApplier

if TYPE_CHECKING:
    from hindsight_core.lifecycle.schema import Extractor
    from hindsight_core.lifecycle.types import ConsolidationReport, RestoreReport, SweepReport
    from hindsight_core.recall.rerank import Reranker
    from hindsight_core.recall.snapshot_file import SnapshotFiles
    from hindsight_core.recall.types import RecallResult

log = logging.getLogger("hindsight")


P = ParamSpec("P")
R = TypeVar("R")



def _twin(
    method: Callable[Concatenate[Hindsight, P], R], name: str | None = None
) -> Callable[Concatenate[Hindsight, P], Coroutine[Any, Any, R]]:
    """The async twin of a public method: the same signature (``inspect.signature`` and type checkers
    see it), run in a worker thread."""

    @functools.wraps(method)
    async def twin(self: Hindsight, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(method, self, *args, **kwargs)

    twin.__name__ = name or f"a{method.__name__}"
    twin.__qualname__ = f"Hindsight.{twin.__name__}"
    twin.__doc__ = f"Async twin of :meth:`Hindsight.{method.__name__}` (runs it in a worker thread)."
    return twin


#: The prefix of every index name the engine builds; alone, the names of the versions before issue 38.
UNSCOPED_PREFIX = "hindsight"


def index_scope(dataset: str) -> str:
    """The part of each index name the engine builds that says whose it is. Data sets sharing one Redis
    or Chroma server (staging beside production, two apps) hold the same namespaces; with names per
    namespace only, one's reconcile or ``forget_namespace`` deleted the other's entries. 12 hex digits of
    a digest of the data set id: Chroma allows a collection name 63 characters, the longest then takes
    58; two data sets that drew the same digits meet the marker (``ForeignDataSetError``), not each
    other's entries."""
    return hashlib.blake2b(dataset.encode("utf-8"), digest_size=6).hexdigest()


class Hindsight:
    """Long-term memory for agents.

    ``Hindsight(path=...)`` is the embedded default: SQLite, Chroma and the activation index all live in
    one directory, no server needed. ``database_url`` (``postgresql://…``) moves the relational store to
    PostgreSQL; ``redis_url`` (or a ``redis_client``) moves the activation index to
    Redis; ``chroma_url`` uses a Chroma server; ``vector_index`` / ``activation_index`` inject indexes.
    ``clock`` returns an aware datetime; ``embedder`` is an :class:`Embedder`, a FlagEmbedding model name
    or path, or ``None`` for the bundled multilingual-e5-small; ``reranker`` a cross-encoder (object,
    name or path; default ``config.recall.reranker``); ``extractor`` the consolidation extractor (default
    :class:`RuleExtractor`); ``background_consolidation=False`` turns the consolidation worker off.
    ``reconcile_on_open`` applies the outbox left by an earlier process before the constructor returns.
    ``starting_memories`` is a template a new user's root namespace gets on first use
    (:mod:`hindsight_core.starting`): a :class:`StartingMemories`, a JSONL path, or a list of strings and
    dicts; malformed, it raises :class:`InvalidInputError` before anything opens.

    The data set remembers which embedder its vectors come from: opening it with another (another name
    or dimension) raises :class:`EmbedderMismatchError` naming both and changes nothing;
    ``reembed=True`` moves it to the new embedder instead (every indexed memory embedded again and the
    vector index rebuilt, before the constructor returns). ``config.recall.warm_up_on_open`` starts
    :meth:`warm_up` in a background thread.

    Several data sets may share one Redis and one Chroma server: the index names the engine builds carry
    the data set (:func:`index_scope`), so none sees or deletes another's entries whatever namespaces
    they hold, and an index passed in whose marker names another data set raises
    :class:`ForeignDataSetError` on open (see :meth:`reconcile`)."""

    @releases_on_failure
    def __init__(
        self,
        path: str | Path | None = None,
        *,
        database_url: str | None = None,
        redis_url: str | None = None,
        chroma_url: str | None = None,
        clock: Clock | None = None,
        embedder: Embedder | str | Path | None = None,
        config: HindsightConfig | None = None,
        token_counter: TokenCounter | None = None,
        vector_index: VectorIndex | None = None,
        activation_index: ActivationIndex | None = None,
        redis_client: Any = None,
        reconcile_on_open: bool = True,
        reranker: Reranker | str | None = None,
        extractor: Extractor | None = None,
        background_consolidation: bool = True,
        reembed: bool = False,
        starting_memories: TemplateInput | None = None,
    ) -> None:
        template = None if starting_memories is None else template_of(starting_memories)
        self.path = Path(path) if path is not None else default_path()
        self.path.mkdir(parents=True, exist_ok=True)
        # Services an argument does not name come from the environment (hindsight_core.environment).
        database_url = environment.database_url(database_url)
        chroma_url = environment.chroma_url(chroma_url) if vector_index is None else chroma_url
        if activation_index is None and redis_client is None:
            redis_url = environment.redis_url(redis_url)
        # The process that opens the engine is the one that may use it (a forked child inherits the
        # object, not the connections, threads and locks behind it).
        self._pid = os.getpid()
        # Taken before anything else is created: a refused engine leaves the directory untouched.
        self._owner = self._claim_directory(chroma_url, vector_index)
        self._closed = False
        self._close_lock = threading.Lock()
        config = config or HindsightConfig()
        embedder_ = resolve_embedder(embedder)
        store = open_store(database_url or self.path / "hindsight.sqlite3")
        # Index names carry the data set: data sets sharing a server must never meet (index_scope).
        scope = index_scope(store.dataset_id())
        if vector_index is None:
            from hindsight_core.vectors.chroma import ChromaVectorIndex

            # opened on first use, collections loaded in the background (vectors/chroma.py)
            vector_index = ChromaVectorIndex(self.path / "chroma", url=chroma_url, lazy=True,
                                             collection_prefix=f"{UNSCOPED_PREFIX}_{scope}",
                                             legacy_prefix=UNSCOPED_PREFIX)
        if activation_index is None:
            if redis_url or redis_client is not None:
                from hindsight_core.activation.redis import RedisActivationIndex

                activation_index = RedisActivationIndex(redis_client, url=redis_url,
                                                        prefix=f"{UNSCOPED_PREFIX}:{scope}",
                                                        legacy_prefix=UNSCOPED_PREFIX)
            else:
                from hindsight_core.activation.sqlite import SqliteActivationIndex

                activation_index = SqliteActivationIndex(store)
        self._ctx = EngineContext(
            path=self.path,
            config=config,
            clock=clock or system_clock,
            embedder=embedder_,
            tokens=token_counter or default_token_counter(),
            store=store,
            vectors=vector_index,
            activation=activation_index,
            outbox=OutboxApplier(store, vector_index, activation_index, embedder_, config,
                                 now=lambda: to_ts(self._ctx.now())),
        )
        self._maintenance = IndexMaintenance(self._ctx)
        try:  # before any index work: vectors of another model must not reach the index
            self._maintenance.check_embedder(reembed=reembed)
        except BaseException:
            self._close_backends()
            raise
        self._memories = MemoryService(self._ctx)
        self._recall = RecallService(self._ctx, reranker, self._snapshot_files(database_url))
        if reembed:  # every vector may have moved (a model saved over the old one's name)
            self._recall.invalidate(None)
        self._lifecycle = LifecycleService(
            self._ctx, extractor=extractor, background_consolidation=background_consolidation
        )
        self._transcripts = TranscriptService(self._ctx)
        self._portability = PortabilityService(self._ctx)
        self._inspection = Inspection(self._ctx)
        self._starting = StartingService(self._ctx, template)
        self._sharing = SharingService(self._ctx)
        self._ctx.outbox.on_recovered = self._maintenance.on_index_recovered
        self._ctx.outbox.on_applied = self._maintenance.check_activation_on_clock
        if self._owner.held and database_url is None:
            # The directory and its SQLite file are this engine's alone: a claim left on an outbox row is
            # a dead predecessor's, not one to wait out.
            store.release_claims()
        self._lifecycle.release_dead_leases()
        if reconcile_on_open:
            self._maintenance.reconcile(verify=False, at_open=True)
        self._warming: threading.Thread | None = None
        if config.recall.warm_up_on_open:
            self._warming = threading.Thread(target=self._warm_quietly, name="hindsight-warm-up", daemon=True)
            self._warming.start()

    def _snapshot_files(self, database_url: str | None) -> SnapshotFiles | None:
        """Recall snapshots kept on disk (``recall/snapshot_file.py``) when this engine alone uses the
        directory and its SQLite store; processes sharing a store keep theirs in memory only."""
        if not self._owner.held or database_url is not None:
            return None
        from hindsight_core.recall.snapshot_file import SnapshotFiles
        from hindsight_core.version import __version__

        ctx = self._ctx
        # the code version too: what a snapshot holds (postings, standing kinds) is derived by this code
        identity = {"dataset": ctx.store.dataset_id(), "embedder": ctx.embedder.name, "dim": ctx.embedder.dim,
                    "code": __version__}
        return SnapshotFiles(self.path / "recall-snapshots", identity)

    def _claim_directory(self, chroma_url: str | None, vector_index: VectorIndex | None) -> DirectoryLock:
        """Own the data directory when this engine will run embedded Chroma in it (single-process by
        design). With a Chroma server or an injected index nothing here needs an owner: SQLite is shared
        safely between processes (WAL), so several processes may open the directory."""
        if vector_index is None and not chroma_url:
            return DirectoryLock.acquire(self.path)
        return DirectoryLock(self.path)  # not held; release() is a no-op

    # -- what the engine is made of (read-only; tools and tests look inside) ------------------------
    @property
    def config(self) -> HindsightConfig:
        return self._ctx.config

    @property
    def store(self) -> RelationalStore:
        return self._ctx.store

    @property
    def vectors(self) -> VectorIndex:
        return self._ctx.vectors

    @property
    def activation(self) -> ActivationIndex:
        return self._ctx.activation

    @property
    def embedder(self) -> Embedder:
        return self._ctx.embedder

    @property
    def tokens(self) -> TokenCounter:
        return self._ctx.tokens

    @property
    def outbox(self) -> OutboxApplier:
        return self._ctx.outbox

    @property
    def extractor(self) -> Extractor:
        return self._lifecycle.extractor

    @property
    def inspection(self) -> Inspection:
        """Read-only views for operator tools (the CLI, the inspector): :mod:`hindsight_core.inspection`."""
        return self._inspection

    def now(self) -> datetime:
        return self._ctx.now()

    # -- write -------------------------------------------------------------------------------------
    def record(
        self,
        content: str,
        namespace: str,
        *,
        session_id: str | None = None,
        role: str | None = "user",
        occurred_at: datetime | None = None,
        source_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        layer: Layer | str = Layer.EPISODIC,
        kind: Kind | str = Kind.TURN,
        importance: int | None = None,
        index: bool | None = None,
    ) -> Memory:
        """Store one event. Returns once it is durable in the relational store; it is recallable at once
        unless the salience gate marked it small talk. ``source_id`` is also an idempotency key: recording
        the same ``source_id`` again in a namespace returns the existing memory. ``index=False`` keeps the
        memory out of recall (stored for provenance and exact reads only); ``True`` indexes even small
        talk; ``None`` lets the salience gate decide."""
        namespace = check_namespace(namespace)
        prepared = self._memories.prepare(
            content, namespace, session_id=session_id, role=role, occurred_at=occurred_at,
            source_id=source_id, metadata=metadata, layer=layer, kind=kind, importance=importance,
            now=self._ctx.now(), index=index,
        )
        self._starting.first_use(namespace)
        committed = self._memories.commit(namespace, [prepared])
        self._lifecycle.recorded(namespace, committed.new)
        return committed.memories[0]

    def record_many(
        self,
        events: Iterable[Event | Mapping[str, Any] | str],
        namespace: str,
        *,
        progress: Progress = False,
        on_commit: Callable[[list[Memory]], None] | None = None,
    ) -> list[Memory]:
        """Bulk import, one transaction and one embedding batch per ``config.write.batch_size`` events.

        Every event is validated before the first one is written. ``on_commit`` is called after each
        batch is durable (an acknowledgement you can log). ``progress``: ``True`` for a tqdm bar, or a
        ``(done, total)`` callback."""
        namespace = check_namespace(namespace)
        prepared = self._memories.prepare_events(events, namespace)
        self._starting.first_use(namespace)
        batch = self._ctx.config.write.batch_size
        stored: list[Memory] = []
        with track(progress, len(prepared), f"record {namespace}", "event") as bar:
            for start in range(0, len(prepared), batch):
                committed = self._memories.commit(namespace, prepared[start : start + batch])
                self._lifecycle.recorded(namespace, committed.new)
                stored += committed.memories
                if on_commit is not None:
                    on_commit(committed.memories)
                bar.advance(len(committed.memories))
        return stored

    def check_events(
        self, events: Iterable[Event | Mapping[str, Any] | str], namespace: str, *, start: int = 0
    ) -> list[tuple[str, str]]:
        """Check events as :meth:`record_many` does, writing nothing; returns the idempotency key
        ``(layer, source_id)`` of each event that has a ``source_id``.

        For an import too large to hold at once (``hindsight import`` of a big file): check it batch by
        batch first, then record it batch by batch, and a bad event still writes nothing. ``start`` is
        the number of events before this batch, so that a message names an event by its place in the
        whole import; the keys let the caller find a ``source_id`` repeated in two batches."""
        namespace = check_namespace(namespace)
        prepared = self._memories.prepare_events(events, namespace, start=start)
        return [(p.memory.layer.value, p.external_id) for p in prepared if p.external_id is not None]

    def upsert(
        self,
        content: str,
        namespace: str,
        *,
        source_id: str,
        session_id: str | None = None,
        role: str | None = "user",
        occurred_at: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        layer: Layer | str = Layer.EPISODIC,
        kind: Kind | str = Kind.TURN,
        importance: int | None = None,
        index: bool | None = None,
    ) -> Memory:
        """Record under ``source_id``, or replace the memory already stored under it, in one transaction.

        ``record`` treats a known ``source_id`` as a re-run import and keeps the first value; a key/value
        caller (a LangGraph store item) needs the new value instead. Replacing by forget + record would
        leave a window, between two commits, in which a reader finds no memory and a crash keeps none:
        here a reader sees the old or the new value and a crash leaves one of them. The replaced memory
        keeps its id, ``created_at`` and access count; everything the caller gives is rewritten and
        ``updated_at`` moves to now. Same arguments as :meth:`record`, ``source_id`` required."""
        namespace = check_namespace(namespace)
        if source_id is None:
            raise InvalidInputError("upsert needs a source_id: it names the memory to replace")
        prepared = self._memories.prepare(
            content, namespace, session_id=session_id, role=role, occurred_at=occurred_at,
            source_id=source_id, metadata=metadata, layer=layer, kind=kind, importance=importance,
            now=self._ctx.now(), index=index,
        )
        self._starting.first_use(namespace)
        memory, created = self._memories.upsert(namespace, prepared)
        if created:
            self._lifecycle.recorded(namespace, [memory])
        return memory

    # -- starting memories ------------------------------------------------------------------------
    @property
    def starting_memories(self) -> StartingMemories | None:
        """The template new users start with (``None``: they start empty)."""
        return self._starting.template

    def set_starting_memories(self, template: TemplateInput | None) -> StartingMemories | None:
        """Set the template a new user's root namespace gets on first use (``None`` turns it off); what
        ``Hindsight(starting_memories=...)`` takes. Roots already decided keep what they have. Malformed
        input raises :class:`InvalidInputError` and keeps the template as it was. Returns the checked
        template."""
        checked = None if template is None else template_of(template)
        self._starting.template = checked
        return checked

    def apply_starting_memories(
        self, namespace: str, template: TemplateInput | None = None
    ) -> list[Memory]:
        """Give ``namespace``'s root its starting memories now, if nobody has: ``template``, else the
        engine's. Exactly once per root across every process sharing the store; a root that already
        holds memories gets none (it is not a new user). Returns the memories written (an empty list when
        the root was decided before). Adapters call it with their own ``starting_memories``."""
        namespace = check_namespace(namespace)
        checked = None if template is None else template_of(template)
        return self._starting.first_use(namespace, checked)

    # -- read --------------------------------------------------------------------------------------
    def get(self, memory_id: str, *, namespace: str | None = None) -> Memory | None:
        """The memory with this id, or ``None``. With ``namespace``, a memory of another namespace is
        ``None`` too (tenant wall)."""
        return self._memories.get(memory_id, namespace=namespace)

    def working(self, namespace: str, session_id: str, *, budget_tokens: int | None = None) -> list[Memory]:
        """The session's recent turns, verbatim, oldest first, within a token budget (working memory).

        Read from the relational store, so every process sharing the data sees the same window."""
        return self._memories.working(namespace, session_id, budget_tokens=budget_tokens)

    def find(
        self,
        namespace: str,
        *,
        session_id: str | None = None,
        layer: Layer | str | None = None,
        kind: Kind | str | None = None,
        source_ids: Sequence[str] | None = None,
        status: Status | str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Memory]:
        """Memories of one namespace matching exact attributes, in write order (oldest first).

        Recall ranks by relevance and may drop what it finds weak; adapters that keep a verbatim log or a
        key/value item (chat histories, LangGraph stores) need the exact, complete read this gives.
        ``source_ids`` are the ids given to ``record(source_id=...)``. ``created_after`` /
        ``created_before`` keep memories created in ``[created_after, created_before)`` (aware
        datetimes); ``metadata`` keeps those whose metadata has each given top-level key with an equal
        value (str, int, float, bool or None; ``True`` and ``1`` differ, ``1`` and ``1.0`` do not).
        ``limit`` and ``offset`` page through the result; everything is filtered in SQL."""
        return self._memories.find(
            namespace, session_id=session_id, layer=layer, kind=kind, source_ids=source_ids, status=status,
            created_after=created_after, created_before=created_before, metadata=metadata, limit=limit,
            offset=offset,
        )

    def update(self, memory_id: str, text: str, *, namespace: str | None = None) -> Memory:
        """Replace a memory's text, keeping its id (as mem0 does), and keep the old text as history.

        One transaction: the edit is noted (old text, new text, time, and the old text's vector), the
        memory gets the new text, fingerprint and entities and ``updated_at`` = now, its cached vector is
        dropped and its index work queued; after the commit the new text is embedded and indexed, and the
        next recall's snapshot follows the change log. A reader sees the old or the new text, never a
        mix; a crash leaves one of them. Layer, kind, metadata, activation and the ``indexed`` flag stay
        as they were. An unknown id, or one of another namespace than ``namespace``, raises
        :class:`MemoryNotFoundError`; malformed input :class:`InvalidInputError`; both change nothing.
        The same text again changes nothing and notes no edit. Returns the memory as stored."""
        return self._memories.update(memory_id, text, namespace=namespace)

    def history(self, memory_id: str, *, namespace: str | None = None) -> MemoryHistory:
        """A memory's story, oldest first: its edits (``update``: old text, new text, time) and its
        supersedes chain both ways (the memories consolidation or ``add_procedure`` replaced with it,
        and those that replaced it, each with the time of the link). ``text_at(when)`` answers what it
        said at a time. Unknown ids (and ids of another namespace than ``namespace``) raise
        :class:`MemoryNotFoundError`. Erased and archived memories have no history here."""
        return self._memories.history(memory_id, namespace=namespace)

    def sensory(self, namespace: str, session_id: str | None = None) -> Memory | None:
        """The current turn: the latest event recorded for the session, by any process (sensory memory)."""
        return self._memories.sensory(namespace, session_id)

    def namespaces(self) -> list[str]:
        return self._ctx.store.namespaces()

    def recall(
        self,
        query: str,
        namespace: str,
        *,
        session_id: str | None = None,
        k: int | None = None,
        budget_tokens: int | None = None,
        layers: Sequence[Layer | str] | None = None,
        now: datetime | None = None,
        include_cold: bool = False,
        explain: bool = False,
        track: bool = True,
        as_of: datetime | None = None,
        subtree: bool = False,
        config: RecallConfig | None = None,
        shared: bool = True,
    ) -> RecallResult:
        """The memories worth injecting for ``query``, ranked and packed into ``budget_tokens``.

        An irrelevant query returns no hits (``to_prompt()`` is then ""), a namespace with no memories
        an empty result; malformed input raises :class:`InvalidInputError` before anything runs.
        ``explain=True`` fills ``result.trace`` with every stage's view (an inspector's question "why
        this memory?"); ``track=False`` writes no recall log and reinforces nothing, so a look at what
        recall would inject leaves the memory as it was. ``subtree=True`` searches ``namespace`` and every
        namespace below it (``user:ana`` and ``user:ana/store:memories``, never ``user:anabel``) as one
        ranking, at most ``config.recall.max_subtree_namespaces`` of them; each hit's
        ``memory.namespace`` says where it lives.

        ``as_of`` (an aware datetime) answers as the memory stood then: memories created after it are
        left out, memories superseded after it come back (they were current then) while those superseded
        before it stay out, and an edited memory is searched and shown with the text it had then. Hits
        show each memory as it stood (that text, status active). It searches the stored vectors exactly
        (not the index, which holds today's texts), reads nothing of what has been erased or archived,
        and is read-only: no recall log, no reinforcement. ``now`` defaults to ``as_of`` ("yesterday"
        means the day before it). Cold memories follow ``include_cold`` as today (when a memory went
        cold is not recorded).

        A new user's first recall (``track=True``, no ``as_of``) writes the starting memories first
        (``starting_memories``).

        The semantic and procedural memories of every namespace granted to ``namespace`` or to its root
        (:meth:`grant`) are searched beside its own, unless ``shared=False``; a shared hit's
        ``memory.namespace`` is the shared namespace, and a shared memory on the same thing as one of the
        namespace's own comes after it (hidden, a conflict, when the namespace's own states a change).
        Grants are today's, for ``as_of`` too.

        ``config`` replaces the engine's recall settings (``HindsightConfig.recall``) for this call alone:
        settings ``hindsight tune`` fitted, or an experiment beside the engine's, without a second engine."""
        return self._recall.recall(
            query, namespace, session_id=session_id, k=k, budget_tokens=budget_tokens, layers=layers, now=now,
            include_cold=include_cold, explain=explain, track=track, as_of=as_of, subtree=subtree,
            first_use=self._starting.first_use, config=config,
            shared=shared, shared_with=self._sharing.readable,
        )

    def warm_up(self) -> None:
        """Pay now, once per process, what the first recall would: the embedder's model, the relevance
        floor's background vectors, the standing-fact prototypes, jieba's dictionary and part-of-speech
        model (the first Chinese query), the token counter and the reranker. Idempotent and safe to call
        from any thread; ``config.recall.warm_up_on_open=True`` runs it in a background thread when the
        engine opens.
        What it saves is measured in docs/benchmark-log.md ("Cold start")."""
        self._recall.warm_up()

    def flush_recall_log(self) -> int:
        """Write buffered recall-log rows and reinforcements now; returns how many memories were reinforced."""
        return self._recall.flush_log()

    # -- forget ------------------------------------------------------------------------------------
    def forget(self, memory_id: str, *, namespace: str | None = None) -> bool:
        """Erase one memory, from the store or from its archive file: no table keeps its content, vector or
        id but a tombstone (id, namespace, time), and a distilled memory whose sources were all erased goes
        with it (facts that keep other sources just lose this one). One transaction; the indexes drop the
        ids after commit. Returns ``False`` when there was none (or it is in another namespace than the one
        named)."""
        memory = self._memories.get(memory_id, namespace=namespace)
        if memory is not None:
            return bool(self._erase(memory.namespace, [memory.id]))
        # not in the store: an archived memory is erased from its archive file
        found = self._lifecycle.find_archived(
            check_id(memory_id), None if namespace is None else check_namespace(namespace)
        )
        if found is None:
            return False
        self._erase(found.namespace, found.ids, archived=True)
        self._lifecycle.drop_archived(found)
        return True

    def demote(
        self, memory_id: str, *, namespace: str | None = None, reason: str | None = None, by: str | None = None
    ) -> Memory:
        """Forget on request, reversibly: lower the memory's activation so recall ranks it below what is
        still wanted, stops reinforcing it, and the sweep cools it once it is idle and archives it later.
        Noted durably with the time, ``by`` (who asked: an agent's tool, a user id) and ``reason``; it
        shows in ``history()``. ``reinstate`` undoes it until the sweep archives the memory. An unknown
        id (or one of another namespace than ``namespace``) raises :class:`MemoryNotFoundError`, an
        archived one :class:`MemoryArchivedError`, malformed input :class:`InvalidInputError`; none
        changes anything. Demoting a demoted memory changes nothing. ``forget`` erases instead. Returns
        the memory as stored."""
        return self._lifecycle.demote(memory_id, namespace=namespace, reason=reason, by=by)

    def reinstate(self, memory_id: str, *, namespace: str | None = None) -> Memory:
        """Undo ``demote``: the activation the memory had before comes back (decayed since as it would
        have been), and ``active`` too when the sweep cooled it meanwhile. A memory not demoted is
        returned unchanged; one the sweep archived raises :class:`MemoryArchivedError` (``restore`` its
        archive instead); an unknown id :class:`MemoryNotFoundError`."""
        return self._lifecycle.reinstate(memory_id, namespace=namespace)

    def pin(self, memory_id: str, *, namespace: str | None = None) -> Memory:
        """Keep a memory for good: a pinned memory never fades out (the sweep neither cools nor archives
        it), for what must not go cold while it holds, such as an allergy or a standing instruction. A
        memory the sweep had cooled is active again. It still ranks by relevance like any other; it is
        not forced into every prompt. An unknown id (or one of another namespace than ``namespace``)
        raises :class:`MemoryNotFoundError`, an archived one :class:`MemoryArchivedError` (``restore``
        it first). Sets ``Memory.pinned`` (``metadata["pinned"]``); returns the memory as stored."""
        return self._lifecycle.pin(memory_id, namespace=namespace, pinned=True)

    def unpin(self, memory_id: str, *, namespace: str | None = None) -> Memory:
        """Undo ``pin``: the memory fades from its current activation like any other."""
        return self._lifecycle.pin(memory_id, namespace=namespace, pinned=False)

    def _erase(self, namespace: str, seeds: Sequence[str], *, archived: bool = False) -> list[str]:
        """One unit of work: the store erases, recall drops what it buffered of the ids."""
        with self._ctx.changes() as ch:
            gone = self._memories.erase(ch, namespace, seeds, archived=archived)
            if gone:
                self._recall.discard_memories(namespace, gone)
        return gone

    # -- shared layers (sharing.py) ---------------------------------------------------------------
    def grant(self, namespace: str, *, to: str, write: bool = False) -> Grant:
        """Let recalls in ``to`` (and below it) search ``namespace``'s semantic and procedural memories
        beside their own, from the next recall on. ``write=True`` also lets ``to``'s consolidation
        promote into ``namespace`` the facts its extractor marks general (``LLMExtractor``; the rule
        extractor marks none), each with where it came from. Granting again keeps the first grant's
        time and sets ``write`` as given. A namespace and its own subtree need no grant
        (``InvalidInputError``)."""
        return self._sharing.grant(namespace, to, write=write)

    def revoke(self, namespace: str, *, to: str) -> bool:
        """Withdraw a grant, from the next recall on in every process; ``False`` when there was none."""
        return self._sharing.revoke(namespace, to)

    def grants(self, namespace: str | None = None) -> list[Grant]:
        """Every grant, or those naming ``namespace`` as the shared namespace or as the grantee."""
        return self._sharing.grants(namespace)

    def holds_namespace(self, namespace: str) -> bool:
        """Whether the namespace holds anything: a memory, a transcript or an archive file (a namespace
        whose memories were all archived is still known, and ``forget_namespace`` must reach it)."""
        namespace = check_namespace(namespace)
        return (self._memories.has_namespace(namespace) or self._transcripts.holds(namespace)
                or self._lifecycle.holds(namespace))

    def forget_namespace(self, namespace: str, *, subtree: bool = True) -> int:
        """Erase every memory of a namespace (tombstones stay, as for ``forget``), its transcripts, logs,
        jobs and archive, and the same of every namespace below it (``user:ana/…``, not ``user:anabel``;
        :mod:`hindsight_core.namespaces`), in one unit of work; returns how many memories.
        ``subtree=False`` erases the namespace alone. Unknown namespaces raise."""
        namespace = check_namespace(namespace)
        if not isinstance(subtree, bool):
            raise InvalidInputError("subtree must be a bool")
        targets = [namespace]
        if subtree:
            archived = [ns for ns in self._lifecycle.archived_namespaces() if within(ns, namespace)]
            targets = under([namespace, *self._memories.subtree(namespace), *archived], namespace)
        known = [ns for ns in targets if self.holds_namespace(ns)]
        if not known:
            raise UnknownNamespaceError(f"namespace {namespace!r} holds no memories")
        count = 0
        with self._ctx.changes(apply="all") as ch:
            for ns in known:
                count += self._memories.purge(ch, ns)  # every table of the namespace, transcripts included
                self._sharing.purge(ch, ns)
                self._lifecycle.purge(ns)
                self._recall.purge(ns)
        for ns in known:
            self._lifecycle.after_purge(ns)  # files cannot roll back with the database: after commit
            self._starting.forget(ns)
        return count

    # -- lifecycle ---------------------------------------------------------------------------------
    def consolidate(
        self, namespace: str, session_id: str | None = None, *, progress: Progress = False
    ) -> ConsolidationReport:
        """Distill the namespace's (or one session's) unconsolidated episodes into semantic and
        procedural memories, now, in this thread. A failed extractor does not raise: the report (and the
        job row) say ``failed`` with the error, and the episodes not integrated stay for a later run.
        ``progress`` (``True`` for a tqdm bar, or a ``(done, total)`` callback) counts episodes."""
        return self._lifecycle.consolidate(namespace, session_id, progress=progress)

    def end_session(self, namespace: str, session_id: str) -> bool:
        """The session is over: consolidate it in the background (returns at once). Returns False when
        that session was already queued."""
        return self._lifecycle.end_session(namespace, session_id)

    def wait_for_consolidation(self, timeout: float | None = 60.0) -> bool:
        """Block until the background worker has nothing queued or running; False on timeout."""
        return self._lifecycle.wait_for_consolidation(timeout)

    def add_procedure(
        self,
        trigger: str,
        steps: Sequence[str],
        namespace: str,
        *,
        importance: int = 3,
        confidence: float | None = None,
    ) -> Memory:
        """Store a how-to: recall offers it when a query matches its trigger. The same trigger with new
        steps supersedes the older version; the same trigger and steps returns the existing one."""
        return self._lifecycle.add_procedure(trigger, steps, namespace, importance=importance, confidence=confidence)

    def feedback(self, memory_id: str, success: bool, *, namespace: str | None = None) -> Memory:
        """Report whether following a procedure worked: confidence moves towards 1 or 0; a success also
        reinforces it. Below ``procedure_min_confidence`` it goes cold (recall stops offering it)."""
        return self._lifecycle.feedback(memory_id, success, namespace=namespace)

    def sweep(
        self, now: datetime | None = None, *, namespace: str | None = None, dry_run: bool = False,
        progress: Progress = False,
    ) -> SweepReport:
        """Evict: expired ``state`` memories and memories whose activation fell below
        ``cold_log_activation`` after ``cold_idle_days`` idle become cold (out of the indexes, kept in the
        store); cold memories idle past ``archive_after_days`` go to the namespace's JSONL archive and are
        deleted. Idle time runs from the last reinforcement (``activation.ref_time``). Memories whose
        metadata sets ``"pinned": true`` (``pin``; key/value items an application reads back by key) never fade out.

        ``dry_run=True`` computes the same report (ids, counts, archive files) and writes nothing: it is
        what a real sweep at ``now`` would do. ``progress`` counts the steps (and the namespaces archived)."""
        return self._lifecycle.sweep(now, namespace=namespace, dry_run=dry_run, progress=progress)

    def archive_path(self, namespace: str) -> Path:
        """Where ``sweep`` archives this namespace's memories (the file may not exist yet)."""
        return self._lifecycle.archive_path(namespace)

    def restore(self, archive_path: str | Path) -> RestoreReport:
        """Bring an archive's memories back as active (fresh activation). Memories already in the store
        (restored before, or re-recorded under the same ``source_id``) are skipped. Damaged lines (a torn
        tail) do not stop the whole records around them: they are restored, and the damage reported. A
        file with no record at all raises :class:`InvalidInputError` and restores nothing."""
        return self._lifecycle.restore(archive_path)

    # -- transcripts -------------------------------------------------------------------------------
    def transcript(self, namespace: str, key: str) -> Entries | None:
        """The entries of a transcript, oldest first; ``None`` when the key does not exist (an existing
        transcript may be empty)."""
        return self._transcripts.transcript(namespace, key)

    def transcript_keys(self, namespace: str) -> list[str]:
        """The namespace's transcript keys, in the order they were created."""
        return self._transcripts.transcript_keys(namespace)

    def edit_transcript(
        self, namespace: str, key: str, edit: Callable[[Entries | None], Entries | None]
    ) -> Entries | None:
        """Atomically replace a transcript by ``edit(current)``; returns the new entries.

        ``edit`` gets the current entries (a fresh list, or ``None`` when the key does not exist) and
        returns the new list, or ``None`` to delete the key. It runs inside the write transaction, so
        it sees the latest committed state; if it raises, or returns something that is not a list of
        JSON values, nothing changes. Appending (the new list starts with the old one) writes only the
        new tail."""
        return self._transcripts.edit_transcript(namespace, key, edit)

    # -- portability -------------------------------------------------------------------------------
    def export_namespace(self, namespace: str) -> Iterator[dict[str, Any]]:
        """The namespace as JSON-ready records, header first; write one per line (JSONL).

        The records are read up front, so a write running meanwhile cannot tear the export."""
        return self._portability.export_namespace(namespace)

    def import_namespace(
        self, records: Iterable[Mapping[str, Any]], *, namespace: str | None = None, progress: Progress = False
    ) -> ImportReport:
        """Rebuild a namespace from :meth:`export_namespace` records (ids, statuses, activation and edges
        kept exactly). ``namespace`` renames it. Every record is checked before anything is written; one
        transaction inserts it all, then the indexes are brought in step (``progress`` counts that part).
        Memories already present are skipped, so a re-run import adds nothing."""
        report = self._portability.import_namespace(records, namespace=namespace, progress=progress)
        self._recall.invalidate(report.namespace)  # rows written behind the recall snapshot's back
        return report

    # -- maintenance -------------------------------------------------------------------------------
    def reconcile(self, *, verify: bool = True, progress: Progress = False) -> ApplyReport:
        """Bring the derived indexes in step with the relational store.

        First it looks at each index's marker, the data set that owns the index's names: an index
        without one (it lost its data, or was written under the unscoped names of a version before
        issue 38) is rebuilt from the store, and this data set's entries under the old names are removed;
        one naming another data set raises :class:`ForeignDataSetError` and is left untouched. Then it
        applies everything pending in the outbox (both parts run on open). With ``verify`` it also
        compares, per namespace and layer, the ids each index holds with the ids it should hold and
        repairs the difference — what an index restarted empty (Redis without persistence) needs —
        and probes the vector index with a bounded sample of stored vectors, rebuilding a namespace
        (or a layer) whose index answers wrongly, e.g. a Chroma directory two processes wrote
        (:mod:`hindsight_core.write.verify`). The result is then a :class:`ReconcileReport`.
        ``progress`` (``True`` for a tqdm bar, or a ``(done, total)`` callback) counts the namespaces
        compared."""
        return self._maintenance.reconcile(verify=verify, progress=progress)

    def reembed(self, namespace: str | None = None, *, progress: Progress = False) -> int:
        """Recompute the cached vectors of every indexed active memory (of one namespace, or all) with
        the current embedder and write them to the vector index; returns how many. Cached vectors are
        reused for ever (index rebuilds never embed), keyed by the embedder's name: when the model changed
        under the same name (a fine-tuned model saved over the old path) or the cache is suspect, this is
        how the vectors are brought up to date. Batch by batch, so an interrupted run is finished by the
        outbox on the next open."""
        known = self._memories.check_known(namespace)
        count = self._maintenance.reembed(known, progress=progress)
        self._recall.invalidate(known)  # the snapshots hold the vectors replaced
        return count

    def stats(self, namespace: str | None = None) -> Stats:
        """Counts per namespace, layer and status, the outbox's state, recall health and consolidation
        jobs."""
        stats = self._memories.stats(self._memories.check_known(namespace))
        for ns, ns_stats in stats.namespaces.items():
            self._lifecycle.extend_stats(ns, ns_stats)
            self._recall.extend_stats(ns, ns_stats)
        stats.workers = [WorkerStatus.model_validate(w) for w in workers.live(self.store, to_ts(self.now()))]
        return stats

    def close(self) -> None:
        """Stop recall's writer and the consolidation worker, close the indexes and the store, then give
        up the data directory. Idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        if os.getpid() != self._pid:  # a forked child: what it would close and unlock is the parent's
            return
        warming = getattr(self, "_warming", None)
        if warming is not None:
            warming.join()  # it uses the pipeline closed below
        self._recall.close()
        self._lifecycle.close()
        self._close_backends()
        self._owner.release()  # last: the next owner must find Chroma and SQLite closed

    def _close_backends(self) -> None:
        # claims this engine still holds (work it will not apply now) are anyone's at once
        for closer in (self._ctx.outbox.release_claims, self._ctx.vectors.close, self._ctx.activation.close,
                       self._ctx.store.close):
            try:
                closer()
            except Exception as exc:  # closing must not raise over a backend already gone
                log.debug("close: %s", exc)

    def _warm_quietly(self) -> None:
        try:
            self._recall.warm_up()
        except Exception as exc:  # a background warm-up must not take the process down; recall loads lazily
            log.warning("warm-up at open failed: %s: %s", type(exc).__name__, exc)

    def _ensure_open(self, operation: str) -> None:
        if getattr(self, "_closed", False):
            raise EngineClosedError(f"{operation}: this Hindsight engine at {str(self.path)!r} is closed")
        opened_by = getattr(self, "_pid", None)
        if opened_by is not None and opened_by != os.getpid():
            raise EngineForkedError(
                f"{operation}: this Hindsight engine at {str(self.path)!r} was opened in process {opened_by} "
                f"and is used in process {os.getpid()}, which inherited it by fork (gunicorn --preload, Celery "
                "prefork, multiprocessing): open one engine per process, after the fork (for example in a "
                "worker's start hook); processes share memory through a deployment (database_url, "
                "chroma_url, redis_url), not through one embedded directory")

    def __enter__(self) -> Hindsight:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Hindsight(path={str(self.path)!r}, embedder={self._ctx.embedder.name!r})"

    # -- async twins -------------------------------------------------------------------------------
    arecord = _twin(record)
    aupsert = _twin(upsert)
    aget = _twin(get)
    aupdate = _twin(update)
    ahistory = _twin(history)
    awarm_up = _twin(warm_up)
    aworking = _twin(working)
    afind = _twin(find)
    aset_starting_memories = _twin(set_starting_memories)
    aapply_starting_memories = _twin(apply_starting_memories)
    arecall = _twin(recall)
    aforget = _twin(forget)
    ademote = _twin(demote)
    areinstate = _twin(reinstate)
    apin = _twin(pin)
    aunpin = _twin(unpin)
    agrant = _twin(grant)
    arevoke = _twin(revoke)
    agrants = _twin(grants)
    aforget_namespace = _twin(forget_namespace)
    aconsolidate = _twin(consolidate)
    aend_session = _twin(end_session)
    await_for_consolidation = _twin(wait_for_consolidation, "await_for_consolidation")
    aadd_procedure = _twin(add_procedure)
    afeedback = _twin(feedback)
    asweep = _twin(sweep)
    arestore = _twin(restore)
    atranscript = _twin(transcript)
    atranscript_keys = _twin(transcript_keys)
    aedit_transcript = _twin(edit_transcript)
    areconcile = _twin(reconcile)
    areembed = _twin(reembed)
    astats = _twin(stats)
    aclose = _twin(close)

    async def arecord_many(
        self,
        events: Iterable[Event | Mapping[str, Any] | str],
        namespace: str,
        *,
        progress: Progress = False,
        on_commit: Callable[[list[Memory]], None] | None = None,
    ) -> list[Memory]:
        """Async twin of :meth:`record_many`. A lazy iterable is read here, not in the worker thread;
        anything else is ``record_many``'s to refuse."""
        lazy = isinstance(events, Iterable) and not isinstance(events, str | bytes | Mapping)
        batch = list(events) if lazy else events
        return await asyncio.to_thread(self.record_many, batch, namespace, progress=progress, on_commit=on_commit)

    async def aexport_namespace(self, namespace: str) -> list[dict[str, Any]]:
        """Async twin of :meth:`export_namespace`; the records as a list."""
        return await asyncio.to_thread(lambda: list(self.export_namespace(namespace)))

    async def aimport_namespace(
        self, records: Iterable[Mapping[str, Any]], *, namespace: str | None = None, progress: Progress = False
    ) -> ImportReport:
        """Async twin of :meth:`import_namespace`; the records are read here, not in the worker thread."""
        batch = list(records)
        return await asyncio.to_thread(self.import_namespace, batch, namespace=namespace, progress=progress)


#: Public methods that stay usable after ``close()``: closing again, and reading the clock.
_OPEN_AFTER_CLOSE = frozenset({"close", "aclose", "now"})


def _requires_open(method: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a public method so a closed engine refuses it with :class:`EngineClosedError` on entry,
    before any service touches a closed backend (Chroma, Redis and the recall pipeline raise their own
    errors, or silently reopen, when used after close)."""
    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def guarded_async(self: Hindsight, *args: Any, **kwargs: Any) -> Any:
            self._ensure_open(method.__name__)
            return await method(self, *args, **kwargs)

        guarded: Callable[..., Any] = guarded_async
    else:

        @functools.wraps(method)
        def guarded_sync(self: Hindsight, *args: Any, **kwargs: Any) -> Any:
            self._ensure_open(method.__name__)
            return method(self, *args, **kwargs)

        guarded = guarded_sync
    guarded.__dict__["_requires_open"] = True
    return guarded


def _guard_public_methods(cls: type) -> None:
    """One mechanism for every public method of the engine, sync and async."""
    for name in dir(cls):
        if name.startswith("_") or name in _OPEN_AFTER_CLOSE:
            continue
        method = inspect.getattr_static(cls, name)
        if inspect.isfunction(method):
            setattr(cls, name, _requires_open(method))


_guard_public_methods(Hindsight)

_shared: Hindsight | None = None
_shared_lock = threading.Lock()


def shared_engine() -> Hindsight:
    """The process-wide embedded engine at the default data directory (``$HINDSIGHT_PATH`` or
    ``./.hindsight``); adapters use it when no engine is passed."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared._closed:
            _shared = Hindsight(default_path())
        return _shared


__all__ = ["ACTIVATION", "VECTOR", "Hindsight", "shared_engine"]
