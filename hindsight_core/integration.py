"""What framework adapters need from the engine beyond :class:`hindsight_core.Hindsight` itself.

The LangChain and LlamaIndex adapters import nothing from ``hindsight_core`` but the package and this
module (``tests/test_adapter_boundary.py`` enforces it). So the engine's internals can be reorganised
without touching an adapter, and every rule the two frameworks must share lives here once:

* **which engine** an adapter talks to (:func:`resolve_engine`), including an adapter rebuilt from JSON;
* **input checks** that raise :class:`InvalidInputError` before anything changes (re-exported);
* **the namespace** an adapter writes to: required, never a silent ``"default"``
  (:func:`require_namespace`), templated per call (:func:`fill_namespace`), a user's root
  (:func:`user_namespace`) whose subtree holds everything of that user;
* **the query** recall gets from an over-long chat turn (:func:`query_text`: the tail);
* **shared layers**: every adapter entry point that recalls takes ``shared: bool = True`` and passes it
  to ``recall`` (:func:`check_shared`), so a grant (``Hindsight.grant``) reaches the adapters as it
  reaches ``recall``, and nothing else: there is no read of another namespace but recall's own;
* **what a hit looks like** outside the engine (:func:`hit_metadata`, with ``shared_from``: the shared
  namespace a hit came from) and in a prompt (:func:`render_lines`, :func:`render_prompt`: a shared hit's
  line says ``shared from <namespace>``);
* **the tool names and descriptions** agents see, and what the tools answer: recall with each memory's
  id (:func:`recall_reply`), so the agent can name one to ``forget_memory`` (:func:`forget_memory`); a
  shared memory is read-only there and shows no id;
* **the session log**: an exact transcript per ``(namespace, session_id)`` whose entries are
  ``{"message": <framework dump>, "memory_id": <episode id or None>}`` (:class:`SessionLog`).

Heavy modules (the engine, recall, lifecycle) load only when a function needs them."""

from __future__ import annotations

import asyncio
import string
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hindsight_core.errors import InvalidInputError, MemoryNotFoundError, MissingExtraError
from hindsight_core.namespaces import SEPARATOR, label_safe, within
from hindsight_core.optional import require
from hindsight_core.starting_template import StartingMemories, template_of
from hindsight_core.text.messages import (
    is_langchain_message,
    is_llamaindex_message,
    langchain_role_text,
    llamaindex_role_text,
)
from hindsight_core.types import PINNED
from hindsight_core.validation import (
    MAX_QUERY_CHARS,
    check_id,
    check_metadata,
    check_namespace,
    check_session_id,
    check_text,
    check_transcript_key,
)

if TYPE_CHECKING:
    from hindsight_core.engine import Hindsight
    from hindsight_core.lifecycle.schema import ExtractorReply
    from hindsight_core.recall.types import RecallHit, RecallResult

# -- the engine ------------------------------------------------------------------------------------

_live: weakref.WeakValueDictionary[str, Hindsight] = weakref.WeakValueDictionary()
_live_lock = threading.Lock()


def _key(path: str | Path) -> str:
    return str(Path(path).expanduser().resolve())


def engine_ref(engine: Hindsight) -> str:
    """Remember a live engine under its data directory and return that directory: what a serialised
    adapter stores instead of the engine (a live object with open files cannot be JSON)."""
    key = _key(engine.path)
    with _live_lock:
        _live[key] = engine
    return key


