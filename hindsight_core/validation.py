"""Input checks run before anything is written: a refused call changes nothing."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from hindsight_core.errors import InvalidInputError
from hindsight_core.types import Kind, Layer

# Unicode word characters (so "user:王磊" works) plus a few separators; no spaces, braces or control
# characters, which would break Redis hash tags, Chroma filters or log lines.
# Matched with ``fullmatch``: ``$`` would also accept a trailing newline ("user:1\n").
_NAMESPACE = re.compile(r"[\w][\w.:/@+=-]*", re.UNICODE)
MAX_NAMESPACE_CHARS = 200
#: Defaults of the matching ``WriteConfig`` fields, for callers without an engine config at hand.
MAX_ROLE_CHARS = 64
MAX_METADATA_DEPTH = 32
MAX_METADATA_BYTES = 64 * 1024
#: Memory ids are ULIDs (26 characters); anything much longer cannot name a memory.
MAX_ID_CHARS = 200
#: Recall refuses longer queries: a query is a question, not a document to search with.
MAX_QUERY_CHARS = 4_000


def check_namespace(namespace: object) -> str:
    if not isinstance(namespace, str):
        raise InvalidInputError(f"namespace must be a str, got {type(namespace).__name__}")
    if not namespace.strip():
        raise InvalidInputError("namespace is empty")
    if len(namespace) > MAX_NAMESPACE_CHARS:
        raise InvalidInputError(f"namespace is longer than {MAX_NAMESPACE_CHARS} characters")
    if not _NAMESPACE.fullmatch(namespace):
        raise InvalidInputError(
            f"namespace {namespace!r} is malformed: use letters, digits and . : / @ + = - _ "
            "(no spaces, braces or control characters), e.g. 'user:42' or 'agent:a/user:42'"
        )
    return namespace


def check_session_id(session_id: object) -> str | None:
    if session_id is None:
        return None
    if not isinstance(session_id, str) or not session_id.strip():
        raise InvalidInputError("session_id must be a non-empty str or None")
    return check_text(session_id, what="session_id", max_chars=MAX_NAMESPACE_CHARS)


def check_transcript_key(key: object) -> str:
    """Transcript keys follow the session id rules: a non-empty str of at most 200 characters."""
    return check_text(key, what="transcript key", max_chars=MAX_NAMESPACE_CHARS)


def check_text(text: object, *, what: str = "content", max_chars: int) -> str:
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(f"{what} is not valid UTF-8: {exc}") from exc
    if not isinstance(text, str):
        raise InvalidInputError(f"{what} must be str, got {type(text).__name__}")
    if not text.strip():
        raise InvalidInputError(f"{what} is empty or whitespace only")
    if len(text) > max_chars:
        raise InvalidInputError(f"{what} has {len(text)} characters, over the limit of {max_chars}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogates, e.g. from a bad decode upstream
        raise InvalidInputError(f"{what} is not valid Unicode (lone surrogate at {exc.start})") from exc
    if "\x00" in text:
        raise InvalidInputError(f"{what} contains a NUL character")
    return text


def check_role(role: object, *, max_chars: int = MAX_ROLE_CHARS) -> str | None:
    """A role is a short speaker label that adapters and prompts print on one line, so control
    characters (newlines included) are refused along with what ``check_text`` refuses."""
    if role is None:
        return None
    text = check_text(role, what="role", max_chars=max_chars)
    bad = next((ch for ch in text if unicodedata.category(ch) == "Cc"), None)
    if bad is not None:
        raise InvalidInputError(f"role contains a control character ({bad!r})")
    return text


def check_id(value: object, *, what: str = "memory_id") -> str:
    """An id the caller got back from the engine; valid Unicode so it can be bound in SQL at all."""
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"{what} must be a non-empty str")
    return check_text(value, what=what, max_chars=MAX_ID_CHARS)


def check_layer(layer: object) -> Layer:
    try:
        return Layer(str(layer))
    except ValueError:
        raise InvalidInputError(
            f"unknown layer {layer!r}; expected one of {[v.value for v in Layer]}"
        ) from None


def check_kind(kind: object) -> Kind:
    try:
        return Kind(str(kind))
    except ValueError:
        raise InvalidInputError(f"unknown kind {kind!r}; expected one of {[v.value for v in Kind]}") from None


def check_importance(importance: object) -> int:
    if isinstance(importance, bool) or not isinstance(importance, int) or not 1 <= importance <= 5:
        raise InvalidInputError(f"importance must be an int from 1 to 5, got {importance!r}")
    return importance


def check_json(
    value: object, *, what: str, max_depth: int = MAX_METADATA_DEPTH, max_bytes: int | None = MAX_METADATA_BYTES
) -> str:
    """Encode a JSON value after checking what the encoder cannot be trusted with.

    The walk is iterative and runs before ``json.dumps``: the encoder recurses, so a value nested a few
    thousand deep would raise ``RecursionError`` (and a cycle loops until it does). Keys must be str,
    because ``json.dumps`` silently turns ``1`` into ``"1"`` and the value would not round-trip. The
    walk stops as soon as the strings it has seen exceed ``max_bytes``, so a huge value, or a small one
    sharing a sub-object many times, is refused without being encoded."""
    seen = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list | tuple):
            if depth >= max_depth:
                raise InvalidInputError(f"{what} is nested deeper than {max_depth} levels")
            if isinstance(node, dict):
                for key in node:
                    if not isinstance(key, str):
                        raise InvalidInputError(f"{what} keys must be str, got {type(key).__name__} {key!r}")
                    seen += len(key) + 4
                    if max_bytes is not None and seen > max_bytes:
                        break
                stack.extend((v, depth + 1) for v in node.values())
            else:
                stack.extend((v, depth + 1) for v in node)
            seen += 2
        elif isinstance(node, str):
            seen += len(node) + 2
        else:
            seen += 1
        if max_bytes is not None and seen > max_bytes:
            raise InvalidInputError(f"{what} is larger than the limit of {max_bytes} bytes of JSON")
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:  # ValueError also covers circular references
        raise InvalidInputError(f"{what} is not JSON-serialisable: {exc}") from exc
    try:
        size = len(encoded.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"{what} contains invalid Unicode (lone surrogate)") from exc
    if max_bytes is not None and size > max_bytes:
        raise InvalidInputError(f"{what} is {size} bytes of JSON, over the limit of {max_bytes}")
    return encoded


def check_metadata(
    metadata: object, *, max_depth: int = MAX_METADATA_DEPTH, max_bytes: int = MAX_METADATA_BYTES
) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidInputError(f"metadata must be a dict, got {type(metadata).__name__}")
    encoded = check_json(metadata, what="metadata", max_depth=max_depth, max_bytes=max_bytes)
    result: dict[str, Any] = json.loads(encoded)
    return result


def check_metadata_filter(filters: object) -> dict[str, str | int | float | bool | None]:
    """``find(metadata=...)``: top-level keys matched by equality against scalar values (JSON's str,
    number, bool, null). A nested value is refused rather than matched with rules of its own: the two
    backends compare nested JSON differently, scalars the same way."""
    if not isinstance(filters, dict):
        raise InvalidInputError(f"metadata filter must be a dict of key -> value, got {type(filters).__name__}")
    out: dict[str, str | int | float | bool | None] = {}
    for key, value in filters.items():
        if not isinstance(key, str) or not key:
            raise InvalidInputError(f"metadata filter keys must be non-empty str, got {key!r}")
        if value is not None and not isinstance(value, str | int | float | bool):
            raise InvalidInputError(
                f"metadata filter {key!r}: values must be str, int, float, bool or None, got {type(value).__name__}"
            )
        out[key] = value
    check_json(out, what="metadata filter")
    return out


def parse_jsonl(text: str, *, where: str = "") -> list[Any]:
    """One JSON value per non-blank line; a malformed line raises :class:`InvalidInputError` naming it
    (``where``: the file, for the message)."""
    return [parse_json_line(line, number, where=where)
            for number, line in enumerate(text.splitlines(), start=1) if line.strip()]


def parse_json_line(line: str, number: int, *, where: str = "") -> Any:
    """The JSON value of line ``number`` of a JSONL file; a malformed line raises
    :class:`InvalidInputError` naming it (``where``: the file, for the message)."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{where + ' ' if where else ''}line {number} is not JSON: {exc.msg}") from None
    except RecursionError:  # the decoder recurses: a value nested some thousands deep
        raise InvalidInputError(f"{where + ' ' if where else ''}line {number} is nested too deep") from None

