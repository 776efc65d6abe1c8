"""Eviction: hot → cold → JSONL archive, and back (DESIGN.md "Lifecycle", evict).

An archive is one JSONL file per namespace under ``<data dir>/archive``. Each line is a whole memory
with its external id and edges; the line is written and fsynced *before* the memory is deleted, so a
crash between the two leaves a duplicate line (restore skips ids already present), never a loss."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from hindsight_core.errors import InvalidInputError
from hindsight_core.store.sql import RelationalStore
from hindsight_core.types import Edge, Memory
from hindsight_core.validation import check_namespace

FORMAT = "hindsight-archive/1"


def archive_file(root: Path, namespace: str) -> Path:
    """``user:42`` → ``<root>/user%3A42.jsonl`` (namespaces may hold ``:`` and ``/``)."""
    return root / f"{quote(namespace, safe='')}.jsonl"


def external_ids(store: RelationalStore, ids: list[str]) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        for mid, ext in store.query(f"SELECT id, external_id FROM memories WHERE id IN ({marks})", chunk):
            found[mid] = ext
    return found


def records(
    store: RelationalStore, memories: list[Memory], archived_at: str, reason: str
) -> list[dict[str, Any]]:
    ext = external_ids(store, [m.id for m in memories])
    out = []
    for m in memories:
        edges = store.edges(m.id, direction="out") + store.edges(m.id, direction="in")
        out.append(
            {
                "format": FORMAT,
                "archived_at": archived_at,
                "reason": reason,
                "external_id": ext.get(m.id),
                "memory": m.model_dump(mode="json"),
                "edges": [e.model_dump(mode="json") for e in edges],
            }
        )
    return out


def append(path: Path, lines: Iterable[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        for line in lines:
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def read(path: Path) -> list[tuple[Memory, str | None, list[Edge]]]:
    """Every record of an archive (the last line of an id wins); raises before anything is restored."""
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidInputError(f"archive_path must be a path, got {type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"no archive file at {str(path)!r}")
    found: dict[str, tuple[Memory, str | None, list[Edge]]] = {}
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if data.get("format") != FORMAT:
                    raise ValueError(f"unknown format {data.get('format')!r}")
                memory = Memory.model_validate(data["memory"])
                check_namespace(memory.namespace)  # a hand-edited archive must not bypass the namespace rules
                edges = [Edge.model_validate(e) for e in data.get("edges", [])]
                ext = data.get("external_id")
            except Exception as exc:
                raise InvalidInputError(f"{path}:{number} is not an archive record: {exc}") from exc
            found[memory.id] = (memory, ext if isinstance(ext, str) else None, edges)
    return list(found.values())