def resolve_engine(engine: Hindsight | None = None, engine_path: str | Path | None = None) -> Hindsight:
    """The engine an adapter uses: the one given; else the live engine of ``engine_path`` in this
    process (an adapter rebuilt from JSON), else that directory opened afresh; else the process-wide
    shared engine (``$HINDSIGHT_PATH`` or ``./.hindsight``), so ``HindsightMemory(...)`` just works.

    One resolver for every adapter of both frameworks, so "which data does this write to" has one
    answer. A non-engine raises ``TypeError`` here instead of an ``AttributeError`` on first use."""
    from hindsight_core.engine import Hindsight, default_path, shared_engine

    if engine is not None:
        if not isinstance(engine, Hindsight):
            raise TypeError(f"engine must be a hindsight_core.Hindsight, got {type(engine).__name__}")
        engine_ref(engine)
        return engine
    if engine_path is not None:
        key = _key(engine_path)
        with _live_lock:
            live = _live.get(key)
        if live is not None and not getattr(live, "_closed", False):
            return live
        if key != _key(default_path()):
            opened = Hindsight(engine_path)
            engine_ref(opened)
            return opened
    shared = shared_engine()
    engine_ref(shared)
    return shared


# -- namespaces ------------------------------------------------------------------------------------

#: A namespace template: ``"user:{user_id}"``, or LangMem-style labels ``("memories", "{user_id}")``
#: (joined with ``/``: ``"memories/alice"``).
NamespaceTemplate = str | Sequence[str]


def starting_template(value: object) -> StartingMemories | None:
    """An adapter's ``starting_memories=`` checked as ``Hindsight(starting_memories=...)`` checks it
    (``None`` stays ``None``); malformed input raises :class:`InvalidInputError` at construction."""
    return None if value is None else template_of(value)


def start_user(engine: Hindsight, namespace: str, template: StartingMemories | None) -> None:
    """Give the user's root its starting memories before an adapter's first read or write there (a no-op
    once the root is decided, by this adapter, the engine's own template or another process)."""
    if template is not None:
        engine.apply_starting_memories(namespace, template)


def require_namespace(namespace: object, *, who: str) -> str:
    """A checked namespace; a missing one is an error, never a silent shared ``"default"``, because
    every user of an adapter built without one would read and write the same memories."""
    if namespace is None:
        raise InvalidInputError(
            f"{who} needs namespace=...: whose memory is this? Use one namespace per user or tenant, "
            "e.g. namespace='user:42' (templates such as 'user:{user_id}' are filled per call where the "
            "adapter supports them)"
        )
    return check_namespace(namespace)


def template_fields(template: NamespaceTemplate) -> list[str]:
    """The ``{field}`` names a namespace template needs (``[]`` for a fixed namespace)."""
    labels = [template] if isinstance(template, str) else list(template)
    fields: list[str] = []
    for label in labels:
        if not isinstance(label, str):
            raise InvalidInputError(f"namespace labels must be str, got {type(label).__name__}")
        for _, field, spec, conversion in string.Formatter().parse(label):
            if field is None:
                continue
            if not field.isidentifier() or spec or conversion:
                raise InvalidInputError(f"namespace template {label!r}: use plain {{name}} fields")
            fields.append(field)
    return fields


def fill_namespace(template: NamespaceTemplate, values: Mapping[str, Any] | None, *, who: str) -> str:
    """The namespace of one call: the template's ``{field}``s filled from ``values`` (a run's
    ``configurable`` or context), then checked like any namespace. A missing or empty value raises
    with the field's name, because guessing a user would break the wall between users."""
    fields = template_fields(template)
    values = values or {}
    filled: dict[str, str] = {}
    for field in fields:
        value = values.get(field)
        if value is None or (isinstance(value, str) and not value.strip()):
            raise InvalidInputError(
                f"{who}: the namespace template {template!r} needs {field!r}; pass it in the run's config "
                f"(config={{'configurable': {{'{field}': ...}}}}) or context"
            )
        filled[field] = _label_value(str(value), field, who)
    labels = [template] if isinstance(template, str) else list(template)
    if not labels:
        raise InvalidInputError(f"{who}: the namespace template is empty")
    return check_namespace("/".join(label.format(**filled) for label in labels))


