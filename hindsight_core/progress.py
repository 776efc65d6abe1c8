"""Progress reporting for long operations (``progress=`` in the API, bars in the CLI).

``progress`` is ``False`` (silent), ``True`` (a tqdm bar on stderr, like ``record_many``) or a callable
``(done, total)`` for callers that draw their own (the CLI's rich bars). tqdm is imported only when a bar
is asked for."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any

from hindsight_core.errors import InvalidInputError

#: What ``progress=`` accepts: a flag, or a callback told ``(done, total)`` after each step.
Progress = bool | Callable[[int, int], None]


class Tracker:
    """One long operation's progress; a context manager that closes its bar."""

    def __init__(self, progress: Progress, total: int, desc: str, unit: str) -> None:
        if not isinstance(progress, bool) and not callable(progress):
            raise InvalidInputError(f"progress must be a bool or a callable(done, total), got {progress!r}")
        self.total = int(total)
        self.done = 0
        self._callback = progress if callable(progress) and not isinstance(progress, bool) else None
        self._bar: Any = None
        if progress is True:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=self.total, desc=desc, unit=unit)

    def grow(self, extra: int) -> None:
        """More work was discovered (the number of steps is known only as the operation runs)."""
        self.total += int(extra)
        if self._bar is not None:
            self._bar.total = self.total
            self._bar.refresh()

    def advance(self, steps: int = 1) -> None:
        self.done += int(steps)
        if self._bar is not None:
            self._bar.update(int(steps))
        if self._callback is not None:
            self._callback(self.done, self.total)

    def __enter__(self) -> Tracker:
        if self._callback is not None:
            self._callback(0, self.total)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.close()


def track(progress: Progress, total: int, desc: str, unit: str = "item") -> Tracker:
    return Tracker(progress, total, desc, unit)
