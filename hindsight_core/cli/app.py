"""The ``hindsight`` command line: look at, search, import, export and maintain a memory.

Every command opens the engine the same way the library's default does (``--path`` /
``$HINDSIGHT_PATH``, ``--redis-url`` / ``$HINDSIGHT_REDIS_URL``, ``--chroma-url`` /
``$HINDSIGHT_CHROMA_URL``, ``--database-url`` / ``$HINDSIGHT_DATABASE_URL``; an explicit option wins over
the variable), prints rich tables for people and
``--json`` for scripts, and exits with a code a script can branch on (:data:`EXIT_CODES`)."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from hindsight_core.errors import (
    BackendUnavailableError,
    DataDirectoryInUseError,
    EmbedderMismatchError,
    EngineClosedError,
    HindsightError,
    InvalidInputError,
    MemoryNotFoundError,
    MissingExtraError,
    UnknownNamespaceError,
)

if TYPE_CHECKING:
    from hindsight_core.engine import Hindsight
    from hindsight_core.types import Memory

OK, NOT_FOUND, BAD_INPUT, UNAVAILABLE = 0, 1, 2, 3
#: Exit codes: 0 ok; 1 not found, nothing done or a failed run; 2 bad input; 3 backend unavailable or in use.
EXIT_CODES = {"ok": OK, "not_found": NOT_FOUND, "bad_input": BAD_INPUT, "unavailable": UNAVAILABLE}

app = typer.Typer(
    name="hindsight",
    help="Inspect and maintain a Hindsight memory: list, show, recall, import/export, consolidate, sweep, "
    "share.\n\n"
    "Exit codes: 0 ok, 1 not found / nothing done, 2 bad input, 3 backend unavailable or data directory in use.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

F = TypeVar("F", bound=Callable[..., Any])

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of tables.")]
NsArg = Annotated[str, typer.Argument(help="The namespace (one user, agent or tenant).")]


class _Settings:
    """What the root options chose; read by every command through the click context."""

    def __init__(self, path: Path | None, redis_url: str | None, chroma_url: str | None, progress: bool,
                 engine_kwargs: dict[str, Any], database_url: str | None = None) -> None:
        self.path = path
        self.database_url = database_url
        self.redis_url = redis_url
        self.chroma_url = chroma_url
        self.progress = progress
        self.engine_kwargs = engine_kwargs


def _console(err: bool = False) -> Console:
    # Wide enough that ids and previews are not folded when stdout is a pipe (width 80 otherwise).
    return Console(stderr=err, width=None if sys.stdout.isatty() else 160, soft_wrap=False, highlight=False)


class _Failure(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _code_for(exc: HindsightError) -> int:
    if isinstance(exc, InvalidInputError | EmbedderMismatchError):  # nothing was changed
        return BAD_INPUT
    if isinstance(exc, UnknownNamespaceError | MemoryNotFoundError):
        return NOT_FOUND
    if isinstance(exc, DataDirectoryInUseError | BackendUnavailableError | MissingExtraError | EngineClosedError):
        return UNAVAILABLE
    return NOT_FOUND


def _handled(command: F) -> F:
    """The project's errors become one line on stderr and an exit code, never a traceback."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except _Failure as exc:
            typer.echo(f"error: {exc}", err=True)  # plain: a message is never wrapped or styled
            raise typer.Exit(exc.code) from None
        except HindsightError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(_code_for(exc)) from None

    return run  # type: ignore[return-value]


@app.callback()
def _root(
    ctx: typer.Context,
    path: Annotated[
        Path | None,
        typer.Option("--path", envvar="HINDSIGHT_PATH", help="Embedded data directory [default: ./.hindsight]."),
    ] = None,
    redis_url: Annotated[
        str | None,
        typer.Option("--redis-url", envvar="HINDSIGHT_REDIS_URL", help="Redis URL of the activation index."),
    ] = None,
    chroma_url: Annotated[
        str | None,
        typer.Option("--chroma-url", envvar="HINDSIGHT_CHROMA_URL", help="URL of a Chroma server."),
    ] = None,
    database_url: Annotated[
        str | None,
        typer.Option("--database-url", envvar="HINDSIGHT_DATABASE_URL",
                      help="postgresql:// URL of the relational store [default: SQLite in --path]."),
    ] = None,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="Progress bars on stderr for long operations.")
    ] = True,
    embedder: Annotated[
        str | None,
        typer.Option("--embedder", help="The embedder the data set was built with: a FlagEmbedding model name or "
                     "path (the bge extra) [default: the bundled multilingual-e5-small]."),
    ] = None,
) -> None:
    # ``obj`` (a dict) carries extra engine arguments for embedding callers and tests: a clock, an embedder.
    extra = ctx.obj if isinstance(ctx.obj, dict) else {}
    if embedder is not None:
        extra = {**extra, "embedder": embedder}
    _current.set(_Settings(path, redis_url, chroma_url, progress, dict(extra), database_url))


_current: ContextVar[_Settings] = ContextVar("hindsight_cli_settings")


def _settings() -> _Settings:
    return _current.get()


@contextmanager
def _engine(**overrides: Any) -> Iterator[Hindsight]:
    """The engine for one command; background consolidation is off, since the process ends with the
    command (``consolidate`` runs it in the foreground). ``overrides`` are engine arguments of the command."""
    from hindsight_core.engine import Hindsight, default_path

    s = _settings()
    kwargs: dict[str, Any] = {"background_consolidation": False, **s.engine_kwargs, **overrides}
    hs = Hindsight(s.path or default_path(), redis_url=s.redis_url or None, chroma_url=s.chroma_url or None,
                   database_url=s.database_url or None, **kwargs)
    try:
        yield hs
    finally:
        hs.close()


