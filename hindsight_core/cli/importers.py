"""Reading the files ``hindsight import`` accepts, into events or export records.

Four formats: an export (``hindsight export``: JSONL, header first), JSONL events (one
:class:`~hindsight_core.types.Event` object, or a bare string, per line), LangChain message history JSON
(``messages_to_dict``: a list of ``{"type": ..., "data": {...}}``) and a LlamaIndex ``SimpleChatStore``
file (``{"store": {key: [ChatMessage dicts]}}``, as ``persist`` writes it). Every event gets a
``source_id`` derived from its place in the file (and its text), so importing the same file again adds
nothing. Pure functions: nothing here touches the engine."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from hindsight_core.errors import InvalidInputError
from hindsight_core.portability import EXPORT_FORMAT
from hindsight_core.text.messages import langchain_role_text, llamaindex_role_text
from hindsight_core.validation import parse_jsonl

Format = Literal["auto", "export", "events", "langchain", "llamaindex"]
FORMATS: tuple[str, ...] = ("auto", "export", "events", "langchain", "llamaindex")



@dataclass
class Parsed:
    format: str
    events: list[dict[str, Any]] = field(default_factory=list)  #: for record_many
    records: list[dict[str, Any]] = field(default_factory=list)  #: for import_namespace (an export)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _key(fmt: str, scope: str, index: int, content: str) -> str:
    """Position plus a digest of the text: re-importing the file finds the same keys, while two
    different files imported into one namespace do not collide on positions alone."""
    return f"{fmt}:{scope}:{index}:{_digest(content)}"


def detect(text: str) -> str:
    """The format of a file's text (``auto`` resolved)."""
    stripped = text.lstrip()
    if not stripped:
        raise InvalidInputError("the file is empty")
    try:
        whole: Any = json.loads(stripped)
    except json.JSONDecodeError:
        whole = None
    except RecursionError:  # the decoder recurses: a document nested some thousands deep
        raise InvalidInputError("the file is nested too deep to be an import") from None
    if isinstance(whole, Mapping) and isinstance(whole.get("store"), Mapping):
        return "llamaindex"
    if isinstance(whole, list) and whole and all(
        isinstance(m, Mapping) and "type" in m and isinstance(m.get("data"), Mapping) for m in whole
    ):
        return "langchain"
    first = parse_jsonl(stripped.splitlines()[0])
    if first and isinstance(first[0], Mapping) and first[0].get("format") == EXPORT_FORMAT:
        return "export"
    return "events"


def parse(text: str, fmt: str = "auto", *, session_id: str | None = None, scope: str = "file") -> Parsed:
    """Read ``text`` in ``fmt``. ``session_id`` is the session of LangChain history (which carries none)
    and the default of JSONL events; ``scope`` names the file in derived ``source_id``s."""
    if fmt not in FORMATS:
        raise InvalidInputError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    resolved = detect(text) if fmt == "auto" else fmt
    if resolved == "export":
        return Parsed("export", records=[r for r in parse_jsonl(text)])
    if resolved == "events":
        return Parsed("events", events=_events(parse_jsonl(text), session_id, scope))
    try:
        whole = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"a {resolved} file is one JSON document: {exc.msg}") from None
    except RecursionError:
        raise InvalidInputError(f"the {resolved} document is nested too deep") from None
    if resolved == "langchain":
        return Parsed("langchain", events=_langchain(whole, session_id or scope))
    return Parsed("llamaindex", events=_llamaindex(whole))


def _events(rows: list[Any], session_id: str | None, scope: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for index, row in enumerate(rows):
        event: dict[str, Any]
        if isinstance(row, str):
            event = {"content": row}
        elif isinstance(row, Mapping):
            event = dict(row)
        else:
            raise InvalidInputError(f"event {index}: an event is an object or a string, got {type(row).__name__}")
        content = event.get("content")
        if not isinstance(content, str):
            raise InvalidInputError(f"event {index}: 'content' must be a string")
        if session_id is not None:
            event.setdefault("session_id", session_id)
        if event.get("source_id") is None:
            event["source_id"] = _key("events", scope, index, content)
        events.append(event)
    return events


def _langchain(whole: object, session: str) -> list[dict[str, Any]]:
    if not isinstance(whole, list):
        raise InvalidInputError("LangChain message history is a JSON list of {type, data} messages")
    events: list[dict[str, Any]] = []
    for index, message in enumerate(whole):
        if not isinstance(message, Mapping) or not isinstance(message.get("data"), Mapping):
            raise InvalidInputError(f"message {index}: expected {{'type': ..., 'data': {{...}}}}")
        data = message["data"]
        role, content = langchain_role_text(message, f"message {index}")
        if message.get("type") == "tool" and data.get("name"):
            role = str(data["name"])
        if not content.strip():
            continue  # a tool-call-only AI message carries no text to remember
        events.append({
            "content": content, "role": role, "session_id": session,
            "source_id": _key("langchain", session, index, content),
            "metadata": {"langchain_id": data["id"]} if isinstance(data.get("id"), str) else None,
        })
    return events


def _llamaindex(whole: object) -> list[dict[str, Any]]:
    store = whole.get("store") if isinstance(whole, Mapping) else None
    if not isinstance(store, Mapping):
        raise InvalidInputError("a SimpleChatStore file is {'store': {key: [messages]}}")
    events: list[dict[str, Any]] = []
    for key, messages in store.items():
        if not isinstance(messages, list):
            raise InvalidInputError(f"chat store key {key!r}: expected a list of messages")
        for index, message in enumerate(messages):
            if not isinstance(message, Mapping):
                raise InvalidInputError(f"chat store key {key!r}, message {index}: expected an object")
            role, content = llamaindex_role_text(message, f"{key!r} message {index}")
            if not content.strip():
                continue
            events.append({
                "content": content, "role": role, "session_id": str(key),
                "source_id": _key("llamaindex", str(key), index, content),
            })
    return events