class NamespaceScope:
    """The namespace of an adapter's tool: fixed when built (checked at once), or a template whose
    fields each call fills from its run (the framework's config or context, read by the adapter)."""

    def __init__(self, template: NamespaceTemplate | None, who: str) -> None:
        if template is None:
            require_namespace(None, who=who)
        assert template is not None
        self.template = template
        self.who = who
        self.fields = template_fields(template)
        self.fixed: str | None = None if self.fields else fill_namespace(template, {}, who=who)

    def fill(self, values: Mapping[str, Any] | None) -> str:
        return self.fixed if self.fixed is not None else fill_namespace(self.template, values, who=self.who)


def _label_value(value: str, field: str, who: str) -> str:
    if not label_safe(value):
        raise InvalidInputError(
            f"{who}: {field}={value!r} contains {SEPARATOR!r}, which would name a namespace inside another "
            "one (a user id 'ana/x' would read and write under user 'ana')"
        )
    return value


def user_namespace(prefix: str, user: object, *, who: str) -> str:
    """A user's root namespace, ``prefix + user id`` (``user:ana``): everything of the user lives in it
    or below it (``user:ana/store:memories``), so recall over its subtree and ``forget_namespace`` of
    it cover the user whole. An id containing the separator is refused: it would be someone's child."""
    return check_namespace(f"{prefix}{_label_value(str(user), 'user id', who)}")


# -- queries ---------------------------------------------------------------------------------------

# Recall refuses queries longer than MAX_QUERY_CHARS (``InvalidInputError``). Adapters cut a chat turn
# instead, because a turn a plain chat memory accepts must not fail just because long-term memory is
# attached.


def query_text(text: str) -> str:
    """The part of a (possibly long) turn recall searches for: its **tail**. A long message is usually
    pasted material followed by the ask ("<document> ... what did I say about X?"), and a multi-message
    query is oldest-first, so the end is what the user is asking now."""
    text = text.strip()
    return text[-MAX_QUERY_CHARS:].lstrip() if len(text) > MAX_QUERY_CHARS else text


# -- shared layers ---------------------------------------------------------------------------------


def check_shared(shared: object, *, who: str) -> bool:
    """An adapter's ``shared=`` checked when it is built (as ``recall`` checks it on every call), so a
    wrong value fails where it was written, not at the first turn. ``True`` (the default, as
    ``Hindsight.recall``): recall searches the semantic and procedural memories of the namespaces granted
    to the adapter's namespace or its root beside its own; ``False`` leaves them out."""
    if not isinstance(shared, bool):
        raise InvalidInputError(f"{who}: shared must be a bool, got {type(shared).__name__}")
    return shared


def shared_from(hit: RecallHit, namespace: str) -> str | None:
    """The shared namespace a hit of a recall in ``namespace`` came from, or ``None`` for the recall's own.

    A hit is the recall's own when its memory lies in ``namespace``'s subtree (a subtree recall reads
    its children as its own); any other namespace recall searched was granted to it (``sharing.py``):
    recall reads nothing else."""
    return None if within(hit.memory.namespace, namespace) else hit.memory.namespace


# -- hits ------------------------------------------------------------------------------------------


def hit_metadata(hit: RecallHit, namespace: str) -> dict[str, Any]:
    """A recalled memory's identity, provenance and rank, flat and JSON-safe: the metadata of a
    LangChain ``Document`` and of a LlamaIndex node alike (one shape, so code and traces port).
    ``namespace`` is the recall's (``RecallResult.namespace``): ``shared_from`` names the shared
    namespace a hit came from by grant (``None`` for the recall's own), as its prompt line says."""
    m = hit.memory
    return {
        "memory_id": m.id,
        "namespace": m.namespace,
        "shared_from": shared_from(hit, namespace),
        "session_id": m.session_id,
        "layer": m.layer.value,
        "kind": m.kind.value,
        "role": m.role,
        "occurred_at": m.occurred_at.isoformat(),
        "importance": m.importance,
        "status": m.status.value,
        "source_ids": list(m.source_ids),
        "source_id": m.source_id,
        "entities": list(m.entities),
        "score": hit.score,
        "channels": dict(hit.channels),
        "reason": hit.reason,
        "sources": [s.content for s in hit.sources],
        "metadata": dict(m.metadata),
    }