@contextmanager
def _bar(label: str, enabled: bool) -> Iterator[Callable[[int, int], None] | bool]:
    """A rich progress bar on stderr fed by the API's ``progress=`` callback (nothing when disabled)."""
    if not enabled or not _settings().progress:
        yield False
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=_console(err=True), transient=False,
    ) as progress:
        task = progress.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=max(total, done))

        yield update


def _print_json(value: Any) -> None:
    typer.echo(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def _ts(value: float | datetime | None) -> str:
    if value is None:
        return "-"
    when = value if isinstance(value, datetime) else datetime.fromtimestamp(value).astimezone()
    return when.strftime("%Y-%m-%d %H:%M")


def _preview(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _activation(hs: Hindsight, m: Memory) -> float:
    """``ln A(now)``: 0 is a fresh memory of default importance; the sweep's cold line is negative."""
    return m.activation.log_at(hs.now().timestamp(), hs.config.activation.rate(m.layer))


def _memory_json(hs: Hindsight, m: Memory) -> dict[str, Any]:
    out = m.model_dump(mode="json")
    out["activation_now"] = _activation(hs, m)
    return out


# -- namespaces / ls / show -----------------------------------------------------------------------
@app.command()
@_handled
def namespaces(as_json: JsonOpt = False) -> None:
    """List the namespaces with how many memories each holds, by status."""
    with _engine() as hs:
        stats = hs.stats()
        rows: list[dict[str, Any]] = []
        for ns in hs.namespaces():
            ns_stats = stats.namespaces.get(ns)
            by_status: dict[str, int] = {}
            for layer in ns_stats.layers.values() if ns_stats else []:
                for status, count in layer.by_status.items():
                    by_status[status] = by_status.get(status, 0) + count
            rows.append({"namespace": ns, "memories": sum(by_status.values()), "by_status": by_status})
    if as_json:
        _print_json(rows)
        return
    table = Table("namespace", "memories", "active", "superseded", "cold", title="namespaces")
    for r in rows:
        b = r["by_status"]
        table.add_row(r["namespace"], str(r["memories"]), str(b.get("active", 0)), str(b.get("superseded", 0)),
                      str(b.get("cold", 0)))
    _console().print(table)


@app.command("ls")
@_handled
def ls_(
    namespace: NsArg,
    layer: Annotated[str | None, typer.Option(help="episodic, semantic or procedural.")] = None,
    kind: Annotated[str | None, typer.Option(help="turn, event, fact, preference, state, procedure, summary.")] = None,
    status: Annotated[str | None, typer.Option(help="active, superseded, cold or archived.")] = None,
    session: Annotated[str | None, typer.Option(help="Only this session's memories.")] = None,
    limit: Annotated[int, typer.Option(min=1, help="At most this many (the most recent).")] = 50,
    as_json: JsonOpt = False,
) -> None:
    """List a namespace's memories, newest last: layer, kind, status, activation now, last reinforced."""
    with _engine() as hs:
        found = hs.inspection.latest(namespace, limit=limit, layer=layer, kind=kind, status=status, session_id=session)
        if not found and not hs.holds_namespace(namespace):
            raise UnknownNamespaceError(f"namespace {namespace!r} holds no memories")
        if as_json:
            _print_json([_memory_json(hs, m) for m in found])
            return
        table = Table("id", "layer", "kind", "status", "ln A(now)", "last reinforced", "recalls", "content",
                      title=f"{namespace}: {len(found)} memories")
        for m in found:
            table.add_row(m.id, m.layer.value, m.kind.value, m.status.value, f"{_activation(hs, m):.2f}",
                          _ts(m.activation.ref_time), str(m.access_count), _preview(m.content))
        _console().print(table)


@app.command()
@_handled
def show(
    memory_id: Annotated[str, typer.Argument(help="The memory id (from ls, recall or export).")],
    namespace: Annotated[str | None, typer.Option(help="Refuse an id of another namespace.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """One memory: its fields, its sources, its supersedes chain both ways, its edits and demotions."""
    from hindsight_core.lifecycle.forecast import forecast

    with _engine() as hs:
        m = hs.get(memory_id, namespace=namespace)
        if m is None:
            raise _Failure(NOT_FOUND, f"no memory {memory_id!r}" + (f" in {namespace!r}" if namespace else ""))
        sources = hs.inspection.sources(m)
        chain = hs.history(m.id)
        older = [link.memory for link in chain.supersedes]
        newer = [link.memory for link in chain.superseded_by]
        related = [e for e in hs.inspection.edges(m) if e.kind.value != "supersedes"]
        edits: dict[str, Any] = {
            "created_at": m.created_at.isoformat(), "updated_at": m.updated_at.isoformat(),
            "edited": m.updated_at != m.created_at, "mentions": m.metadata.get("mentions"),
            "recalls": m.access_count,
            "restored_at": m.metadata.get("restored_at"), "expired_at": m.metadata.get("expired_at"),
        }
        changes = [edit.model_dump(mode="json") for edit in chain.edits]
        edits["history"] = changes
        demotions = [d.model_dump(mode="json") for d in chain.demotions]
        outlook = forecast(m, hs.config, held=m.id in hs.inspection.held([m]))
        if as_json:
            _print_json({
                "memory": _memory_json(hs, m), "sources": [_memory_json(hs, s) for s in sources],
                "supersedes": [_memory_json(hs, o) for o in older],
                "superseded_by": [_memory_json(hs, n) for n in newer],
                "edges": [e.model_dump(mode="json") for e in related], "edits": edits,
                "forecast": outlook.model_dump(mode="json"), "demotions": demotions,
            })
            return
        console = _console()
        info = Table.grid(padding=(0, 2))
        info.add_column(style="bold")
        info.add_column()
        for label, value in [
            ("id", m.id), ("namespace", m.namespace), ("layer / kind", f"{m.layer.value} / {m.kind.value}"),
            ("status", m.status.value + (f" (by {m.superseded_by})" if m.superseded_by else "")),
            ("session / role", f"{m.session_id or '-'} / {m.role or '-'}"),
            ("occurred", m.occurred_at.isoformat()), ("created", m.created_at.isoformat()),
            ("updated", m.updated_at.isoformat()), ("importance", str(m.importance)),
            ("ln A(now)", f"{_activation(hs, m):.3f} (reinforced {_ts(m.activation.ref_time)}, "
                          f"{m.access_count} recalls)"),
            ("goes cold", _ts(outlook.cold_at) if outlook.cold_at else "never"),
            ("archived", _ts(outlook.archive_at) if outlook.archive_at else "never"),
            ("source_id", m.source_id or "-"), ("indexed", str(m.indexed)),
            ("entities", ", ".join(m.entities) or "-"),
            ("metadata", json.dumps(m.metadata, ensure_ascii=False) if m.metadata else "-"),
        ]:
            info.add_row(label, value)
        console.print(Panel(m.content, title="memory", expand=False))
        console.print(info)
        for title, group in (("sources", sources), ("supersedes (older)", older), ("superseded by (newer)", newer)):
            if group:
                table = Table("id", "status", "occurred", "content", title=title)
                for s in group:
                    table.add_row(s.id, s.status.value, _ts(s.occurred_at), _preview(s.content, 80))
                console.print(table)
        if changes:
            table = Table("at", "old text", "new text", title="edits (update)")
            for edit in changes:
                table.add_row(edit["at"], _preview(edit["old_content"], 60), _preview(edit["new_content"], 60))
            console.print(table)
        if demotions:
            table = Table("demoted at", "by", "reason", "reinstated at", title="demotions (demote / reinstate)")
            for d in demotions:
                reason = _preview(d["reason"] or "-", 60)
                table.add_row(d["at"], d["by"] or "-", reason, d["reinstated_at"] or "in force")
            console.print(table)
        if related:
            table = Table("kind", "src", "dst", "at", title="edges")
            for e in related:
                table.add_row(e.kind.value, e.src, e.dst, _ts(e.created_at))
            console.print(table)


# -- recall ---------------------------------------------------------------------------------------
@app.command()
@_handled
def recall(
    namespace: NsArg,
    query: Annotated[str, typer.Argument(help="What the agent is about to answer.")],
    session: Annotated[str | None, typer.Option(help="The current session (conversational context).")] = None,
    k: Annotated[int | None, typer.Option(help="At most this many hits [default: config.recall.default_k].")] = None,
    budget: Annotated[
        int | None,
        typer.Option(help="Token budget of the injected text [default: config.recall.default_budget_tokens]."),
    ] = None,
    subtree: Annotated[
        bool, typer.Option(help="Search the namespace and every namespace below it (a user's store items and saved "
                           "facts), as the adapters do; --no-subtree searches the one namespace.")
    ] = True,
    include_cold: Annotated[bool, typer.Option(help="Search cold memories too.")] = False,
    reinforce: Annotated[
        bool, typer.Option(help="Log the recall and reinforce what it injects, as an agent's would.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Recall as an agent would (the namespace's tree, the adapters' k and budget): each hit with its
    per-channel scores and reason, why every other candidate was not injected, then the exact prompt
    text that would be injected. Looking changes nothing unless --reinforce says so."""
    from hindsight_core.recall.verdicts import verdicts

    with _engine() as hs:
        result = hs.recall(query, namespace, session_id=session, k=k, budget_tokens=budget, subtree=subtree,
                           include_cold=include_cold, explain=True, track=reinforce)
        prompt = result.to_prompt()
        found = verdicts(result)
        if as_json:
            data = result.model_dump(mode="json")
            data["prompt"] = prompt
            data["candidates"] = [v.as_dict() for v in found]
            _print_json(data)
            return
        console = _console()
        table = Table("#", "score", "channels", "layer/kind", "namespace", "id", "content", "reason",
                      title=f"recall {namespace!r}{' and below' if subtree else ''}: {query!r}")
        table.columns[5].min_width = 26  # a whole id: what show, forget and demote take
        for rank, hit in enumerate(result.hits, start=1):
            channels = " ".join(f"{name}={value:.2f}" for name, value in hit.channels.items())
            table.add_row(str(rank), f"{hit.score:.3f}", channels,
                          f"{hit.memory.layer.value}/{hit.memory.kind.value}", hit.memory.namespace, hit.memory.id,
                          _preview(hit.memory.content), hit.reason)
        console.print(table)
        if found:
            ids = {v.id for v in found} | {v.other for v in found if v.other}
            known = hs.inspection.memories(None, ids)  # candidates may live anywhere in the tree

            def name(mid: str) -> str:
                m = known.get(mid)
                return f"{mid} {_preview(m.content, 40)!r}" if m is not None else mid

            table = Table("id", "namespace", "content", "why", title="candidates: why each was or was not injected")
            table.columns[0].min_width = 26
            for v in found:
                m = known.get(v.id)
                table.add_row(v.id, m.namespace if m else "-", _preview(m.content, 60) if m else "-",
                              v.words(name))
            console.print(table)
        for c in result.conflicts:
            console.print(
                f"conflict: {_preview(c.superseded.content)!r} superseded by {_preview(c.successor.content)!r}",
                markup=False,
            )
        if result.degraded:
            console.print(f"degraded: {', '.join(result.degraded)} computed from the relational store", markup=False)
        # Printed raw, not in a panel: a panel would wrap lines, and this is the exact injected text.
        console.rule(f"injected prompt ({result.tokens} tokens)")
        typer.echo(prompt or "(nothing relevant: no text would be injected)")


# -- tune -----------------------------------------------------------------------------------------
@app.command()
@_handled
def tune(
    examples: Annotated[Path, typer.Argument(help="JSONL: one {question, answers, namespace?, session_id?} per line; "
                                             "answers are memory ids or source_ids, [] when nothing should be "
                                             "injected.")],
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="The namespace of lines that name none.")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write the tuned configuration here (JSON, a HindsightConfig) "
                                  "when it does better on held-out questions than today's.")
    ] = None,
    k: Annotated[
        int | None, typer.Option(help="Judge what this many hits inject [default: config.recall.default_k].")
    ] = None,
    subtree: Annotated[bool, typer.Option(help="Recall the namespace's tree, as the adapters do.")] = True,
    folds: Annotated[int, typer.Option(min=2, max=20, help="Cross-validation folds.")] = 5,
    as_json: JsonOpt = False,
) -> None:
    """Fit the relevance floor to your own labelled questions: which memories answer each, or that
    nothing should be injected, and which must not be injected (an old value, small talk). Each setting
    is chosen on all folds but one and measured on the held one, so the table shows what the change
    does to questions it was not fitted on. Read-only: recalls are neither logged nor reinforced.
    Refuses fewer than 20 answerable or 10 unanswerable questions."""
    from hindsight_core.recall.tuning import as_dict, read_examples, report_rows
    from hindsight_core.recall.tuning import tune as fit

    try:
        with examples.open(encoding="utf-8") as lines:
            labelled = read_examples(lines, namespace=namespace, source=str(examples))
    except (OSError, UnicodeDecodeError) as exc:
        raise _Failure(BAD_INPUT, f"cannot read {str(examples)!r}: {exc}") from None
    with _engine() as hs, _bar("tune", not as_json) as progress:
        report = fit(hs, labelled, k=k, subtree=subtree, folds=folds,
                     progress=progress if callable(progress) else None)
        tuned = report.config(hs.config)
    written = out is not None and report.improved
    if written:
        assert out is not None
        out.write_text(tuned.model_dump_json(indent=2) + "\n", encoding="utf-8")
    if as_json:
        _print_json({**as_dict(report), "written": str(out) if written else None})
        return
    console = _console()
    table = Table("held-out questions", "today's settings", "tuned",
                  title=f"tune on {report.examples} questions, {report.folds} folds")
    for row in report_rows(report):
        table.add_row(*row)
    console.print(table)
    guarded = report.before.guarded > 0
    curve = Table("floor_anchor_base", "answerable answered", "unanswerable given nothing",
                  *(["guarded given nothing forbidden"] if guarded else []),
                  title="the operating points tried, on every question (a lower bar answers more, lets more in)")
    for bar, m in report.curve:
        mark = " (tuned)" if bar == report.fitted["floor_anchor_base"] else ""
        curve.add_row(f"{bar:g}{mark}", f"{m.answered}/{m.answerable}", f"{m.quiet}/{m.unanswerable}",
                      *([f"{m.clean}/{m.guarded}"] if guarded else []))
    console.print(curve)
    for field, value in report.fitted.items():
        console.print(f"recall.{field}: {report.current[field]:g} -> {value:g}", markup=False)
    if not report.improved:
        console.print("today's settings do as well on held-out questions: nothing to write", markup=False)
    elif written:
        console.print(f"wrote {out} (load it with HindsightConfig.model_validate_json, or "
                      "hindsight worker --config)", markup=False)
    else:
        console.print("--out FILE writes the tuned configuration", markup=False)


# -- stats ----------------------------------------------------------------------------------------
@app.command()
@_handled
def stats(
    namespace: Annotated[str | None, typer.Argument(help="One namespace (all when omitted).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Counts by layer and status, recall health (hit rate, idle memories, coverage), jobs and outbox."""
    with _engine() as hs:
        figures = hs.stats(namespace)
    if as_json:
        _print_json(figures.model_dump(mode="json"))
        return
    console = _console()
    table = Table("namespace", "layer", "active", "superseded", "cold", "indexed", title=f"{figures.total} memories")
    health = Table("namespace", "hit rate", "idle rate", "coverage", "jobs", title="health")

    def pct(value: float | None) -> str:
        return "-" if value is None else f"{value:.0%}"

    for ns, ns_stats in figures.namespaces.items():
        for layer, layer_stats in ns_stats.layers.items():
            b = layer_stats.by_status
            table.add_row(ns, layer, str(b.get("active", 0)), str(b.get("superseded", 0)), str(b.get("cold", 0)),
                          str(layer_stats.indexed))
        jobs = ", ".join(f"{k} {v}" for k, v in ns_stats.consolidation_jobs.items() if v) or "-"
        health.add_row(ns, pct(ns_stats.recall_hit_rate), pct(ns_stats.recall_idle_rate),
                       pct(ns_stats.recall_coverage), jobs)
    console.print(table)
    console.print(health)
    console.print(f"outbox: {figures.outbox_pending} pending, {figures.outbox_parked} parked", markup=False)
    for parked in figures.outbox_errors[:10]:
        console.print(f"  parked {parked.target} {parked.memory_id}: {parked.error}", markup=False)
    if figures.workers:
        running = Table("worker", "state", "passes", "outbox applied", "consolidations", "episodes", "sweeps",
                        "last error", title=f"{len(figures.workers)} workers")
        for w in figures.workers:
            running.add_row(f"{w.host}:{w.pid}", w.state, str(w.passes), str(w.outbox_applied), str(w.consolidations),
                            str(w.episodes_consolidated), str(w.sweeps), w.last_error or "-")
        console.print(running)


# -- import / export ------------------------------------------------------------------------------
#: ``hindsight import``'s default caps: a JSONL line (an event is at most 20,000 characters of content
#: and 64 KB of metadata, so a real line is far shorter) and a LangChain or LlamaIndex file, which is
#: parsed whole and takes several times its size in memory once parsed.
MAX_LINE_MB = 4
MAX_DOCUMENT_MB = 64


@app.command("import")
@_handled
def import_(
    file: Annotated[Path, typer.Argument(help="The file to import ('-' for stdin).", allow_dash=True)],
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Target namespace (an export keeps its own by default).")
    ] = None,
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="auto, export, events (JSONL), langchain or llamaindex.")
    ] = "auto",
    session: Annotated[str | None, typer.Option(help="Session of the imported turns (LangChain history).")] = None,
    max_line_mb: Annotated[
        int, typer.Option(min=1, help="The longest JSONL line read, in MiB; a longer one is refused.")
    ] = MAX_LINE_MB,
    max_document_mb: Annotated[
        int, typer.Option(min=1, help="The largest LangChain or LlamaIndex file read (parsed whole), in MiB.")
    ] = MAX_DOCUMENT_MB,
    as_json: JsonOpt = False,
) -> None:
    """Import JSONL events, LangChain message history JSON, a LlamaIndex SimpleChatStore file, or an
    export. Idempotent: importing the same file again adds nothing. JSONL is read line by line and
    recorded in batches, after every line was checked: bad input imports nothing, whatever its size."""
    from hindsight_core.cli.importers import Limits, open_import

    limits = Limits(line=max_line_mb * 2**20, document=max_document_mb * 2**20)
    try:
        source = open_import(None if str(file) == "-" else file, fmt, limits, session_id=session)
    except OSError as exc:
        raise _Failure(BAD_INPUT, f"cannot read {str(file)!r}: {exc}") from None
    with source:
        if source.format == "export":
            with _engine() as hs, _bar("import", not as_json) as progress:
                report = hs.import_namespace(source.records(), namespace=namespace, progress=progress)
            summary: dict[str, Any] = {"format": "export", **report.model_dump(mode="json", exclude={"skipped_ids"})}
        else:
            if namespace is None:
                raise _Failure(BAD_INPUT, f"importing {source.format} needs --namespace")
            with _engine() as hs, _bar("import", not as_json) as progress:
                counts = _record_events(hs, source.events, namespace, progress)
            summary = {"format": source.format, "namespace": namespace, **counts}
    if as_json:
        _print_json(summary)
    else:
        _console().print(
            f"imported {summary['memories']} memories into {summary['namespace']!r} ({summary['format']}); "
            f"{summary['skipped']} already present", markup=False,
        )


def _record_events(
    hs: Hindsight, events: Callable[[], Iterator[dict[str, Any]]], namespace: str,
    progress: Callable[[int, int], None] | bool,
) -> dict[str, int]:
    """Record an import's events in two passes over them (``events()`` reads them again), so that
    memory is bounded by a batch whatever the file's size and a bad event still imports nothing: the
    first checks every event as ``record_many`` does, and that no two share a ``source_id``; the
    second records them a batch at a time. A crash in the second pass leaves the batches recorded so
    far, which importing the file again completes (every event has its ``source_id``)."""
    from hindsight_core.cli.importers import KeyDigests, batched
    from hindsight_core.progress import track

    size = hs.config.write.batch_size
    keys, total = KeyDigests(), 0
    for batch in batched(events(), size):
        keys.add(hs.check_events(batch, namespace, start=total))
        total += len(batch)
    keys.check()
    new = 0
    with track(progress, total, f"record {namespace}", "event") as bar:
        for batch in batched(events(), size):
            found = hs.find(namespace, source_ids=[e["source_id"] for e in batch])
            known = {(m.layer.value, m.source_id) for m in found}
            new += sum((m.layer.value, m.source_id) not in known for m in hs.record_many(batch, namespace))
            bar.advance(len(batch))
    return {"events": total, "memories": new, "skipped": total - new}


@app.command()
@_handled
def export(
    namespace: NsArg,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")] = None,
) -> None:
    """Export a namespace as JSONL: memories (every layer and status), edges, transcripts, procedures,
    which episodes were consolidated and the grants naming it; hindsight import rebuilds it exactly elsewhere."""
    with _engine() as hs:
        lines = [json.dumps(r, ensure_ascii=False) + "\n" for r in hs.export_namespace(namespace)]
    if output is None:
        sys.stdout.write("".join(lines))
        return
    try:
        tmp = output.with_name(output.name + ".tmp")
        tmp.write_text("".join(lines), encoding="utf-8")
        tmp.replace(output)
    except OSError as exc:
        raise _Failure(BAD_INPUT, f"cannot write {str(output)!r}: {exc}") from None
    _console(err=True).print(f"exported {len(lines) - 1} records of {namespace!r} to {output}", markup=False)


# -- lifecycle ------------------------------------------------------------------------------------
@app.command()
@_handled
def consolidate(
    namespace: Annotated[str | None, typer.Argument(help="One namespace (all when omitted).")] = None,
    session: Annotated[str | None, typer.Option(help="Only this session's episodes.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Distill unconsolidated episodes into facts, preferences and procedures, and show what was
    created and what it superseded. Exit 1 when a run failed, 3 when another process holds it."""
    with _engine() as hs:
        targets = [namespace] if namespace is not None else hs.namespaces()
        reports = []
        for ns in targets:
            with _bar(f"consolidate {ns}", not as_json) as progress:
                reports.append(hs.consolidate(ns, session, progress=progress))
        created = {i: m for r in reports for i, m in hs.inspection.memories(r.namespace, r.created_ids).items()}
        superseded = {
            i: m for r in reports for i, m in hs.inspection.memories(r.namespace, r.superseded_ids).items()
        }
        if as_json:
            _print_json([
                {**r.model_dump(mode="json"),
                 "created_memories": [_memory_json(hs, created[i]) for i in r.created_ids if i in created],
                 "superseded_memories": [_memory_json(hs, superseded[i]) for i in r.superseded_ids if i in superseded]}
                for r in reports
            ])
        else:
            console = _console()
            table = Table("namespace", "status", "episodes", "created", "merged", "superseded", "error",
                          title="consolidation")
            for r in reports:
                table.add_row(r.namespace, r.status, str(r.episodes), str(r.created), str(r.merged),
                              str(r.superseded), r.error or "")
            console.print(table)
            if created:
                new = Table("id", "layer/kind", "content", title="created")
                for m in created.values():
                    new.add_row(m.id, f"{m.layer.value}/{m.kind.value}", _preview(m.content, 80))
                console.print(new)
            if superseded:
                old = Table("old", "content", "replaced by", title="superseded")
                for m in superseded.values():
                    old.add_row(m.id, _preview(m.content, 60), m.superseded_by or "-")
                console.print(old)
    if any(r.status == "busy" for r in reports):
        raise typer.Exit(UNAVAILABLE)
    if any(r.status == "failed" for r in reports):
        raise typer.Exit(NOT_FOUND)


def _parse_when(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise _Failure(BAD_INPUT, f"--now must be an ISO date or datetime, got {value!r}") from None
    return when if when.tzinfo else when.astimezone()


@app.command()
@_handled
def sweep(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would happen; change nothing.")] = False,
    namespace: Annotated[str | None, typer.Option(help="Only this namespace.")] = None,
    now: Annotated[str | None, typer.Option(help="Sweep as of this ISO time (default: now).")] = None,
    upcoming: Annotated[int, typer.Option(min=0, help="With --dry-run: list the next N memories to go cold.")] = 10,
    as_json: JsonOpt = False,
) -> None:
    """Move idle, faded memories to cold and old cold ones to the archive. With --dry-run: what would
    go cold or be archived now, and when the next ones will if nothing recalls them."""
    from hindsight_core.lifecycle.forecast import forecast
    from hindsight_core.types import Status

    when = _parse_when(now)
    with _engine() as hs:
        with _bar("sweep", not as_json) as progress:
            report = hs.sweep(when, namespace=namespace, dry_run=dry_run, progress=progress)
        moved = hs.inspection.memories(namespace, [*report.cooled_ids, *report.archived_ids])
        soon: list[dict[str, Any]] = []
        if dry_run and upcoming:
            due = set(report.cooled_ids)
            scope = [namespace] if namespace is not None else hs.namespaces()
            candidates = [m for ns in scope for m in hs.find(ns, status=Status.ACTIVE) if m.id not in due]
            kept = hs.inspection.held(candidates)
            outlooks = [(forecast(m, hs.config, held=m.id in kept), m) for m in candidates]
            ranked = sorted((o for o in outlooks if o[0].cold_at is not None), key=lambda o: o[0].cold_at)  # type: ignore[arg-type,return-value]
            for f, m in ranked[:upcoming]:
                soon.append({"id": m.id, "namespace": m.namespace, "cold_at": f.cold_at, "archive_at": f.archive_at,
                             "content": m.content})
    if as_json:
        data = report.model_dump(mode="json")
        data["upcoming"] = [{**s, "cold_at": s["cold_at"].isoformat(), "archive_at": s["archive_at"].isoformat()}
                            for s in soon]
        _print_json(data)
        return
    console = _console()
    verb = "would" if dry_run else ""
    console.print(
        f"sweep at {report.now.isoformat()}{' (dry run: nothing changed)' if dry_run else ''}: "
        f"{report.cooled} {verb} cool{'' if dry_run else 'ed'}, {report.expired} expired, "
        f"{report.archived} {verb} archive{'' if dry_run else 'd'}", markup=False,
    )
    for title, ids in (("cold", report.cooled_ids), ("archive", report.archived_ids)):
        shown = [i for i in ids if i in moved]
        if shown:
            table = Table("id", "namespace", "layer", "last reinforced", "content", title=title)
            for i in shown:
                m = moved[i]
                table.add_row(m.id, m.namespace, m.layer.value, _ts(m.activation.ref_time), _preview(m.content))
            console.print(table)
    if soon:
        table = Table("id", "namespace", "goes cold", "archived", "content", title="next to go cold if not recalled")
        for s in soon:
            table.add_row(s["id"], s["namespace"], _ts(s["cold_at"]), _ts(s["archive_at"]), _preview(s["content"]))
        console.print(table)
    for space, error in report.errors.items():
        console.print(f"archive of {space!r} failed, its memories stay cold: {error}", markup=False)
    if report.errors:
        raise typer.Exit(UNAVAILABLE)


@app.command()
@_handled
def reconcile(
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Also compare and probe the indexes.")] = True,
    as_json: JsonOpt = False,
) -> None:
    """Bring the vector and activation indexes in step with the relational store. Exit 3 when an index
    is still unreachable."""
    with _engine() as hs:
        with _bar("reconcile", not as_json) as progress:
            report = hs.reconcile(verify=verify, progress=progress)
        pending = hs.inspection.pending_index_work()
    rebuilt: dict[str, str] = getattr(report, "rebuilt", {})
    data: dict[str, Any] = {
        "applied": report.applied, "failed": report.failed, "parked": report.parked, "errors": report.errors,
        "probed": getattr(report, "probed", None), "rebuilt": rebuilt, "outbox_pending": pending,
    }
    if as_json:
        _print_json(data)
    else:
        _console().print(
            f"reconcile: {report.applied} applied, {report.failed} failed, {report.parked} parked; "
            f"{len(rebuilt)} rebuilt; outbox {pending} pending", markup=False,
        )
        for target, error in report.errors.items():
            _console().print(f"  {target}: {error}", markup=False)
    if report.failed:
        raise typer.Exit(UNAVAILABLE)


@app.command()
@_handled
def reembed(
    namespace: Annotated[str | None, typer.Argument(help="One namespace (all when omitted).")] = None,
    move: Annotated[bool, typer.Option(
        "--move", help="The data set was built with another embedder: move all of it to --embedder.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Recompute every indexed memory's vector with the current embedder and re-index it."""
    if move and namespace is not None:
        raise _Failure(BAD_INPUT, "--move moves the whole data set: name no namespace")
    with _engine(reembed=move) as hs:
        if move:
            count = hs.inspection.indexed_count()  # moved while the engine opened
        else:
            with _bar("re-embed", not as_json) as progress:
                count = hs.reembed(namespace, progress=progress)
        model = hs.embedder.name
    if as_json:
        _print_json({"reembedded": count, "embedder": model})
    elif move:
        _console().print(f"the data set is on {model}: {count} indexed memories", markup=False)
    else:
        _console().print(f"re-embedded {count} memories with {model}", markup=False)


@app.command()
@_handled
def forget(
    namespace: Annotated[str | None, typer.Argument(help="Erase this whole namespace.")] = None,
    memory_id: Annotated[str | None, typer.Option("--id", help="Erase one memory (and what only it supports).")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Erase a namespace, or one memory with --id (NAMESPACE then limits the id to it). Asks for
    confirmation unless --yes. Exit 1 when there was nothing to erase."""
    if namespace is None and memory_id is None:
        raise _Failure(BAD_INPUT, "name a NAMESPACE to erase, or --id ID")
    with _engine() as hs:
        if memory_id is not None:
            m = hs.get(memory_id, namespace=namespace)
            if m is None:
                raise _Failure(NOT_FOUND, f"no memory {memory_id!r}" + (f" in {namespace!r}" if namespace else ""))
            what = f"memory {m.id} of {m.namespace!r} ({_preview(m.content, 40)!r})"
        else:
            assert namespace is not None
            if not hs.holds_namespace(namespace):
                raise _Failure(NOT_FOUND, f"namespace {namespace!r} holds no memories")
            what = f"namespace {namespace!r} and everything in it (and in the namespaces below it, {namespace}/…)"
        if not yes and not typer.confirm(f"Erase {what}? This cannot be undone", default=False, err=True):
            raise _Failure(NOT_FOUND, "nothing erased")
        if memory_id is not None:
            erased = 1 if hs.forget(memory_id, namespace=namespace) else 0
        else:
            assert namespace is not None
            erased = hs.forget_namespace(namespace)
    if as_json:
        _print_json({"erased": erased})
    else:
        _console().print(f"erased {erased} memories", markup=False)
    if not erased and memory_id is not None:
        raise typer.Exit(NOT_FOUND)


# -- shared layers --------------------------------------------------------------------------------
SharedArg = Annotated[str, typer.Argument(help="The shared namespace (kb:travel, org:acme/shared).")]
GranteeOpt = Annotated[
    str, typer.Option("--to", help="The grantee: recalls in this namespace and below it read the shared one.")
]


@app.command()
@_handled
def grant(
    namespace: SharedArg, to: GranteeOpt,
    write: Annotated[bool, typer.Option(
        "--write", help="Also let the grantee's consolidation promote general facts into the namespace.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Share a namespace's semantic and procedural memories with a grantee. Its recalls, and those of
    the namespaces below it, search them beside their own from the next recall on: what was learned,
    never the conversation. --write also lets the grantee's consolidation promote the facts an LLM
    extractor marks general into it. Granting again keeps the first grant's time and sets --write as
    given. Exit 2 when the two are one subtree (a namespace reads its own subtree without a grant)."""
    with _engine() as hs:
        before = {g.grantee for g in hs.grants(namespace) if g.namespace == namespace}
        made = hs.grant(namespace, to=to, write=write)
    new = made.grantee not in before
    if as_json:
        _print_json({**made.model_dump(mode="json"), "new": new})
    elif new:
        _console().print(f"granted {made.namespace!r} to {made.grantee!r}: recalls in {made.grantee!r} and below "
                         f"it search its semantic and procedural memories"
                         + (", and its consolidation promotes general facts into it" if made.write else ""),
                         markup=False)
    else:
        _console().print(f"{made.namespace!r} was already granted to {made.grantee!r} "
                         f"(since {_ts(made.granted_at)}; write: {'yes' if made.write else 'no'})", markup=False)


@app.command()
@_handled
def revoke(namespace: SharedArg, to: GranteeOpt, as_json: JsonOpt = False) -> None:
    """Withdraw a grant, from the next recall on in every process. The shared namespace's memories stay
    where they are; the grantee no longer reads them. Exit 1 when there was no such grant."""
    with _engine() as hs:
        revoked = hs.revoke(namespace, to=to)
    if as_json:
        _print_json({"namespace": namespace, "grantee": to, "revoked": revoked})
    elif revoked:
        _console().print(f"revoked {namespace!r} from {to!r}", markup=False)
    else:
        _console().print(f"nothing revoked: {namespace!r} was not granted to {to!r}", markup=False)
    if not revoked:
        raise typer.Exit(NOT_FOUND)


@app.command()
@_handled
def grants(
    namespace: Annotated[
        str | None, typer.Argument(help="Only the grants naming it, as the shared namespace or as the grantee.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """List the grants: which namespace is shared with which grantee, and since when. A namespace below
    a grantee (agent:planner/user:7) also reads what its root (agent:planner) was granted."""
    with _engine() as hs:
        found = hs.grants(namespace)
    if as_json:
        _print_json([g.model_dump(mode="json") for g in found])
        return
    if not found:
        _console().print("no grants" + (f" naming {namespace!r}" if namespace is not None else ""), markup=False)
        return
    title = f"grants naming {namespace!r}" if namespace is not None else "grants"
    table = Table("shared namespace", "grantee", "granted", "write", title=title)
    for g in found:
        table.add_row(g.namespace, g.grantee, _ts(g.granted_at), "yes" if g.write else "no")
    _console().print(table)


# -- ui -------------------------------------------------------------------------------------------
@app.command()
@_handled
def ui(
    host: Annotated[str, typer.Option(help="Interface to serve on (local only by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8765,
    writable: Annotated[bool, typer.Option(help="Allow edits (forget, consolidate) from the browser.")] = False,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the page in a browser.")] = False,
) -> None:
    """Serve the memory inspector in the browser (read-only unless --writable)."""
    from hindsight_core.ui import serve  # type: ignore[import-not-found,unused-ignore]

    with _engine() as hs:
        serve(hs, host=host, port=port, writable=writable, open_browser=open_browser)


@app.command()
@_handled
def worker(
    interval: Annotated[float, typer.Option(min=0.05, help="Seconds between passes.")] = 2.0,
    min_episodes: Annotated[
        int | None,
        typer.Option(min=1, help="Consolidate a namespace once this many episodes wait "
                     "[default: lifecycle.consolidate_every]."),
    ] = None,
    max_wait: Annotated[
        float, typer.Option(min=0.0, help="... or once its oldest unconsolidated episode is this many seconds old.")
    ] = 300.0,
    sweep_interval: Annotated[
        float, typer.Option(min=1.0, help="Seconds between sweeps, across all workers.")
    ] = 3600.0,
    lease: Annotated[
        float | None, typer.Option(min=0.5, help="Consolidation lease in seconds [default: from the config].")
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="A HindsightConfig as JSON (docs/configuration.md).")
    ] = None,
    extractor: Annotated[
        str | None, typer.Option(help="module:attribute of an extractor or its factory [default: the rules].")
    ] = None,
    once: Annotated[bool, typer.Option("--once", help="One pass, then exit (cron, tests).")] = False,
    log_level: Annotated[str, typer.Option(help="DEBUG, INFO, WARNING.")] = "INFO",
) -> None:
    """Run the background work of a deployment: drain the outbox, consolidate, sweep; until SIGTERM."""
    from hindsight_core.cli import worker as deployment

    overrides: dict[str, Any] = {"config": deployment.load_config(config, lease)}
    if extractor is not None:
        overrides["extractor"] = deployment.load_extractor(extractor)
    with _engine(**overrides) as hs:
        deployment.serve(hs, interval_s=interval, min_episodes=min_episodes, max_wait_s=max_wait,
                         sweep_interval_s=sweep_interval, once=once, log_level=log_level)




def main() -> None:
    app()


__all__ = ["EXIT_CODES", "app", "main"]
