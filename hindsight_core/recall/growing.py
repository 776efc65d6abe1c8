"""Append-only containers shared by a namespace's snapshot and its successors.

A chat turn is a write followed by a recall, so the snapshot (``corpus.py``) is extended after every
write. Copying its lists and position map for each extension cost milliseconds at 100k memories, the
most of what a recall right after a write paid over a cached one. Here the storage is shared and only
ever appended to; each snapshot holds *views* bounded by the row count (and key count) it had, so an
extension costs the new rows, and a recall still running on an older snapshot sees exactly the rows it
started with: a view never reads an item appended after it was made.

Writers append under the namespace's growth lock (``corpus._Growth``); readers take no lock. That is
safe because a view reads only items that existed when it was made, and it never iterates a shared
dict (a dict another thread inserts into fails "dictionary changed size during iteration"): keys are
iterated from an append-only list, bounded by the view's key count."""

from __future__ import annotations

import bisect
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Generic, TypeVar

import numpy as np

T = TypeVar("T")
V = TypeVar("V")
R = TypeVar("R")


class GrowingList(Generic[T]):
    """A list only appended to; :meth:`view` is its first ``len`` items as they are now."""

    def __init__(self, items: Sequence[T] = ()) -> None:
        self._items: list[T] = list(items)

    def __len__(self) -> int:
        return len(self._items)

    def extend(self, items: Sequence[T]) -> None:
        self._items.extend(items)

    def view(self, overrides: Mapping[int, T] | None = None) -> ListView[T]:
        return ListView(self._items, len(self._items), overrides or {})


class ListView(Sequence[T]):
    """The first ``size`` items of a shared list, with some positions swapped (``overrides``: a row an
    update replaced in this snapshot and its successors, not in the older ones)."""

    def __init__(self, items: list[T], size: int, overrides: Mapping[int, T]) -> None:
        self._items = items
        self._size = size
        self.overrides = overrides

    def __len__(self) -> int:
        return self._size

    @typing.overload
    def __getitem__(self, i: int) -> T: ...
    @typing.overload
    def __getitem__(self, i: slice) -> list[T]: ...
    def __getitem__(self, i: int | slice) -> T | list[T]:
        if type(i) is int and 0 <= i < self._size:  # the usual case, read per candidate: checked first
            found = self.overrides.get(i) if self.overrides else None
            return self._items[i] if found is None else found
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._size))]
        i = int(i)
        if i < 0:
            i += self._size
        if not 0 <= i < self._size:
            raise IndexError(i)
        found = self.overrides.get(i) if self.overrides else None
        return self._items[i] if found is None else found

    def __iter__(self) -> Iterator[T]:
        if self.overrides:
            return (self[i] for i in range(self._size))
        return iter(self._items[: self._size])


class GrowingArray:
    """A numpy array with spare capacity, appended to in place (doubling when full). A view is
    ``buffer[:n]``: rows below ``n`` are never written again, and a view of an outgrown buffer keeps
    the old buffer alive unchanged. The initial rows may be a read-only memory map; they are copied the
    first time something is appended."""

    def __init__(self, rows: np.ndarray) -> None:
        self._buffer = rows
        self.size = len(rows)

    def append(self, rows: np.ndarray) -> np.ndarray:
        """Append ``rows``; the view of every row so far."""
        need = self.size + len(rows)
        if need > len(self._buffer) or not self._buffer.flags.writeable:
            grown = np.zeros((max(need, 2 * len(self._buffer), 64), *self._buffer.shape[1:]), dtype=self._buffer.dtype)
            grown[: self.size] = self._buffer[: self.size]
            self._buffer = grown
        self._buffer[self.size : need] = rows
        self.size = need
        return self._buffer[:need]

    def view(self) -> np.ndarray:
        return self._buffer[: self.size]


class GrowingMap(Generic[V]):
    """A dict whose keys are only added (values may be replaced by the writer); :meth:`view` sees the
    keys present when it was made."""

    def __init__(self, items: Mapping[str, V] | None = None) -> None:
        self.keys: list[str] = []
        self.values: dict[str, V] = {}
        self._ordinal: dict[str, int] = {}
        for key, value in (items or {}).items():
            self.set(key, value)

    def __len__(self) -> int:
        return len(self.keys)

    def get(self, key: str) -> V | None:
        return self.values.get(key)

    def set(self, key: str, value: V) -> None:
        if key not in self._ordinal:
            self._ordinal[key] = len(self.keys)
            self.keys.append(key)
        self.values[key] = value

    def view(self, read: Callable[[V], R | None]) -> MapView[R]:
        """The keys present now, each value as ``read`` gives it (``None``: absent from the view)."""
        return MapView(self, len(self.keys), read)

    def ordinal(self, key: str) -> int | None:
        return self._ordinal.get(key)


class MapView(Mapping[str, R]):
    """A :class:`GrowingMap` as it was with ``count`` keys."""

    def __init__(self, source: GrowingMap[typing.Any], count: int, read: Callable[[typing.Any], R | None]) -> None:
        self._source = source
        self._count = count
        self._read = read

    def __getitem__(self, key: str) -> R:
        ordinal = self._source.ordinal(key)
        if ordinal is None or ordinal >= self._count:
            raise KeyError(key)
        value = self._read(self._source.values[key])
        if value is None:
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        source = self._source
        for key in source.keys[: self._count]:
            if self._read(source.values[key]) is not None:
                yield key

    def __len__(self) -> int:
        return sum(1 for _ in self)


def members_below(size: int) -> Callable[[list[int]], list[int] | None]:
    """For a :class:`GrowingMap` of ascending member lists: the members below ``size`` (a copy, since
    the writer appends to the shared list), ``None`` when there are none."""

    def read(members: list[int]) -> list[int] | None:
        cut = len(members) if not members or members[-1] < size else bisect.bisect_left(members, size)
        return members[:cut] if cut else None

    return read


class Positions(Mapping[str, int]):
    """Memory id → position among the first ``size`` rows. The dict is shared and only grows; an id
    appended beyond this view's rows is not in it. Iteration follows position order (the ids list)."""

    def __init__(self, index: dict[str, int], ids: Sequence[str], size: int) -> None:
        self._index = index
        self._ids = ids
        self._size = size

    def __getitem__(self, memory_id: str) -> int:
        i = self._index[memory_id]
        if i >= self._size:
            raise KeyError(memory_id)
        return i

    def get(self, memory_id: str, default: typing.Any = None) -> typing.Any:
        i = self._index.get(memory_id)
        return default if i is None or i >= self._size else i

    def __contains__(self, memory_id: object) -> bool:
        i = self._index.get(memory_id) if isinstance(memory_id, str) else None
        return i is not None and i < self._size

    def __iter__(self) -> Iterator[str]:
        return (self._ids[i] for i in range(self._size))

    def __len__(self) -> int:
        return self._size
