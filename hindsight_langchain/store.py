"""``HindsightStore``: a LangGraph ``BaseStore`` whose items are engine memories.

Each LangGraph namespace maps to its own engine namespace, so the engine's tenant wall holds between
them and search ranks with the engine's recall. With ``user_label`` (the position of the user id in the
LangGraph namespace) an item lands under the user's root: ``("memories", "ana")`` →
``user:ana/store:memories``, so the middleware, the retriever and the tools, which recall the root's
subtree, find it, and ``forget_namespace("user:ana")`` erases it with the rest of the user. Without it
(the former layout, still the default) ``("memories", "u1")`` → ``store:memories/u1``. An item is
one semantic memory: its ``key`` is the memory's ``source_id`` (an exact, idempotent key), its value is
kept verbatim in metadata (exact JSON round trip), and its text — the fields named by ``index`` — is
what recall searches. ``index=False`` stores the item without indexing it for search.

Batches follow ``InMemoryStore``: reads see the state before the batch's writes; of several writes to
one key in a batch the last wins.

A search never reads a shared layer (``Hindsight.grant``), whatever is granted to the user's root: a
``BaseStore`` search returns the items under its ``namespace_prefix`` and nothing else, and a shared
memory is no item of this store (it has no key, no value, no LangGraph namespace to put it back under).
Recall ranks each engine namespace's own items with ``shared=False``, so a granted layer can neither
come back nor take a ranked place from one of the store's items. The shared layer reaches an agent through
the recalling adapters (middleware, retriever, tools), which take ``shared=``."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from hindsight_core.integration import require

require("langgraph.store.base", "langchain")

from langgraph.store.base import (  # noqa: E402
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    tokenize_path,
)

try:  # langgraph-checkpoint >= 4.3 checks the labels of ops handed to batch() directly
    from langgraph.store.base import validate_op_namespace as _validate_op_namespace
except ImportError:  # older releases (langgraph 1.0 allows 2.x) check only in BaseStore's own methods
    from langgraph.store.base import InvalidNamespaceError

    def _validate_op_namespace(op: Op) -> None:
        """What 4.3's ``validate_op_namespace`` checks: labels are non-empty str without a period."""
        if isinstance(op, GetOp | PutOp):
            paths: list[tuple[str, ...]] = [op.namespace]
        elif isinstance(op, SearchOp):
            paths = [op.namespace_prefix]
        elif isinstance(op, ListNamespacesOp):
            paths = [c.path for c in op.match_conditions or ()]
        else:
            paths = []
        for path in paths:
            for label in path:
                if not isinstance(label, str) or not label or "." in label:
                    raise InvalidNamespaceError(
                        f"Invalid namespace label {label!r} in {path}: labels must be non-empty strings without '.'"
                    )

from hindsight_core.integration import (  # noqa: E402
    InvalidInputError,
    check_metadata,
    check_namespace,
    check_text,
    resolve_engine,
    user_namespace,
)

if TYPE_CHECKING:
    from hindsight_core import Hindsight, Memory

#: Metadata key under which an item's namespace, key, value and timestamps are kept.
ITEM_KEY = "lg_item"
LAYER = "semantic"
_ROOT = re.compile(r"^[A-Za-z0-9_][\w-]*$")
_SAFE = re.compile(r"[\w-]")
_ESCAPED = re.compile(r"(?:=[0-9A-F]{2})+")
#: Recall is asked for every candidate of a namespace; this budget never cuts a store search short.
_SEARCH_BUDGET = 1_000_000
_PUT_LOCK = threading.RLock()
_MAX_K = 200  # the most recall ranks per call; candidates past it come back unscored, after the rest


def _encode_label(label: str) -> str:
    """Word characters and ``-`` stay; everything else, ``=`` included, becomes ``=XX`` per UTF-8 byte,
    so each label has exactly one encoding."""
    try:
        return "".join(ch if _SAFE.fullmatch(ch) else "".join(f"={b:02X}" for b in ch.encode()) for ch in label)
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"namespace label {label!r} is not valid Unicode (lone surrogate)") from exc


