"""The lifecycle service of the engine: consolidation ("hindsight" replay), procedures, decay and eviction.

``consolidate`` replays unconsolidated episodes through an extractor (rules by default, or an LLM) in
batches, and integrates what comes out (duplicates merged, conflicts superseded, see
:mod:`hindsight_core.lifecycle.integrate`). A background worker does the same off the response path.
``sweep`` moves idle, faded memories to cold and old cold ones to the JSONL archive; ``restore`` brings
them back."""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tenacity import Retrying, retry_if_result, stop_after_delay, wait_fixed
from ulid import ULID

from hindsight_core.activation import math as activation_math
from hindsight_core.clock import aware, to_ts
from hindsight_core.errors import ArchiveError, InvalidInputError, MemoryArchivedError, MemoryNotFoundError
from hindsight_core.lifecycle import archive, standing
from hindsight_core.lifecycle.integrate import Integrator, procedure_content
from hindsight_core.lifecycle.schema import ExtractionContext, ExtractionError, ExtractionResult, Extractor
from hindsight_core.lifecycle.types import ConsolidationReport, RestoreReport, SweepReport
from hindsight_core.lifecycle.worker import ConsolidationWorker
from hindsight_core.progress import Progress, Tracker, track
from hindsight_core.store import demotions, jobs, leases
from hindsight_core.text.entities import extract_entities
from hindsight_core.text.normalize import fingerprint, normalize
from hindsight_core.types import PERSISTENT_LAYERS, PINNED, Activation, Edge, EdgeKind, Kind, Layer, Memory, Status
from hindsight_core.validation import check_id, check_importance, check_namespace, check_session_id, check_text

if TYPE_CHECKING:
    from hindsight_core.context import EngineContext
    from hindsight_core.store.sql import RelationalStore
    from hindsight_core.types import NamespaceStats

log = logging.getLogger("hindsight.lifecycle")

_DAY = 86_400.0


@dataclass(frozen=True)
class ArchivedErasure:
    """An archived memory to erase: the archive file, its namespace, and every record id that goes."""

    path: Path
    namespace: str
    ids: list[str]


