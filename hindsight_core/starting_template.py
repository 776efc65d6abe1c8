"""Starting templates: the semantic memories a new user begins with (``Hindsight(starting_memories=)``),
their types and the checks that turn what a caller gives (a file, a list, a template namespace) into
one. Applying a template to a root is ``hindsight_core/starting.py``; this module depends only on the
types and validation below it, so the types' constructors can check without reaching up."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hindsight_core.errors import InvalidInputError
from hindsight_core.namespaces import SEPARATOR
from hindsight_core.types import Kind
from hindsight_core.validation import check_metadata, check_namespace, check_text, parse_jsonl

#: Kinds a starting memory may have: lasting semantic memories (a ``state`` expires, an event happened).
KINDS = (Kind.FACT, Kind.PREFERENCE)
#: The most memories one template may hold.
MAX_MEMORIES = 1_000

class StartingMemory(BaseModel):
    """One memory of a starting template: a semantic ``fact`` or ``preference`` a new user begins with.
    ``slot`` and ``value`` (optional) name the attribute and its value as consolidation's rules do
    (``lifecycle/rules.py``), so the user's own value for that slot replaces it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    content: str
    kind: Kind = Kind.FACT
    importance: int = Field(default=3, ge=1, le=5)
    slot: str | None = None
    value: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class StartingMemories(BaseModel):
    """A template of starting memories, applied once to each new user's root namespace on first use:
    ``memories`` given here, or the active semantic memories of the template ``namespace`` as they are
    when a user starts (exactly one of the two). ``name`` is what each starting memory's ``starting``
    metadata says (default: the template namespace, else ``"template"``); ``prefix`` limits it to roots
    that start with it (``"user:"``). Build one from a JSONL file with :meth:`from_jsonl`; the engine
    takes a path or a list of strings and dicts as well."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memories: tuple[StartingMemory, ...] = ()
    namespace: str | None = None
    name: str | None = None
    prefix: str | None = None

    @property
    def label(self) -> str:
        return self.name or self.namespace or "template"

    @classmethod
    def from_jsonl(cls, path: str | Any, **options: Any) -> StartingMemories:
        """The template of a JSONL file: one memory per line, a JSON string or an object with
        :class:`StartingMemory`'s fields. Malformed lines raise :class:`InvalidInputError`."""
        return template_of(path, **options)

    @classmethod
    def of(cls, items: Any, **options: Any) -> StartingMemories:
        """The template of a list of strings, dicts and :class:`StartingMemory` (checked)."""
        return template_of(list(items), **options)

    @classmethod
    def from_namespace(cls, namespace: str, **options: Any) -> StartingMemories:
        """The template whose memories are the namespace's active semantic memories at each first use."""
        return template_of(cls(namespace=namespace, **options))



TemplateInput = StartingMemories | str | Path | Sequence[str | Mapping[str, Any] | StartingMemory]


def _item(raw: object, where: str) -> StartingMemory:
    if isinstance(raw, StartingMemory):
        raw = raw.model_dump()
    elif isinstance(raw, str):
        raw = {"content": raw}
    if not isinstance(raw, Mapping):
        raise InvalidInputError(f"{where}: a starting memory is a string or an object, got {type(raw).__name__}")
    try:
        item = StartingMemory.model_validate(dict(raw))
    except ValidationError as exc:
        raise InvalidInputError(f"{where}: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}") from None
    content = check_text(item.content, what=f"{where} content", max_chars=20_000)
    if item.kind not in KINDS:
        raise InvalidInputError(f"{where}: kind must be fact or preference, got {item.kind.value!r}")
    meta = check_metadata(item.metadata)
    slot = None if item.slot is None else check_text(item.slot, what=f"{where} slot", max_chars=200)
    value = None if item.value is None else check_text(item.value, what=f"{where} value", max_chars=2_000)
    return item.model_copy(update={"content": content, "metadata": meta, "slot": slot, "value": value})


def _lines(path: Path) -> list[object]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"starting memories file {str(path)!r} cannot be read: {exc}") from exc
    return parse_jsonl(text, where=path.name)


def template_of(value: object, **options: Any) -> StartingMemories:
    """A checked template from what ``Hindsight(starting_memories=...)`` accepts: a
    :class:`StartingMemories`, a path to a JSONL file, or a list of strings, dicts and
    :class:`StartingMemory`. ``options`` (``name``, ``prefix``) apply to a file or a list. Anything
    malformed raises :class:`InvalidInputError`."""
    if isinstance(value, StartingMemories):
        if options:
            value = value.model_copy(update=options)
        items: Sequence[object] = value.memories
        base = value
    elif isinstance(value, str | Path):
        items = _lines(Path(value))
        base = None
    elif isinstance(value, Sequence) and not isinstance(value, bytes):
        items = value
        base = None
    else:
        raise InvalidInputError(
            "starting_memories must be a StartingMemories, a JSONL path, or a list of strings and dicts; "
            f"got {type(value).__name__}"
        )
    if base is None:
        try:
            base = StartingMemories.model_validate(options)
        except ValidationError as exc:
            raise InvalidInputError(f"starting memories: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}") from None
    if len(items) > MAX_MEMORIES:
        raise InvalidInputError(f"a starting template holds at most {MAX_MEMORIES} memories, got {len(items)}")
    memories = tuple(_item(raw, f"starting memory {i}") for i, raw in enumerate(items))
    namespace = None if base.namespace is None else check_namespace(base.namespace)
    if bool(memories) == (namespace is not None):
        raise InvalidInputError("a starting template needs memories or a template namespace (exactly one of them)")
    if namespace is not None and SEPARATOR in namespace:
        raise InvalidInputError(f"a template namespace is a root namespace, got {namespace!r}")
    name = None if base.name is None else check_text(base.name, what="template name", max_chars=200)
    prefix = None if base.prefix is None else check_text(base.prefix, what="template prefix", max_chars=200)
    return StartingMemories(memories=memories, namespace=namespace, name=name, prefix=prefix)


__all__ = ["KINDS", "MAX_MEMORIES", "StartingMemories", "StartingMemory", "TemplateInput", "template_of"]
