"""Input checks run before anything is written: a refused call changes nothing."""

from __future__ import annotations

import json
import re
from typing import Any

from hindsight_core.errors import InvalidInputError
from hindsight_core.types import Kind, Layer

# Unicode word characters (so "user:王磊" works) plus a few separators; no spaces, braces or control
# characters, which would break Redis hash tags, Chroma filters or log lines.
_NAMESPACE = re.compile(r"^[\w][\w.:/@+=-]*$", re.UNICODE)
MAX_NAMESPACE_CHARS = 200


def check_namespace(namespace: object) -> str:
    if not isinstance(namespace, str):
        raise InvalidInputError(f"namespace must be a str, got {type(namespace).__name__}")
    if not namespace.strip():
        raise InvalidInputError("namespace is empty")
    if len(namespace) > MAX_NAMESPACE_CHARS:
        raise InvalidInputError(f"namespace is longer than {MAX_NAMESPACE_CHARS} characters")
    if not _NAMESPACE.match(namespace):
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


def check_metadata(metadata: object) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidInputError(f"metadata must be a dict, got {type(metadata).__name__}")
    try:
        encoded = json.dumps(metadata, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"metadata is not JSON-serialisable: {exc}") from exc
    try:
        encoded.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError("metadata contains invalid Unicode (lone surrogate)") from exc
    result: dict[str, Any] = json.loads(encoded)
    return result