class LifecycleService:
    """Consolidation, procedures, decay and eviction over the engine's context."""

    def __init__(
        self, ctx: EngineContext, *, extractor: Extractor | None = None, background_consolidation: bool = True
    ) -> None:
        """``extractor``: the consolidation extractor (default :class:`RuleExtractor`);
        ``background_consolidation=False`` turns the worker off (consolidate on demand only)."""
        self.ctx = ctx
        self.store = ctx.store
        self.config = ctx.config
        self.now = ctx.now
        if extractor is None:
            from hindsight_core.lifecycle.rules import RuleExtractor

            extractor = RuleExtractor()
        if not callable(getattr(extractor, "extract", None)):
            raise TypeError("extractor must have an extract(episodes, context) method (see lifecycle.extractors)")
        configure = getattr(extractor, "configure", None)
        if callable(configure):
            cfg = self.config.lifecycle
            configure(max_retries=cfg.llm_max_retries, calls_per_minute=cfg.llm_calls_per_minute)
        self.extractor: Extractor = extractor
        self._background = bool(background_consolidation)
        # Re-entrant: ``_consolidate`` holds it while it takes the lease, the run itself takes it again.
        self._consolidation_lock = threading.RLock()
        self._lease_owner = leases.new_owner()
        self._since_trigger: dict[tuple[str, str | None], int] = defaultdict(int)
        self._counter_lock = threading.Lock()
        self._worker = ConsolidationWorker(self._run_background, idle_s=self.config.lifecycle.consolidate_idle_s)

    # -- what the engine sequences around other services' writes ------------------------------------
    def recorded(self, namespace: str, memories: list[Memory]) -> None:
        """New episodes are durable and indexed: count them towards their session's consolidation, and
        restart its quiet time (``consolidate_idle_s``)."""
        every = self.config.lifecycle.consolidate_every
        if not self._background:
            return
        due: list[str | None] = []
        with self._counter_lock:
            for m in memories:
                if m.layer != Layer.EPISODIC or m.session_id is None:  # no session, no session trigger
                    continue
                self._worker.touch(namespace, m.session_id)
                if every <= 0:
                    continue
                key = (namespace, m.session_id)
                self._since_trigger[key] += 1
                if self._since_trigger[key] >= every:
                    del self._since_trigger[key]
                    due.append(m.session_id)
        for session in dict.fromkeys(due):
            self._worker.submit(namespace, session, "count")

    def purge(self, namespace: str) -> None:
        """Inside ``forget_namespace``'s unit of work (whose store purge takes the job rows): drop the
        namespace's queued runs and trigger counts."""
        self._worker.discard(namespace)
        with self._counter_lock:
            for key in [k for k in self._since_trigger if k[0] == namespace]:
                del self._since_trigger[key]

    def holds(self, namespace: str) -> bool:
        """Whether the namespace has an archive file (a namespace with no memories is still known then)."""
        return bool(archive.existing(self._archive_root(), namespace))

    def archived_namespaces(self) -> set[str]:
        """The namespaces that have an archive file."""
        return archive.namespaces(self._archive_root())

    def find_archived(self, memory_id: str, namespace: str | None) -> ArchivedErasure | None:
        """What erasing an archived memory takes: its record and those of archived memories distilled
        only from it. The engine erases them from the store's logs and provenance, as ``forget`` does,
        then :meth:`drop_archived` removes the records from the file."""
        root = self._archive_root()
        if namespace is not None:
            paths = archive.existing(root, namespace)
        else:
            paths = sorted(root.glob(f"*{archive.SUFFIX}")) if root.is_dir() else []
        for path in paths:
            try:
                if memory_id.encode() not in path.read_bytes():
                    continue
                records = {m.id: m for m, _, _ in archive.read(path).records}
            except (OSError, InvalidInputError):
                continue
            target = records.get(memory_id)
            if target is None or (namespace is not None and target.namespace != namespace):
                continue
            erased = {memory_id}
            grown = True
            while grown:
                before = len(erased)
                erased |= {m.id for m in records.values() if m.source_ids and set(m.source_ids) <= erased}
                grown = len(erased) > before
            return ArchivedErasure(path, target.namespace, sorted(erased))
        return None

    def drop_archived(self, found: ArchivedErasure) -> None:
        archive.drop(found.path, set(found.ids))

    def after_purge(self, namespace: str) -> None:
        """The erase has committed: a file that cannot be removed is logged, never raised over it."""
        for path in archive.existing(self._archive_root(), namespace):
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:
                log.error("forget_namespace(%r): could not delete the archive %s: %s", namespace, path, exc)

    def extend_stats(self, namespace: str, stats: NamespaceStats) -> None:
        jobs.abandon(self.store, namespace, _lease_name(namespace), to_ts(self.now()))
        found = jobs.counts(self.store, namespace)
        found[jobs.PENDING] += self._worker.queued(namespace)
        stats.consolidation_jobs = found

    def close(self) -> None:
        """Stop the worker before the stores close."""
        self._worker.stop()

    def release_dead_leases(self) -> list[str]:
        """At open: leases whose owner on this host has died (a crash, a SIGKILL) are released, so the
        first ``consolidate`` takes over at once instead of waiting out the lease and answering
        ``busy``; that owner's running job is then abandoned (``failed``)."""
        released = leases.release_dead(self.store)
        if released:
            log.info("released %d lease(s) of processes that are gone: %s", len(released), released)
        return released

    # -- consolidation ---------------------------------------------------------------------------
    def consolidate(
        self, namespace: str, session_id: str | None = None, *, progress: Progress = False
    ) -> ConsolidationReport:
        """Distill the namespace's (or one session's) unconsolidated episodes into semantic and
        procedural memories, now, in this thread. A failed extractor does not raise: the report (and the
        job row) say ``failed`` with the error, and the episodes not integrated stay for a later run.
        ``progress`` (``True`` for a tqdm bar, or a ``(done, total)`` callback) counts episodes."""
        namespace = check_namespace(namespace)
        session = check_session_id(session_id)
        with track(progress, 0, f"consolidate {namespace}", "episode") as tracker:
            return self._consolidate(namespace, session, "manual", tracker)


    def end_session(self, namespace: str, session_id: str) -> bool:
        """The session is over: consolidate it in the background (returns at once). Returns False when
        that session was already queued."""
        namespace = check_namespace(namespace)
        session = check_session_id(session_id)
        if session is None:
            raise InvalidInputError("session_id is required")
        with self._counter_lock:
            self._since_trigger.pop((namespace, session), None)
        return self._worker.submit(namespace, session, "session_end")


    def wait_for_consolidation(self, timeout: float | None = 60.0) -> bool:
        """Block until the background worker has nothing queued or running; False on timeout."""
        return self._worker.wait_idle(timeout)


    def _run_background(self, namespace: str, session_id: str | None, trigger: str) -> None:
        if trigger == "idle":  # the run takes what the session's count stood for: a session that went
            # quiet leaves no counter behind (the process keeps state for active sessions only)
            with self._counter_lock:
                self._since_trigger.pop((namespace, session_id), None)
        report = self._consolidate(namespace, session_id, trigger)
        if report.status == "failed":
            log.warning("consolidation of %s/%s failed: %s", namespace, session_id, report.error)
        elif report.status == "busy":
            log.info("consolidation of %s/%s skipped: %s", namespace, session_id, report.error)

    def _unconsolidated(self, namespace: str, session_id: str | None) -> list[Memory]:
        return jobs.unconsolidated(self.store, namespace, session_id)

    def _consolidate(
        self, namespace: str, session_id: str | None, trigger: str, tracker: Tracker | None = None
    ) -> ConsolidationReport:
        """Run under the namespace's consolidation lease, so that two processes (or engines) never
        distill the same episodes: which episodes are still unconsolidated is read only once the lease
        is ours. A manual call waits (bounded) for another holder, since its caller expects the work
        done; the background worker does not wait (it serves every namespace from one thread) and
        leaves the episodes to the holder's next run or the next trigger."""
        with self._consolidation_lock:
            name = _lease_name(namespace)
            wait = self.config.lifecycle.consolidation_wait_s if trigger == "manual" else 0.0
            if not self._take_lease(name, wait):
                return ConsolidationReport(
                    namespace=namespace, session_id=session_id, trigger=trigger, status="busy",
                    error=f"another process is consolidating namespace {namespace!r}",
                )
            try:
                jobs.abandon(self.store, namespace, name, to_ts(self.now()))
                return self._consolidate_leased(namespace, session_id, trigger, tracker)
            finally:
                leases.release(self.store, name, self._lease_owner)

    def _take_lease(self, name: str, wait_s: float) -> bool:
        """Try for the lease every 0.1 s for up to ``wait_s`` (once when it is 0)."""
        duration = self.config.lifecycle.consolidation_lease_s
        attempt = Retrying(
            retry=retry_if_result(lambda taken: not taken),
            stop=stop_after_delay(wait_s),
            wait=wait_fixed(0.1),
            retry_error_callback=lambda _: False,
        )
        return bool(attempt(lambda: leases.acquire(self.store, name, self._lease_owner, to_ts(self.now()), duration)))

    def _renew_lease(self, namespace: str, report: ConsolidationReport) -> bool:
        """Extend the namespace's lease; when it ran out and another process took the namespace over,
        mark the run failed, since writing on would duplicate that process's work."""
        if leases.renew(
            self.store, _lease_name(namespace), self._lease_owner, to_ts(self.now()),
            self.config.lifecycle.consolidation_lease_s,
        ):
            return True
        report.status = "failed"
        report.error = "the consolidation lease ran out and another process took the namespace over"
        return False

    def _consolidate_leased(
        self, namespace: str, session_id: str | None, trigger: str, tracker: Tracker | None = None
    ) -> ConsolidationReport:
        with self._consolidation_lock:
            report = ConsolidationReport(namespace=namespace, session_id=session_id, trigger=trigger)
            episodes = self._unconsolidated(namespace, session_id)
            if tracker is not None:
                tracker.grow(len(episodes))
            report.job_id = jobs.create(
                self.store, namespace, session_id, trigger, to_ts(self.now()), owner=self._lease_owner
            )
            if not episodes:
                report.status = "empty"
                jobs.finish(
                    self.store,
                    report.job_id,
                    jobs.DONE,
                    to_ts(self.now()),
                    episodes=0,
                    report=report.model_dump(mode="json"),
                )
                return report
            integrator = Integrator(self.ctx, self.extractor.name, namespace)
            size = self.config.lifecycle.batch_episodes
            by_session: dict[str | None, list[Memory]] = defaultdict(list)
            for e in episodes:
                by_session[e.session_id].append(e)
            batches = [group[i : i + size] for group in by_session.values() for i in range(0, len(group), size)]
            # A model-free extractor runs over every batch first so the new memories are embedded in
            # one call; an LLM extractor sees, batch by batch, what the previous batches produced.
            upfront: list[ExtractionResult | Exception] = []
            if not getattr(self.extractor, "uses_llm", True):
                for batch in batches:
                    try:
                        upfront.append(
                            self.extractor.extract(batch, ExtractionContext(namespace, integrator.existing()))
                        )
                    except Exception as exc:
                        upfront.append(exc)
                        break
                integrator.prime([m for r in upfront if isinstance(r, ExtractionResult) for m in r.memories])
            for index, batch in enumerate(batches):
                if not self._renew_lease(namespace, report):  # a slow batch gets a whole lease
                    break
                context = ExtractionContext(namespace=namespace, existing=integrator.existing())
                try:
                    if upfront:
                        outcome = upfront[index]
                        if isinstance(outcome, Exception):
                            raise outcome
                        result = outcome
                    else:
                        result = self.extractor.extract(batch, context)
                except Exception as exc:
                    report.llm_calls += getattr(exc, "llm_calls", 0)
                    report.status = "failed"
                    kind = "" if isinstance(exc, ExtractionError) else f"{type(exc).__name__}: "
                    report.error = f"{kind}{exc}"[:2000]
                    break
                report.llm_calls += result.llm_calls
                if not self._renew_lease(namespace, report):  # lost while extracting: commit nothing
                    break
                report.extracted += len(result.memories)
                now = self.now()
                plan = integrator.integrate(batch, result.memories, now)
                integrator.commit(plan, report.job_id, now)
                report.batches += 1
                report.episodes += len(batch)
                report.created += sum(1 for m in plan.new.values() if m.status == Status.ACTIVE)
                report.created_ids += [m.id for m in plan.new.values()]
                report.merged += plan.merged
                report.superseded += plan.superseded
                report.superseded_ids += plan.superseded_ids
                report.episodes_superseded += plan.episodes_superseded
                report.dropped += plan.dropped
                report.promoted += len(plan.promoted)
                if tracker is not None:
                    tracker.advance(len(batch))
            status = jobs.FAILED if report.status == "failed" else jobs.DONE
            jobs.finish(
                self.store,
                report.job_id,
                status,
                to_ts(self.now()),
                episodes=report.episodes,
                error=report.error,
                report=report.model_dump(mode="json", exclude={"created_ids", "superseded_ids"}),
            )
            return report

    # -- procedures ------------------------------------------------------------------------------
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
        namespace = check_namespace(namespace)
        trigger = check_text(trigger, what="trigger", max_chars=2_000).strip()
        if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence) or not steps:
            raise InvalidInputError("steps must be a non-empty list of str")
        clean = [check_text(s, what=f"steps[{i}]", max_chars=2_000).strip() for i, s in enumerate(steps)]
        level = check_importance(importance)
        cfg = self.config.lifecycle
        start = cfg.procedure_initial_confidence if confidence is None else confidence
        if isinstance(start, bool) or not isinstance(start, (int, float)) or not 0.0 <= start <= 1.0:
            raise InvalidInputError(f"confidence must be a number from 0 to 1, got {confidence!r}")
        content = procedure_content(trigger, clean)
        fp = fingerprint(content)
        now = self.now()
        ts = to_ts(now)
        same_trigger: list[Memory] = []
        for m in self.store.find_memories(namespace, layer=Layer.PROCEDURAL.value, status=Status.ACTIVE.value):
            if m.fingerprint == fp:
                return m
            if normalize(str(m.metadata.get("trigger", ""))) == normalize(trigger):
                same_trigger.append(m)
        act = self.config.activation
        memory = Memory(
            id=str(ULID.from_datetime(now)),
            namespace=namespace,
            layer=Layer.PROCEDURAL,
            kind=Kind.PROCEDURE,
            content=content,
            occurred_at=now,
            created_at=now,
            updated_at=now,
            importance=level,
            activation=activation_math.initial(
                level, ts, initial_log=act.initial_log, importance_weight=act.importance_weight
            ),
            entities=extract_entities(content),
            fingerprint=fp,
            metadata={
                "trigger": trigger,
                "steps": clean,
                "confidence": float(start),
                "successes": 0,
                "failures": 0,
            },
        )
        replaced = [
            m.model_copy(update={"status": Status.SUPERSEDED, "superseded_by": memory.id, "updated_at": now})
            for m in same_trigger
        ]
        with self.ctx.changes() as ch:
            ch.insert([memory])
            ch.update(replaced)
            ch.add_edges([Edge(src=memory.id, dst=m.id, kind=EdgeKind.SUPERSEDES, created_at=now) for m in replaced])
        return memory


    def feedback(self, memory_id: str, success: bool, *, namespace: str | None = None) -> Memory:
        """Report whether following a procedure worked: confidence moves towards 1 or 0; a success also
        reinforces it. Below ``procedure_min_confidence`` it goes cold (recall stops offering it)."""
        if not isinstance(success, bool):
            raise InvalidInputError(f"success must be a bool, got {type(success).__name__}")
        memory_id = check_id(memory_id)
        if namespace is None:
            memory = self.store.get(memory_id)
        else:
            memory = self.store.get_many_in(check_namespace(namespace), [memory_id]).get(memory_id)
        if memory is None:
            raise MemoryNotFoundError(f"no memory {memory_id!r}")
        if memory.kind != Kind.PROCEDURE:
            raise InvalidInputError(f"memory {memory_id!r} is a {memory.kind.value}, not a procedure")
        cfg = self.config.lifecycle
        now = self.now()
        ts = to_ts(now)
        meta = dict(memory.metadata)
        confidence = float(meta.get("confidence", cfg.procedure_initial_confidence))
        rate = cfg.procedure_learning_rate
        confidence = confidence + rate * (1.0 - confidence) if success else confidence - rate * confidence
        meta["confidence"] = round(confidence, 6)
        counter = "successes" if success else "failures"
        meta[counter] = int(meta.get(counter, 0)) + 1
        update: dict[str, Any] = {"metadata": meta, "updated_at": now}
        if success:
            update["activation"] = activation_math.reinforced(
                memory.activation,
                self.config.activation.rate(memory.layer),
                ts,
                self.config.activation.reinforce_weight,
            )
        if memory.status == Status.ACTIVE and confidence < cfg.procedure_min_confidence:
            update["status"] = Status.COLD
        elif memory.status == Status.COLD and confidence >= cfg.procedure_min_confidence:
            update["status"] = Status.ACTIVE
        updated = memory.model_copy(update=update)
        self._write([updated])
        return updated


    # -- forgetting on request ------------------------------------------------------------------
    def demote(
        self, memory_id: str, *, namespace: str | None = None, reason: str | None = None, by: str | None = None
    ) -> Memory:
        """Lower the memory's activation to ``demoted_log_activation`` and note who, when and why, with
        what it had before, in one transaction. Decay alone keeps a memory the user said they no longer
        need as long as it keeps being recalled; a demotion ranks it down now and lets the sweep take it
        once it is idle. A memory already demoted is returned as it is (the first demotion's "before" is
        what ``reinstate`` gives back); one the sweep archived raises :class:`MemoryArchivedError`."""
        memory_id = check_id(memory_id)
        scope = None if namespace is None else check_namespace(namespace)
        note = None if reason is None else check_text(reason, what="reason", max_chars=2_000)
        actor = None if by is None else check_text(by, what="by", max_chars=200)
        ts = to_ts(self.now())
        with self._archived_as_such(memory_id, scope), self.ctx.changes() as ch:
            memory = _in_scope(ch.tx, memory_id, scope)
            if demotions.in_force(ch.tx, memory.id) is not None:
                return memory
            demotions.add(
                ch.tx, memory.id, memory.namespace, at=ts, by=actor, reason=note,
                log_base_before=memory.activation.log_base, ref_time_before=memory.activation.ref_time,
                status_before=memory.status.value,
            )
            lowered = memory.model_copy(update={"activation": activation_math.lowered(
                memory.activation, self.config.activation.rate(memory.layer), ts,
                self.config.lifecycle.demoted_log_activation,
            )})
            ch.update([lowered])
        return lowered

    def reinstate(self, memory_id: str, *, namespace: str | None = None) -> Memory:
        """Undo the memory's demotion: the activation it had before comes back (it decayed meanwhile as
        it would have), and so does ``active`` when the sweep cooled it since. A memory not demoted is
        returned as it is; one the sweep archived raises :class:`MemoryArchivedError`."""
        memory_id = check_id(memory_id)
        scope = None if namespace is None else check_namespace(namespace)
        ts = to_ts(self.now())
        with self._archived_as_such(memory_id, scope), self.ctx.changes() as ch:
            memory = _in_scope(ch.tx, memory_id, scope)
            demotion = demotions.in_force(ch.tx, memory.id)
            if demotion is None:
                return memory
            update: dict[str, Any] = {"activation": Activation(
                log_base=demotion.log_base_before, ref_time=demotion.ref_time_before
            )}
            if memory.status == Status.COLD and demotion.status_before == Status.ACTIVE.value:
                update["status"] = Status.ACTIVE
            restored = memory.model_copy(update=update)
            ch.update([restored])
            demotions.reinstated(ch.tx, demotion.seq, ts)
        return restored

    def pin(self, memory_id: str, *, namespace: str | None = None, pinned: bool = True) -> Memory:
        """Set or clear the memory's ``pinned`` flag (``Memory.pinned``) in one transaction. A pinned
        memory never fades out: the sweep neither cools nor archives it. Pinning a memory the sweep had
        cooled makes it active again (recall shows it again); unpinning lets it fade from its current
        activation. One already in the asked state is returned as it is."""
        memory_id = check_id(memory_id)
        scope = None if namespace is None else check_namespace(namespace)
        with self._archived_as_such(memory_id, scope), self.ctx.changes() as ch:
            memory = _in_scope(ch.tx, memory_id, scope)
            if memory.pinned == pinned and not (pinned and memory.status == Status.COLD):
                return memory
            metadata = {k: v for k, v in memory.metadata.items() if k != PINNED}
            update: dict[str, Any] = {"metadata": {**metadata, PINNED: True} if pinned else metadata}
            if pinned and memory.status == Status.COLD:
                update["status"] = Status.ACTIVE
            changed = memory.model_copy(update=update)
            ch.update([changed])
        return changed

    @contextmanager
    def _archived_as_such(self, memory_id: str, namespace: str | None) -> Iterator[None]:
        """A memory missing from the store because the sweep archived it is past the point where a
        demotion can be undone: say that, rather than "not found", so the caller knows ``restore`` is
        the way back."""
        try:
            yield
        except MemoryNotFoundError:
            if self.find_archived(memory_id, namespace) is not None:
                raise MemoryArchivedError(
                    f"memory {memory_id!r} was archived by the sweep; restore its archive to bring it back"
                ) from None
            raise

    # -- decay and eviction ----------------------------------------------------------------------
    def _archive_root(self) -> Path:
        return Path(self.ctx.path) / self.config.lifecycle.archive_dir

    def archive_path(self, namespace: str) -> Path:
        """Where ``sweep`` archives this namespace's memories (the file may not exist yet): a digest of
        the namespace, or the name an older version gave the file until the next sweep renames it."""
        return archive.locate(self._archive_root(), check_namespace(namespace))

    def _write(self, memories: Sequence[Memory]) -> None:
        if not memories:
            return
        with self.ctx.changes() as ch:
            ch.update(memories)

    def sweep(
        self, now: datetime | None = None, *, namespace: str | None = None, dry_run: bool = False,
        progress: Progress = False,
    ) -> SweepReport:
        """Evict: expired ``state`` memories and memories whose activation fell below
        ``cold_log_activation`` after ``cold_idle_days`` idle become cold (out of the indexes, kept in the
        store); cold memories idle past ``archive_after_days`` go to the namespace's JSONL archive and are
        deleted. Idle time runs from the last reinforcement (``activation.ref_time``). Pinned memories
        (``pin``, key/value items) and current standing facts (an allergy, a condition, a family member:
        ``lifecycle/standing.py``) never fade out.

        ``dry_run=True`` computes the same report (ids, counts, archive files) and writes nothing: it is
        what a real sweep at ``now`` would do. ``progress`` counts the steps (and the namespaces archived)."""
        when = self.now() if now is None else aware(now, what="now")
        ns = None if namespace is None else check_namespace(namespace)
        if not isinstance(dry_run, bool):
            raise InvalidInputError(f"dry_run must be a bool, got {type(dry_run).__name__}")
        with track(progress, 2, "sweep", "step") as tracker:
            return self._sweep(when, ns, dry_run, tracker)

    def _sweep(self, when: datetime, ns: str | None, dry_run: bool, tracker: Tracker) -> SweepReport:
        cfg = self.config.lifecycle
        ts = to_ts(when)
        report = SweepReport(now=when, dry_run=dry_run)
        # 1. states past their TTL
        expired = self.store.expired(ns, ts)
        cooled: list[Memory] = []
        for m in expired:
            cooled.append(
                m.model_copy(
                    update={
                        "status": Status.COLD,
                        "updated_at": when,
                        "metadata": {**m.metadata, "expired_at": when.isoformat()},
                    }
                )
            )
        report.expired = len(expired)
        # 2. faded and idle
        seen = {m.id for m in expired}
        for layer in PERSISTENT_LAYERS:
            rate = self.config.activation.rate(layer)
            if rate <= 0:
                continue
            faded = [m for m in self.store.fading(
                ns, layer.value, rate=rate, at=ts, cold_log=cfg.cold_log_activation, idle_s=cfg.cold_idle_days * _DAY
            ) if m.id not in seen]
            kept = standing.held(self.ctx, faded)
            cooled += [m.model_copy(update={"status": Status.COLD, "updated_at": when})
                       for m in faded if m.id not in kept]
        if not dry_run:
            self._write(cooled)
        report.cooled = len(cooled) - report.expired
        report.cooled_ids = [m.id for m in cooled]
        tracker.advance()
        # 3. cold and idle past the archive age → archive, then delete
        cutoff = ts - cfg.archive_after_days * _DAY
        old = self.store.cold_since(ns, cutoff)
        if dry_run:  # what step 2 would have made cold is cold by now in a real sweep
            old += sorted((m for m in cooled if m.activation.ref_time <= cutoff), key=lambda m: m.id)
        by_namespace: dict[str, list[Memory]] = defaultdict(list)
        for m in old:
            by_namespace[m.namespace].append(m)
        tracker.grow(len(by_namespace))
        tracker.advance()
        for space, memories in by_namespace.items():
            ids = [m.id for m in memories]
            if dry_run:
                report.archives[space] = str(archive.locate(self._archive_root(), space))
                report.archived += len(ids)
                report.archived_ids += ids
                tracker.advance()
                continue
            try:
                path = archive.migrate(self._archive_root(), space)
                archive.append(path, archive.records(self.store, memories, when.isoformat(), "idle"))
            except (ArchiveError, OSError) as exc:
                # the memories stay cold in the store; one namespace's disk trouble stops no other
                log.error("sweep: archiving %d memories of %r failed, they stay cold: %s", len(ids), space, exc)
                report.errors[space] = str(exc)
                report.not_archived += len(ids)
                tracker.advance()
                continue
            with self.ctx.changes() as ch:
                ch.delete(memories)
            report.archives[space] = str(path)
            report.archived += len(ids)
            report.archived_ids += ids
            tracker.advance()
        return report


    def restore(self, archive_path: str | Path) -> RestoreReport:
        """Bring an archive's memories back as active (fresh activation). Memories already in the store
        (restored before, or re-recorded under the same ``source_id``) are skipped. Damaged lines (a torn
        tail) do not stop the whole records around them: they are restored, and the damage reported. A
        file with no record at all raises :class:`InvalidInputError` and restores nothing."""
        contents = archive.read(Path(archive_path) if isinstance(archive_path, str) else archive_path)
        records = contents.records
        report = RestoreReport(path=str(archive_path), records=len(records), damaged=contents.damaged)
        for damage in contents.damaged:
            log.warning("restore: %s:%d is damaged (%s)", archive_path, damage.line, damage.reason)
        if not records:
            return report
        present = set(self.store.get_many(m.id for m, _, _ in records))
        now = self.now()
        ts = to_ts(now)
        act = self.config.activation
        chosen: list[tuple[Memory, str | None]] = []
        edges: list[Edge] = []
        taken: set[tuple[str, str, str]] = set()
        for memory, ext, memory_edges in records:
            if memory.id in present:
                continue
            if ext is not None:
                key = (memory.namespace, memory.layer.value, ext)
                if key in taken or self.store.by_external_ids(memory.namespace, memory.layer.value, [ext]):
                    continue
                taken.add(key)
            expires = memory.expires_at if memory.expires_at is None or memory.expires_at > now else None
            restored = memory.model_copy(
                update={
                    "status": Status.ACTIVE,
                    "updated_at": now,
                    "expires_at": expires,
                    "activation": activation_math.initial(
                        memory.importance, ts, initial_log=act.initial_log, importance_weight=act.importance_weight
                    ),
                    "metadata": {
                        k: v
                        for k, v in {**memory.metadata, "restored_at": now.isoformat()}.items()
                        if k != "expired_at"
                    },
                }
            )
            chosen.append((restored, ext))
            edges += memory_edges
        report.skipped = len(records) - len(chosen)
        if not chosen:
            return report
        with self.ctx.changes() as ch:
            ch.insert([m for m, _ in chosen], [e for _, e in chosen])
            ch.add_edges(edges)
        report.restored = len(chosen)
        return report



def _in_scope(tx: RelationalStore, memory_id: str, namespace: str | None) -> Memory:
    """The stored memory, limited to ``namespace`` when one is named (tenant wall); raises when absent."""
    memory = tx.get(memory_id) if namespace is None else tx.get_many_in(namespace, [memory_id]).get(memory_id)
    if memory is None:
        where = "" if namespace is None else f" in namespace {namespace!r}"
        raise MemoryNotFoundError(f"no memory {memory_id!r}{where}")
    return memory


def _lease_name(namespace: str) -> str:
    return f"consolidate:{namespace}"


__all__ = ["ArchivedErasure", "ConsolidationReport", "LifecycleService", "RestoreReport", "SweepReport"]