#: Keys of :func:`hit_metadata` an LLM does not need next to the memory text.
HIT_METADATA_KEYS = (
    "memory_id",
    "namespace",
    "shared_from",
    "session_id",
    "layer",
    "kind",
    "role",
    "occurred_at",
    "importance",
    "status",
    "source_ids",
    "source_id",
    "entities",
    "score",
    "channels",
    "reason",
    "sources",
    "metadata",
)


def render_lines(result: RecallResult) -> list[str]:
    """One prompt line (with cited excerpts) per hit of ``result``, most relevant first: the line recall
    rendered, which says ``shared from <namespace>`` for a shared hit (``RecallResult.line``)."""
    return [result.line(hit) for hit in result.hits]


def render_prompt(lines: Sequence[str]) -> str:
    """The injected block: the engine's header and the quoted lines; ``""`` for none."""
    from hindsight_core.recall.types import render_prompt as _render

    return _render(lines)


def without_known(result: RecallResult, known_ids: set[str], known_texts: set[str] | None = None) -> RecallResult:
    """Drop hits the prompt already shows verbatim: turns in the window (by id or text), and distilled
    memories whose every source is in the window. Recall adds what the window lacks."""
    texts = known_texts or set()
    kept = []
    for hit in result.hits:
        m = hit.memory
        if m.id in known_ids or m.content.strip() in texts:
            continue
        episodes = [s for s in m.source_ids if s]
        if m.layer.value != "episodic" and episodes and all(s in known_ids for s in episodes):
            continue
        kept.append(hit)
    if len(kept) == len(result.hits):
        return result
    return result.model_copy(update={"hits": kept})


# -- tools -----------------------------------------------------------------------------------------

#: One set of tool names in both frameworks, so prompts and traces written for one work in the other.
RECALL_TOOL_NAME = "recall_memory"
SAVE_TOOL_NAME = "save_memory"
FORGET_TOOL_NAME = "forget_memory"
RECALL_TOOL_DESCRIPTION = (
    "Search long-term memory about the user (facts, preferences, earlier conversations). "
    "Input: what you want to know, as a short question. Returns the relevant memories, each with its id "
    "(a memory shared from another namespace is read-only and has none), or says none matched."
)
SAVE_TOOL_DESCRIPTION = (
    "Save one thing worth remembering about the user for future conversations (a fact, preference, "
    "decision or plan), as a short self-contained sentence. importance: 1 (trivia) to 5 (safety-critical, "
    "e.g. allergies)."
)
FORGET_TOOL_DESCRIPTION = (
    "Forget a memory the user no longer wants kept or that is wrong. memory_id: the id recall_memory showed "
    "for it. erase: false (the default) demotes it, so it ranks low, fades and can still be reinstated; "
    "true deletes it for good (only when the user asks for that)."
)
NOTHING_FOUND = "No relevant memories."


def saved_reply(memory_id: str) -> str:
    return f"Saved memory {memory_id}."


def recall_reply(result: RecallResult) -> str:
    """What the recall tool answers: the injected block with each memory's id at the end of its line.
    Without the id an agent asked to forget something has nothing to name; at the end, the line still
    reads as the memory first. A shared memory (its line says ``shared from <namespace>``) is marked
    read-only instead: a grant lends it to be read, and ``forget_memory`` acts only in the tool's own
    subtree, so an id would only invite a call that cannot succeed."""
    if not result.hits:
        return NOTHING_FOUND
    lines = render_lines(result)
    return render_prompt([
        f"{line} (read-only)" if shared_from(hit, result.namespace) else f"{line} (id: {hit.memory.id})"
        for hit, line in zip(result.hits, lines, strict=True)
    ])