def _decode_label(label: str) -> str | None:
    """The label whose encoding is ``label``, or ``None`` when no label encodes to it.

    Engine namespaces under the store's root can also be written directly through the engine
    (``store:x=FF``); such a namespace is not one of the store's, and must not break every
    ``search``/``list_namespaces``. Decoding is total: invalid UTF-8, or any spelling the encoder would
    not produce (``x=41`` for ``xA``, lower-case hex), means "not ours"."""
    try:
        decoded = _ESCAPED.sub(lambda m: bytes.fromhex(m.group().replace("=", "")).decode(), label)
    except UnicodeDecodeError:
        return None
    return decoded if _encode_label(decoded) == label else None


def _string_leaves(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if value.strip():
            yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _string_leaves(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _string_leaves(v)


def _compare(item_value: Any, filter_value: Any) -> bool:
    """JSONB-like matching, as ``InMemoryStore`` and ``PostgresStore`` do: nested dicts match by key,
    ``$``-operators compare, lists match element-wise."""
    if isinstance(filter_value, dict):
        if any(k.startswith("$") for k in filter_value):
            return all(_operator(item_value, op, v) for op, v in filter_value.items())
        if not isinstance(item_value, dict):
            return False
        return all(_compare(item_value.get(k), v) for k, v in filter_value.items())
    if isinstance(filter_value, list | tuple):
        return (
            isinstance(item_value, list | tuple)
            and len(item_value) == len(filter_value)
            and all(_compare(a, b) for a, b in zip(item_value, filter_value, strict=True))
        )
    return bool(item_value == filter_value)


def _operator(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(value == operand)
    if operator == "$ne":
        return bool(value != operand)
    if operator in ("$gt", "$gte", "$lt", "$lte"):
        if value is None or isinstance(value, dict | list):
            return False
        try:
            left, right = float(value), float(operand)
        except (TypeError, ValueError):
            return False
        return {"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[operator]
    raise ValueError(f"Unsupported operator: {operator}")


def _expired(m: Memory, now: datetime) -> bool:
    expires = m.metadata[ITEM_KEY].get("expires_at")
    return expires is not None and datetime.fromisoformat(expires) <= now


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    if condition.match_type not in ("prefix", "suffix"):
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(p == "*" or k == p for k, p in pairs)


class HindsightStore(BaseStore):
    """LangGraph long-term memory on the Hindsight engine (``create_agent(store=...)``, LangMem tools).

    ``root`` names the engine namespaces this store owns. ``user_label`` is the position of the user
    id in LangGraph namespaces (``1`` for LangMem's ``("memories", "{user_id}")``, ``0`` for
    ``("{user_id}", "memories")``, ``-1`` for the last): an item then lives under the user's root
    ``user_prefix + user id`` (``user:ana/store:memories``), next to the user's turns and saved facts;
    a namespace too short to hold the position keeps the ``store:`` layout. Items written before
    ``user_label`` was set stay readable (reads fall back to the ``store:`` namespace, a put moves the
    key); :meth:`migrate_to_user_roots` moves them all at once. ``index`` is LangGraph's ``IndexConfig``:
    ``fields`` are the JSON paths whose text is indexed when a put does not name its own (default:
    every string in the value); ``dims`` and ``embed`` are checked against the engine's embedder,
    because the engine embeds everything it stores with one model (pass your ``Embeddings`` as
    ``Hindsight(embedder=...)`` instead). Only the first ``max_index_chars`` of an item's text are
    indexed; the value itself is always kept whole.

    ``ttl`` is LangGraph's ``TTLConfig``: ``default_ttl`` (minutes) applies to puts that give none,
    ``refresh_on_read`` (default ``True``) restarts an item's clock when a get or search returns it,
    ``sweep_interval_minutes`` runs :meth:`sweep_ttl` in a background thread once
    :meth:`start_ttl_sweeper` is called. Expired items are never returned, whether swept yet or not."""

    supports_ttl = True

    def __init__(
        self,
        engine: Hindsight | None = None,
        *,
        root: str = "store",
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        index_fields: Sequence[str] | None = None,
        max_index_chars: int = 2_000,
        user_label: int | None = None,
        user_prefix: str = "user:",
    ) -> None:
        if not isinstance(root, str) or not _ROOT.match(root):
            raise ValueError(f"root {root!r} must be letters, digits, '_' or '-'")
        if user_label is not None and (isinstance(user_label, bool) or not isinstance(user_label, int)):
            raise InvalidInputError("user_label must be the int position of the user id in the namespace, or None")
        self.engine = resolve_engine(engine)
        self.root = root
        self.user_label = user_label
        self.user_prefix = user_prefix
        fields = index_fields
        if index is not None:
            self._check_index(index)
            fields = index.get("fields", fields)
        if fields is not None and (isinstance(fields, str) or not all(isinstance(f, str) for f in fields)):
            raise InvalidInputError("index fields must be a list of JSON paths")
        self.index_config = index
        self.index_fields = list(fields) if fields is not None and list(fields) != ["$"] else None
        self.max_index_chars = max_index_chars
        self.ttl_config = self._check_ttl(ttl)
        self._sweeper: threading.Thread | None = None
        self._stop_sweeping = threading.Event()

    def _check_index(self, index: IndexConfig) -> None:
        if not isinstance(index, dict):
            raise InvalidInputError("index must be a LangGraph IndexConfig dict (dims, embed, fields)")
        embedder = self.engine.embedder
        dims = index.get("dims")
        if dims is not None and dims != embedder.dim:
            raise InvalidInputError(
                f"index dims={dims}, but the engine embeds with {embedder.name} ({embedder.dim} dimensions): "
                "open the engine with your model, Hindsight(path, embedder=...), and leave dims out"
            )
        embed = index.get("embed")
        if embed is not None and embed is not getattr(embedder, "model", embedder) and embed != embedder.name:
            raise InvalidInputError(
                "index embed= names another model than the engine's: the engine embeds everything it stores "
                "with one model, so pass it there, Hindsight(path, embedder=your_embeddings), and leave embed out"
            )

    @staticmethod
    def _check_ttl(ttl: TTLConfig | None) -> TTLConfig | None:
        if ttl is None:
            return None
        if not isinstance(ttl, dict):
            raise InvalidInputError("ttl must be a LangGraph TTLConfig dict")
        for key in ("default_ttl", "sweep_interval_minutes"):
            value = ttl.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value <= 0):
                raise InvalidInputError(f"ttl {key} must be a positive number of minutes")
        return ttl

    # -- namespaces ------------------------------------------------------------------------------
    def _user_split(self, namespace: tuple[str, ...]) -> tuple[str, tuple[str, ...]] | None:
        """``(user id, the other labels)`` when ``user_label`` names a label of ``namespace``."""
        if self.user_label is None:
            return None
        n = len(namespace)
        i = self.user_label if self.user_label >= 0 else n + self.user_label
        if not 0 <= i < n:
            return None
        return namespace[i], namespace[:i] + namespace[i + 1 :]

    def legacy_namespace(self, namespace: tuple[str, ...]) -> str:
        """The ``store:`` layout: ``("memories", "u1")`` → ``store:memories/u1``."""
        return f"{self.root}:" + "/".join(_encode_label(label) for label in namespace)

    def engine_namespace(self, namespace: tuple[str, ...]) -> str:
        """The engine namespace holding a LangGraph namespace's items: under the user's root when
        ``user_label`` finds the user id in it, else the ``store:`` layout."""
        split = self._user_split(namespace)
        if split is None:
            return self.legacy_namespace(namespace)
        user, rest = split
        root = user_namespace(self.user_prefix, user, who="HindsightStore")
        return check_namespace(f"{root}/{self.root}:" + "/".join(_encode_label(label) for label in rest))

    def _read_namespaces(self, namespace: tuple[str, ...]) -> list[str]:
        """Where a LangGraph namespace's items may be: its engine namespace, then the ``store:`` one it
        had before ``user_label`` was set (until :meth:`migrate_to_user_roots` empties it)."""
        current = self.engine_namespace(namespace)
        legacy = self.legacy_namespace(namespace)
        return [current] if legacy == current else [current, legacy]

    def _labels(self, encoded: str) -> tuple[str, ...] | None:
        labels = [_decode_label(label) for label in encoded.split("/")] if encoded else []
        if any(label is None for label in labels):
            return None  # not a namespace this store wrote
        return tuple(label for label in labels if label is not None)

    def _space_of(self, ns: str) -> tuple[str, ...] | None:
        """The LangGraph namespace an engine namespace holds, or ``None`` when it is not this store's."""
        head = f"{self.root}:"
        if ns.startswith(head) and len(ns) > len(head):
            return self._labels(ns[len(head) :])
        if self.user_label is None or not ns.startswith(self.user_prefix):
            return None
        user_root, _, tail = ns.partition("/")
        if not tail.startswith(head):
            return None
        rest = self._labels(tail[len(head) :])
        if rest is None:
            return None
        user = user_root[len(self.user_prefix) :]
        i = self.user_label if self.user_label >= 0 else len(rest) + 1 + self.user_label
        if not user or not 0 <= i <= len(rest):
            return None
        space = (*rest[:i], user, *rest[i:])
        try:
            return space if self.engine_namespace(space) == ns else None
        except InvalidInputError:
            return None

    def _spaces(self) -> list[tuple[str, tuple[str, ...]]]:
        spaces: list[tuple[str, tuple[str, ...]]] = []
        for ns in self.engine.namespaces():
            space = self._space_of(ns)
            if space is not None:
                spaces.append((ns, space))
        return spaces

    def migrate_to_user_roots(self) -> int:
        """Move every item still in a ``store:`` namespace that ``user_label`` now maps under a user's
        root (items written before it was set) there, keeping values and timestamps; returns how many.
        Each item is one upsert into its new namespace, then the old namespace is erased: re-running
        after an interruption finishes the move."""
        if self.user_label is None:
            raise InvalidInputError("migrate_to_user_roots needs user_label (where the user id is)")
        moved = 0
        with _PUT_LOCK:
            for ns, space in self._spaces():
                target = self.engine_namespace(space)
                if target == ns:
                    continue
                for m in self._stored(ns):
                    self.engine.upsert(
                        m.content, target, layer=LAYER, kind="fact", role=None, source_id=m.metadata[ITEM_KEY]["key"],
                        metadata=m.metadata, index=m.indexed,
                    )
                    moved += 1
                self.engine.forget_namespace(ns, subtree=False)
        return moved

    # -- items -----------------------------------------------------------------------------------
    @staticmethod
    def _item(m: Memory) -> Item:
        data = m.metadata[ITEM_KEY]
        return Item(
            value=data["value"],
            key=data["key"],
            namespace=tuple(data["namespace"]),
            created_at=datetime.fromisoformat(data["created_at"]),
            updated_at=datetime.fromisoformat(data["updated_at"]),
        )

    def _stored(self, engine_ns: str, keys: Sequence[str] | None = None) -> list[Memory]:
        found = self.engine.find(engine_ns, layer=LAYER, source_ids=keys)
        return [m for m in found if ITEM_KEY in m.metadata]

    def _live(self, memories: list[Memory]) -> list[Memory]:
        """The memories whose item has not expired (an expired item is gone for readers at once)."""
        now = self.engine.now()
        return [m for m in memories if not _expired(m, now)]

    def _refresh(self, memories: Sequence[Memory], refresh: bool) -> None:
        """Restart the clock of items with a TTL that a read returned (``refresh_on_read``)."""
        if not refresh:
            return
        now = self.engine.now()
        with _PUT_LOCK:
            for m in memories:
                data = m.metadata[ITEM_KEY]
                if data.get("ttl") is None:
                    continue
                data = {**data, "expires_at": (now + timedelta(minutes=data["ttl"])).isoformat()}
                self.engine.upsert(
                    m.content,
                    m.namespace,
                    layer=LAYER,
                    kind="fact",
                    role=None,
                    source_id=data["key"],
                    metadata={**m.metadata, ITEM_KEY: data},
                    index=m.indexed,
                )

    def sweep_ttl(self) -> int:
        """Delete every expired item of this store; returns how many."""
        now = self.engine.now()
        removed = 0
        with _PUT_LOCK:
            for engine_ns, _ in self._spaces():
                for m in self._stored(engine_ns):
                    if _expired(m, now):
                        removed += self.engine.forget(m.id, namespace=engine_ns)
        return removed

    async def asweep_ttl(self) -> int:
        return await asyncio.to_thread(self.sweep_ttl)

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> threading.Thread:
        """Run :meth:`sweep_ttl` every ``sweep_interval_minutes`` (else the TTLConfig's) in a daemon thread."""
        minutes = sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes")
        if not minutes:
            raise InvalidInputError("no sweep interval: pass sweep_interval_minutes or set it in ttl=")
        if self._sweeper is not None and self._sweeper.is_alive():
            return self._sweeper
        self._stop_sweeping.clear()

        def run() -> None:
            while not self._stop_sweeping.wait(float(minutes) * 60):
                self.sweep_ttl()

        self._sweeper = threading.Thread(target=run, name="hindsight-store-ttl", daemon=True)
        self._sweeper.start()
        return self._sweeper

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; ``True`` when it has stopped."""
        self._stop_sweeping.set()
        if self._sweeper is None:
            return True
        self._sweeper.join(timeout)
        return not self._sweeper.is_alive()

    def _text(self, value: dict[str, Any], index: Literal[False] | Sequence[str] | None) -> str | None:
        if index is False:
            return None
        fields = index if index is not None else self.index_fields
        if fields is None:
            texts = list(_string_leaves(value)) or [json.dumps(value, ensure_ascii=False, sort_keys=True)]
        else:
            texts = [
                t for path in fields for t in get_text_at_path(value, path if path == "$" else tokenize_path(path))
            ]
        text = "\n".join(t for t in texts if t.strip())
        return text[: min(self.max_index_chars, self.engine.config.write.max_content_chars)] or None

    # -- ops -------------------------------------------------------------------------------------
    def _get(self, op: GetOp) -> Item | None:
        found: list[Memory] = []
        for engine_ns in self._read_namespaces(op.namespace):
            found = self._live(self._stored(engine_ns, [op.key]))
            if found:
                break
        if not found:
            return None
        self._refresh(found[-1:], op.refresh_ttl)
        return self._item(found[-1])

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        candidates: list[tuple[Memory, Item, str]] = []
        for engine_ns, namespace in self._spaces():
            if namespace[: len(prefix)] != prefix:
                continue
            for m in self._live(self._stored(engine_ns)):
                item = self._item(m)
                if not op.filter or all(_compare(item.value.get(k), v) for k, v in op.filter.items()):
                    candidates.append((m, item, engine_ns))
        # InMemoryStore's order: namespaces in order of first write, items in order of first write.
        first: dict[str, int] = {}
        for m, _, ns in candidates:
            order = m.metadata[ITEM_KEY]["order"]
            first[ns] = min(first.get(ns, order), order)
        candidates.sort(key=lambda c: (first[c[2]], c[0].metadata[ITEM_KEY]["order"]))
        if op.query:
            ranks: dict[str, float] = {}
            by_space: dict[str, int] = {}
            for m, _, ns in candidates:
                if m.indexed:
                    by_space[ns] = by_space.get(ns, 0) + 1
            for ns, count in by_space.items():
                result = self.engine.recall(  # the namespace's own items only: see the module's docstring
                    op.query, ns, k=min(count, _MAX_K), budget_tokens=_SEARCH_BUDGET, layers=[LAYER], shared=False
                )
                ranks.update({hit.memory.id: hit.score for hit in result.hits})
            ranked = sorted((c for c in candidates if c[0].id in ranks), key=lambda c: -ranks[c[0].id])
            candidates = ranked + [c for c in candidates if c[0].id not in ranks]
        page = candidates[op.offset : op.offset + op.limit]
        scores = self._similarities(op.query, [m for m, _, _ in page]) if op.query else {}
        self._refresh([m for m, _, _ in page], op.refresh_ttl)
        return [
            SearchItem(
                namespace=item.namespace,
                key=item.key,
                value=item.value,
                created_at=item.created_at,
                updated_at=item.updated_at,
                score=scores.get(m.id),
            )
            for m, item, _ in page
        ]

    def _similarities(self, query: str, memories: Sequence[Memory]) -> dict[str, float]:
        """Each indexed memory's cosine similarity to ``query``, as ``InMemoryStore`` with an index scores:
        the query embedded once as a query, each item by the vector the engine stored for its text (the
        one recall read; computed and cached only if it is missing). In [-1, 1]; recall's own score is a
        fused rank of several channels, on no scale a LangGraph user could read."""
        indexed = [m for m in memories if m.indexed]
        if not indexed:
            return {}
        query_vector = np.asarray(self.engine.embedder.embed_query(query), dtype=np.float64)
        vectors = self.engine.outbox.vectors_for(indexed)
        query_norm = float(np.linalg.norm(query_vector))
        scores: dict[str, float] = {}
        for m in indexed:
            vector = np.asarray(vectors[m.id], dtype=np.float64)
            norm = float(np.linalg.norm(vector)) * query_norm
            cosine = float(vector @ query_vector) / norm if norm > 0 else 0.0
            scores[m.id] = min(1.0, max(-1.0, cosine))
        return scores

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        spaces = [ns for _, ns in self._spaces()]
        if op.match_conditions:
            spaces = [ns for ns in spaces if all(_matches(c, ns) for c in op.match_conditions)]
        if op.max_depth is not None:
            spaces = [ns[: op.max_depth] for ns in spaces]
        return sorted(set(spaces))[op.offset : op.offset + op.limit]

    def _prepare_put(self, op: PutOp) -> tuple[str, list[Memory], dict[str, Any] | None]:
        """Everything checked before anything changes: a refused put leaves the store as it was."""
        from hindsight_core.integration import PINNED

        engine_ns = self.engine_namespace(op.namespace)
        check_text(op.key, what="key", max_chars=500)
        existing = [m for ns in self._read_namespaces(op.namespace) for m in self._stored(ns, [op.key])]
        if op.value is None:
            return engine_ns, existing, None
        if not isinstance(op.value, dict):
            raise InvalidInputError(f"a store value must be a dict, got {type(op.value).__name__}")
        if (
            op.index is not None
            and op.index is not False
            and (isinstance(op.index, str) or not all(isinstance(p, str) for p in op.index))
        ):
            raise InvalidInputError("index must be False, None or a list of JSON paths")
        ttl = op.ttl if op.ttl is not None else (self.ttl_config or {}).get("default_ttl")
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float) or ttl <= 0):
            raise InvalidInputError("ttl must be a positive number of minutes or None")
        clock = self.engine.now()
        now = clock.isoformat()
        live = self._live(existing)
        previous = live[-1].metadata[ITEM_KEY] if live else None
        value = check_metadata(dict(op.value))
        text = self._text(value, op.index)
        return (
            engine_ns,
            existing,
            {
                "content": text if text is not None else op.key,
                "index": text is not None,
                "metadata": check_metadata(
                    {
                        PINNED: True,  # an item is read back by key: the sweep must never archive it
                        ITEM_KEY: {
                            "namespace": list(op.namespace),
                            "key": op.key,
                            "value": value,
                            "created_at": previous["created_at"] if previous else now,
                            "updated_at": now,
                            "order": previous["order"] if previous else time.time_ns(),
                            "index": op.index if op.index is not None else None,
                            "ttl": ttl,
                            "expires_at": (clock + timedelta(minutes=ttl)).isoformat() if ttl is not None else None,
                        }
                    }
                ),
            },
        )

    def _put(self, op: PutOp) -> None:
        # Serialised so two threads writing one key keep the created_at/order the first put chose.
        with _PUT_LOCK:
            self._put_locked(op)

    def _put_locked(self, op: PutOp) -> None:
        engine_ns, existing, record = self._prepare_put(op)
        if record is None:
            for m in existing:
                self.engine.forget(m.id, namespace=m.namespace)
            return
        # One transaction replaces the item: a reader never finds the key missing, a crash keeps one value.
        self.engine.upsert(
            record["content"],
            engine_ns,
            layer=LAYER,
            kind="fact",
            role=None,
            source_id=op.key,
            metadata=record["metadata"],
            index=record["index"],
        )
        for m in existing:  # the copy a put before ``user_label`` left in the store: layout, moved now
            if m.namespace != engine_ns:
                self.engine.forget(m.id, namespace=m.namespace)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        for op in ops:
            _validate_op_namespace(op)
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            elif isinstance(op, PutOp):
                puts.pop((tuple(op.namespace), op.key), None)
                puts[(tuple(op.namespace), op.key)] = op
                results.append(None)
            else:
                raise ValueError(f"Unknown operation type: {type(op)}")
        for op in puts.values():
            self._prepare_put(op)  # validate the whole batch before the first write
        for op in puts.values():
            self._put(op)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    def __repr__(self) -> str:
        return f"HindsightStore(root={self.root!r}, user_label={self.user_label!r}, engine={self.engine!r})"


__all__ = ["HindsightStore"]
