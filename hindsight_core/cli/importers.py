"""Reading the files ``hindsight import`` accepts, into events or export records.

Four formats: an export (``hindsight export``: JSONL, header first), JSONL events (one
:class:`~hindsight_core.types.Event` object, or a bare string, per line), LangChain message history JSON
(``messages_to_dict``: a list of ``{"type": ..., "data": {...}}``) and a LlamaIndex ``SimpleChatStore``
file (``{"store": {key: [ChatMessage dicts]}}``, as ``persist`` writes it). Every event gets a
``source_id`` derived from its place in the file (and its text), so importing the same file again adds
nothing.

A file of any size is read in bounded memory. JSONL is read a line at a time, and a line may be at most
``Limits.line`` bytes; a LangChain or LlamaIndex file is one JSON document, parsed whole, so it may be
at most ``Limits.document`` bytes. Reading stops as soon as a cap is passed: a line that never ends
(``/dev/zero``) is refused after the cap, not read until memory runs out. The import reads the file
twice (every event is checked before the first is recorded), so input that can be read only once
(stdin, a pipe, a device) is first copied to an anonymous temporary file, under the same caps. Nothing
here touches the engine."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, Literal, TypeVar

import numpy as np

from hindsight_core.errors import InvalidInputError
from hindsight_core.portability import EXPORT_FORMAT
from hindsight_core.text.messages import langchain_role_text, llamaindex_role_text
from hindsight_core.validation import parse_json_line

Format = Literal["auto", "export", "events", "langchain", "llamaindex"]
FORMATS: tuple[str, ...] = ("auto", "export", "events", "langchain", "llamaindex")

#: How much of a stream that can be read only once is copied at a time.
_CHUNK = 64 * 1024

T = TypeVar("T")


@dataclass(frozen=True)
class Limits:
    """The caps of one import, in bytes: the longest JSONL line (an event, an export record) and the
    largest whole JSON document (LangChain history, a SimpleChatStore file)."""

    line: int
    document: int


def _size(n: int) -> str:
    return f"{n / 2**20:g} MiB"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _key(fmt: str, scope: str, index: int, content: str) -> str:
    """Position plus a digest of the text: re-importing the file finds the same keys, while two
    different files imported into one namespace do not collide on positions alone."""
    return f"{fmt}:{scope}:{index}:{_digest(content)}"


def open_import(
    path: Path | None, fmt: str, limits: Limits, *, session_id: str | None = None
) -> ImportFile:
    """The file at ``path`` (``None``: stdin), its format resolved (``fmt`` ``auto``: detected).
    ``session_id`` is the session of LangChain history (which carries none) and the default of JSONL
    events. Raises ``OSError`` when the file cannot be opened, :class:`InvalidInputError` when what it
    holds cannot be imported."""
    if fmt not in FORMATS:
        raise InvalidInputError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    if path is None:
        stream, scope = _spool(sys.stdin.buffer, limits), "stdin"
    else:
        raw: BinaryIO = path.open("rb")
        if stat.S_ISREG(os.fstat(raw.fileno()).st_mode):
            stream = raw
        else:
            with raw:
                stream = _spool(raw, limits)
        scope = path.stem
    try:
        return ImportFile(stream, fmt, limits, session_id=session_id, scope=scope)
    except BaseException:
        stream.close()
        raise


def _spool(stream: BinaryIO, limits: Limits) -> BinaryIO:
    """A copy of ``stream`` in an anonymous temporary file, so that the check pass and the record pass
    read the same bytes. Copied in chunks under the line cap (the document cap when the input opens
    a JSON object or list, which may be a whole document on one line): a line that never ends stops
    the copy there, filling neither memory nor the disk."""
    spool = tempfile.TemporaryFile()  # noqa: SIM115  (returned open: the caller reads it twice)
    try:
        number, run = 1, 0  # the line being copied, its bytes so far
        cap, option = limits.line, "--max-line-mb"
        opened = False  # past the leading whitespace
        while chunk := stream.read(_CHUNK):
            if not opened and chunk.strip():
                opened = True
                if chunk.lstrip()[:1] in (b"{", b"["):
                    cap, option = limits.document, "--max-document-mb"
            first = chunk.find(b"\n")
            if first == -1:
                run += len(chunk)
            else:
                _check_length(run + first, number, cap, option)
                number += chunk.count(b"\n")
                run = len(chunk) - chunk.rfind(b"\n") - 1
            _check_length(run, number, cap, option)
            spool.write(chunk)
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return spool


def _check_length(length: int, number: int, cap: int, option: str = "--max-line-mb") -> None:
    if length > cap:
        raise InvalidInputError(f"line {number} is longer than {_size(cap)}, the most a line may be ({option})")


class ImportFile:
    """An open file to import, in its resolved ``format``. :meth:`events` and :meth:`records` read it
    from the start at each call; LangChain and LlamaIndex files, parsed whole, are held as their events."""

    def __init__(
        self, stream: BinaryIO, fmt: str, limits: Limits, *, session_id: str | None, scope: str
    ) -> None:
        self._stream = stream
        self._limits = limits
        self._session_id = session_id
        self._scope = scope  #: names the file in derived ``source_id``s
        self._stamp = _stamp(stream)
        document: Any = None
        if fmt == "auto":
            fmt, document = self._detect()
        self.format = fmt
        self._document_events: list[dict[str, Any]] = []
        if fmt in ("langchain", "llamaindex"):
            if document is None:
                document = self._parse_document(fmt)
            if fmt == "langchain":
                self._document_events = _langchain(document, session_id or scope)
            else:
                self._document_events = _llamaindex(document)

    def __enter__(self) -> ImportFile:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._stream.close()

    def events(self) -> Iterator[dict[str, Any]]:
        """The events to record (formats other than ``export``), each with its ``source_id``."""
        if self.format != "events":
            yield from self._document_events
            return
        for index, row in enumerate(self._rows()):
            yield _event(index, row, self._session_id, self._scope)

    def records(self) -> Iterator[Any]:
        """The records of an export, for ``import_namespace``."""
        return self._rows()

    def _rewind(self) -> None:
        """Back to the start, for another pass; a file changed since it was opened is refused, since the
        pass that checked it would not have read what the next one records."""
        if _stamp(self._stream) != self._stamp:
            raise InvalidInputError("the file changed while it was being imported")
        self._stream.seek(0)

    def _lines(self) -> Iterator[tuple[int, str]]:
        """Each line that is not blank, with its number (counted as ``str.splitlines`` counts them, as
        the derived source ids always have), read one at a time up to the line cap."""
        self._rewind()
        cap, number = self._limits.line, 0
        while raw := self._stream.readline(cap + 1):
            _check_length(len(raw), number + 1, cap)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InvalidInputError(f"line {number + 1} is not UTF-8 text") from None
            for line in text.splitlines():
                number += 1
                if line.strip():
                    yield number, line

    def _rows(self) -> Iterator[Any]:
        for number, line in self._lines():
            yield parse_json_line(line, number)

    def _detect(self) -> tuple[str, Any]:
        """The format, and the document when it is one, from the first line that is not blank: JSON on
        its own, it is a one-line document or the first record of JSONL (an export's header, or an
        event). A first line that is not JSON (or is too long to be a JSONL line) but opens an object or
        a list starts a document, which is parsed whole."""
        lines = self._lines()
        try:
            _, first = next(lines)
        except StopIteration:
            raise InvalidInputError("the file is empty") from None
        except InvalidInputError:  # longer than a line may be, or not UTF-8: only a document can be
            return self._detect_document()
        try:
            value = json.loads(first)
        except json.JSONDecodeError:
            return self._detect_document() if first.lstrip()[:1] in ("{", "[") else ("events", None)
        except RecursionError:  # the decoder recurses: a document nested some thousands deep
            raise InvalidInputError("the file is nested too deep to be an import") from None
        fmt = _document_format(value)
        if fmt is not None and _exhausted(lines):  # another line: not one document, but JSONL
            return fmt, value
        if isinstance(value, Mapping) and value.get("format") == EXPORT_FORMAT:
            return "export", None
        return "events", None

    def _detect_document(self) -> tuple[str, Any]:
        text = self._document_text()
        if text.lstrip()[:1] not in ("{", "["):
            return "events", None  # reading it as JSONL names what is wrong with its first line
        try:
            document = json.loads(text)
        except json.JSONDecodeError:
            return "events", None
        except RecursionError:
            raise InvalidInputError("the file is nested too deep to be an import") from None
        fmt = _document_format(document)
        return (fmt, document) if fmt is not None else ("events", None)

    def _document_text(self) -> str:
        self._rewind()
        cap = self._limits.document
        data = self._stream.read(cap + 1)
        if len(data) > cap:
            raise InvalidInputError(
                f"the file is larger than {_size(cap)}, the most a JSON document read whole (LangChain "
                f"history, a LlamaIndex chat store) may be (--max-document-mb)"
            )
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(f"the file is not UTF-8 text: {exc.reason} at byte {exc.start}") from None

    def _parse_document(self, fmt: str) -> Any:
        try:
            return json.loads(self._document_text())
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"a {fmt} file is one JSON document: {exc.msg}") from None
        except RecursionError:
            raise InvalidInputError(f"the {fmt} document is nested too deep") from None


def _exhausted(lines: Iterator[tuple[int, str]]) -> bool:
    """Whether no line that is not blank is left (one too long, or not UTF-8, is one)."""
    try:
        next(lines)
    except StopIteration:
        return True
    except InvalidInputError:
        pass
    return False


def _stamp(stream: BinaryIO) -> tuple[int, int]:
    info = os.fstat(stream.fileno())
    return info.st_size, info.st_mtime_ns


def _document_format(value: object) -> str | None:
    """``langchain`` or ``llamaindex`` when ``value`` has that document's shape."""
    if isinstance(value, Mapping) and isinstance(value.get("store"), Mapping):
        return "llamaindex"
    if isinstance(value, list) and value and all(
        isinstance(m, Mapping) and "type" in m and isinstance(m.get("data"), Mapping) for m in value
    ):
        return "langchain"
    return None


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last one shorter)."""
    iterator = iter(items)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


class KeyDigests:
    """Whether two events of an import share an idempotency key ``(layer, source_id)``, in 16 bytes an
    event: a set of the keys themselves would cost some hundred bytes an event, what streaming the file
    saves. Two different keys share a 128-bit digest with a probability far too small to matter."""

    def __init__(self) -> None:
        self._digests = bytearray()

    def add(self, keys: Iterable[tuple[str, str]]) -> None:
        for layer, source_id in keys:
            key = f"{layer}\0{source_id}".encode("utf-8", "surrogatepass")
            self._digests += hashlib.blake2b(key, digest_size=16).digest()

    def check(self) -> None:
        """Raise :class:`InvalidInputError` when a key was added twice."""
        ordered = np.sort(np.frombuffer(self._digests, dtype="S16"))
        if bool(np.any(ordered[1:] == ordered[:-1])):
            raise InvalidInputError("two events share a source_id; source_id must be unique within a namespace")


def _event(index: int, row: Any, session_id: str | None, scope: str) -> dict[str, Any]:
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
    return event


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