def forget_memory(engine: Hindsight, memory_id: object, namespace: str, *, erase: object, by: str) -> str:
    """What the forget tool does and answers. The memory must lie in the tool's namespace or below it
    (recall searched that subtree); any other id, malformed or another tenant's, gets the same "not
    found" as an unknown one and is left alone, so a call can neither touch nor detect another tenant's
    memory. A memory of a namespace shared with the tool's by grant is outside that subtree too: a grant
    lends memories to be read, never to be demoted or erased by the grantee (``sharing.py``).
    ``erase=False`` demotes (reversible, noted ``by`` the tool), ``True`` erases."""
    if not isinstance(erase, bool):
        raise InvalidInputError(f"erase must be a bool, got {type(erase).__name__}")
    try:
        wanted = check_id(memory_id)
    except InvalidInputError:
        return _not_found(memory_id)
    memory = engine.get(wanted)
    if memory is None and erase and engine.forget(wanted, namespace=namespace):
        return f"Erased memory {wanted}."  # an archived memory of the namespace itself
    if memory is None or not within(memory.namespace, namespace):
        return _not_found(wanted)
    if erase:
        if not engine.forget(memory.id, namespace=memory.namespace):
            return _not_found(wanted)
        return f"Erased memory {memory.id}."
    try:
        engine.demote(memory.id, namespace=memory.namespace, by=by)
    except MemoryNotFoundError:  # erased or archived meanwhile
        return _not_found(wanted)
    return f"Demoted memory {memory.id}: it now ranks low and fades; it can be reinstated."


async def aforget_memory(engine: Hindsight, memory_id: object, namespace: str, *, erase: object, by: str) -> str:
    """:func:`forget_memory` in a worker thread, as the engine's async twins run."""
    return await asyncio.to_thread(forget_memory, engine, memory_id, namespace, erase=erase, by=by)


def _not_found(memory_id: object) -> str:
    # the caller's text goes back into the agent's context: a bounded excerpt, not all of it
    return f"No memory {str(memory_id)[:100]!r} found."


# -- session logs ----------------------------------------------------------------------------------


def logged_message(message: Any) -> tuple[str, str]:
    """``(role, text)`` of a session-log message in either framework's shape, so that one conversation
    id can be read by LangChain and LlamaIndex alike (the README invites it): LangChain's
    ``message_to_dict`` (``{"type": "human", "data": {"content": ...}}``) or LlamaIndex's ``ChatMessage``
    dump (``{"role": "user", "blocks": [{"block_type": "text", "text": ...}]}``). Roles are the shared
    ones (``user``, ``assistant``, ``system``, ``tool``, ``function``, or a chat message's own; the
    reader is ``hindsight import``'s, ``hindsight_core.text.messages``). Anything else raises
    ``InvalidInputError`` naming what it found."""
    if is_langchain_message(message):
        return langchain_role_text(message, "a logged LangChain message")
    if is_llamaindex_message(message):
        return llamaindex_role_text(message, "a logged LlamaIndex message")
    found = sorted(message) if isinstance(message, dict) else type(message).__name__
    raise InvalidInputError(f"a session log message in neither LangChain's nor LlamaIndex's shape: {found}")


def log_message(entry: Any) -> Any:
    """The message of a session-log entry (``{"message": ..., "memory_id": ...}``)."""
    if not isinstance(entry, dict) or "message" not in entry:
        found = sorted(entry) if isinstance(entry, dict) else type(entry).__name__
        raise InvalidInputError(f"a session log entry without a message: {found}")
    return entry["message"]


class LatestRecalls:
    """The latest recall per namespace, for an adapter object shared by concurrent calls (one chain or
    middleware serving many users): ``last_recall`` is whichever call ran last, ``for_namespace(ns)`` is
    that user's own. Keeps the ``kept`` most recently recalled namespaces, so a long-running server does
    not grow with its users."""

    def __init__(self, kept: int = 1024) -> None:
        self._kept = kept
        self._by_namespace: OrderedDict[str, RecallResult] = OrderedDict()
        self._lock = threading.Lock()
        self.latest: RecallResult | None = None

    def put(self, result: RecallResult) -> None:
        with self._lock:
            self.latest = result
            self._by_namespace.pop(result.namespace, None)
            self._by_namespace[result.namespace] = result
            while len(self._by_namespace) > self._kept:
                self._by_namespace.popitem(last=False)

    def for_namespace(self, namespace: str) -> RecallResult | None:
        with self._lock:
            return self._by_namespace.get(check_namespace(namespace))


class SessionLog:
    """The exact, ordered message log of one session: an engine transcript for ``(namespace, key)``.

    Each entry is ``{"message": <the framework's own dump>, "memory_id": <episode id or None>}``: the
    message for replay (tool calls and results included), the id of the episode recorded for it (when
    it was recorded) so recall can leave out what the window already shows. Both frameworks' chat
    histories and stores use this one shape, and each reads the other's messages by role and text
    (:func:`logged_message`), so a log written by one reads in the other and may hold both. ``clear()``
    deletes the log (the episodes stay: forgetting is explicit); the engine's ``forget_namespace``
    deletes both."""

    def __init__(self, engine: Hindsight, namespace: str, key: str) -> None:
        self.engine = engine
        self.namespace = check_namespace(namespace)
        self.key = check_transcript_key(key)

    def entries(self) -> list[dict[str, Any]] | None:
        """The entries, oldest first; ``None`` when the log does not exist."""
        return self.engine.transcript(self.namespace, self.key)

    def append(self, entries: Sequence[dict[str, Any]]) -> None:
        if entries:
            new = list(entries)
            self.engine.edit_transcript(self.namespace, self.key, lambda current: [*(current or []), *new])

    def edit(self, edit: Callable[[list[Any] | None], list[Any] | None]) -> list[Any] | None:
        return self.engine.edit_transcript(self.namespace, self.key, edit)

    def clear(self) -> list[dict[str, Any]] | None:
        """Delete the log; returns what it held (``None`` when there was none)."""
        removed: list[list[Any] | None] = [None]

        def drop(current: list[Any] | None) -> None:
            removed[0] = current
            return None

        self.engine.edit_transcript(self.namespace, self.key, drop)
        return removed[0]

    def memory_ids(self, entries: Sequence[dict[str, Any]] | None = None) -> set[str]:
        entries = self.entries() if entries is None else entries
        return {e["memory_id"] for e in entries or [] if isinstance(e, dict) and e.get("memory_id")}


# -- names that load lazily (they pull in the lifecycle) ------------------------------------------


def __getattr__(name: str) -> Any:
    if name == "ExtractorReply":
        # The JSON schema an LLM extractor answers in (structured output of a framework's chat model).
        from hindsight_core.lifecycle.schema import ExtractorReply

        return ExtractorReply
    raise AttributeError(f"module 'hindsight_core.integration' has no attribute {name!r}")


__all__ = [
    "FORGET_TOOL_DESCRIPTION",
    "FORGET_TOOL_NAME",
    "HIT_METADATA_KEYS",
    "MAX_QUERY_CHARS",
    "NOTHING_FOUND",
    "PINNED",
    "RECALL_TOOL_DESCRIPTION",
    "RECALL_TOOL_NAME",
    "SAVE_TOOL_DESCRIPTION",
    "SAVE_TOOL_NAME",
    "ExtractorReply",
    "InvalidInputError",
    "LatestRecalls",
    "MissingExtraError",
    "NamespaceScope",
    "NamespaceTemplate",
    "SessionLog",
    "aforget_memory",
    "check_metadata",
    "check_namespace",
    "check_session_id",
    "check_shared",
    "check_text",
    "check_transcript_key",
    "engine_ref",
    "fill_namespace",
    "forget_memory",
    "hit_metadata",
    "is_langchain_message",
    "is_llamaindex_message",
    "log_message",
    "logged_message",
    "query_text",
    "recall_reply",
    "render_lines",
    "render_prompt",
    "require",
    "require_namespace",
    "resolve_engine",
    "saved_reply",
    "shared_from",
    "start_user",
    "starting_template",
    "template_fields",
    "user_namespace",
    "without_known",
]
