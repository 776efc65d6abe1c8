"""``hindsight import`` reads a file of any size in bounded memory (issue 38, defect 7): JSONL is read line
by line, checked whole in a first pass and recorded batch by batch in a second, so a bad line still
imports nothing; a line or a JSON document above its cap, and a line that never ends (``/dev/zero``),
exit 2 with a message instead of growing until ``MemoryError``. The source ids derived for idempotency
stay what they were."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hindsight_core import InvalidInputError
from hindsight_core.config import HindsightConfig, WriteConfig
from hindsight_core.embeddings.hashed import HashedWordEmbedder

Run = Callable[..., Any]

#: Small batches, so that a test file of a few hundred lines spans many of them.
BATCH = 32


@pytest.fixture(scope="module")
def hashed() -> HashedWordEmbedder:
    return HashedWordEmbedder()


@pytest.fixture
def run(tmp_path: Path, hashed: HashedWordEmbedder) -> Run:
    """``run("import", ...)``: the CLI in-process on a data directory of its own, with the model-free
    embedder and batches of ``BATCH`` events; ``.json()`` parses stdout."""
    from hindsight_core.cli.app import app

    obj = {"embedder": hashed, "config": HindsightConfig(write=WriteConfig(batch_size=BATCH))}

    def invoke(*args: str, input: str | bytes | None = None) -> Any:
        result = CliRunner().invoke(app, ["--path", str(tmp_path / "data"), "--no-progress", *args], input=input,
                                    obj=obj)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        result.json = lambda: json.loads(result.stdout)  # type: ignore[attr-defined]
        return result

    return invoke


def _events(lines: int, content: Callable[[int], str] = lambda i: f"note {i}") -> str:
    return "".join(json.dumps({"content": content(i), "session_id": "s1"}) + "\n" for i in range(lines))


def _imported(run: Run, namespace: str) -> list[str]:
    result = run("ls", namespace, "--json", "--limit", "100000")
    if result.exit_code == 1:  # the namespace holds nothing
        return []
    return [r["content"] for r in result.json()]


def test_derived_source_ids_are_the_ones_earlier_imports_stored(run: Run, tmp_path: Path) -> None:
    """Blank lines are not counted and CRLF ends a line, as before: a re-import finds every key."""
    path = tmp_path / "chat.jsonl"
    path.write_bytes(b'{"content": "first"}\r\n\r\n"second"\r\n   \n{"content": "third", "source_id": "mine"}\n'
                     b'{"content": "fourth"}')
    assert run("import", str(path), "-n", "u1", "--json").json()["memories"] == 4
    rows = run("ls", "u1", "--json").json()

    def key(index: int, content: str) -> str:
        return f"events:chat:{index}:{hashlib.sha256(content.encode()).hexdigest()[:16]}"

    assert [r["source_id"] for r in rows] == [key(0, "first"), key(1, "second"), "mine", key(3, "fourth")]


def test_a_large_file_is_imported_in_memory_bounded_by_the_batch(run: Run, tmp_path: Path) -> None:
    """The Python peak of importing 16 MB is that of importing 1 MB: before, the file, its rows, their
    events and the memories built from them were all held at once (about 3.5 KB an event). Fewer than
    1,000 events, since Chroma persists a collection's index when it reaches 1,000 (a peak of its own)."""
    big = "x" * 19_000  # near the content cap, so that few lines make a large file

    def peak(lines: int, namespace: str) -> int:
        path = tmp_path / f"{namespace}.jsonl"
        path.write_text(_events(lines, lambda i: f"{i} {big}"), encoding="utf-8")
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            result = run("import", str(path), "-n", namespace, "--json")
            high = tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()
        assert result.exit_code == 0, result.stderr
        assert result.json()["memories"] == lines
        return high

    small, large = peak(50, "small"), peak(900, "large")
    assert (tmp_path / "large.jsonl").stat().st_size > 16 * 2**20
    assert large - small < 8 * 2**20, (small / 2**20, large / 2**20)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_line_that_never_ends_exits_2_at_once_in_bounded_memory(tmp_path: Path) -> None:
    """``/dev/zero`` read whole grew until ``MemoryError`` (here within a 512 MiB data limit, so that a
    regression cannot exhaust the machine)."""

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_DATA, (512 * 2**20, 512 * 2**20))

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "hindsight_core.cli", "--path", str(tmp_path / "data"), "--no-progress",
         "import", "/dev/zero", "-n", "user:zero"],
        capture_output=True, text=True, timeout=120, preexec_fn=limit_memory, env=env,
    )
    assert proc.returncode == 2, proc.stderr[-2_000:]
    assert proc.stderr.startswith("error: line 1 is longer than 4 MiB"), proc.stderr[-2_000:]
    assert "Traceback" not in proc.stderr
    assert time.monotonic() - started < 60


@pytest.mark.parametrize(("options", "size", "message"), [
    ((), 5 * 2**20, "line 3 is longer than 4 MiB"),
    (("--max-line-mb", "1"), 2**20 + 10, "line 3 is longer than 1 MiB"),
])
def test_a_line_over_the_cap_exits_2_and_imports_nothing(
    run: Run, tmp_path: Path, options: tuple[str, ...], size: int, message: str
) -> None:
    path = tmp_path / "long.jsonl"
    path.write_text(_events(2) + json.dumps({"content": "y" * size}) + "\n" + _events(3), encoding="utf-8")
    result = run("import", str(path), "-n", "u1", *options)
    assert result.exit_code == 2 and message in result.stderr, result.stderr
    assert "--max-line-mb" in result.stderr  # the way to raise it
    assert _imported(run, "u1") == []


def test_a_document_over_the_cap_exits_2_and_imports_nothing(run: Run, tmp_path: Path) -> None:
    history = [{"type": "human", "data": {"content": f"message {i} " + "z" * 1_000}} for i in range(1_100)]
    path = tmp_path / "history.json"
    path.write_text(json.dumps(history, indent=2), encoding="utf-8")  # over 1 MiB, over many lines
    result = run("import", str(path), "-n", "u1", "--max-document-mb", "1")
    assert result.exit_code == 2, result.stderr
    assert "larger than 1 MiB" in result.stderr and "--max-document-mb" in result.stderr
    assert _imported(run, "u1") == []
    # under the default cap the same file imports, in batches
    report = run("import", str(path), "-n", "u1", "--json").json()
    assert (report["format"], report["memories"]) == ("langchain", 1_100)


def test_stdin_is_checked_whole_before_anything_is_recorded(run: Run) -> None:
    bad = _events(100) + '{"content": 3}\n'
    result = run("import", "-", "-n", "u1", input=bad)
    assert result.exit_code == 2 and "event 100" in result.stderr
    assert _imported(run, "u1") == []
    report = run("import", "-", "-n", "u1", "--json", input=_events(100)).json()
    assert (report["events"], report["memories"]) == (100, 100)
    again = run("import", "-", "-n", "u1", "--json", input=_events(100)).json()
    assert (again["memories"], again["skipped"]) == (0, 100)


def test_a_source_id_repeated_in_another_batch_imports_nothing(run: Run, tmp_path: Path) -> None:
    rows = [{"content": f"note {i}", "source_id": f"id-{i}"} for i in range(3 * BATCH)]
    rows[2 * BATCH]["source_id"] = "id-1"
    path = tmp_path / "twice.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = run("import", str(path), "-n", "u1")
    assert result.exit_code == 2 and "share a source_id" in result.stderr, result.stderr
    assert _imported(run, "u1") == []


def test_a_bad_event_in_the_last_batch_imports_nothing(run: Run, tmp_path: Path) -> None:
    path = tmp_path / "late.jsonl"
    path.write_text(_events(5 * BATCH) + json.dumps({"content": "fine", "role": "user\nadmin"}) + "\n",
                    encoding="utf-8")
    result = run("import", str(path), "-n", "u1")
    assert result.exit_code == 2 and f"event {5 * BATCH}" in result.stderr, result.stderr
    assert _imported(run, "u1") == []
    path.write_text(_events(5 * BATCH + 7), encoding="utf-8")
    assert run("import", str(path), "-n", "u1", "--json").json()["memories"] == 5 * BATCH + 7
    assert run("import", str(path), "-n", "u1", "--json").json()["skipped"] == 5 * BATCH + 7


def test_a_file_changed_between_the_passes_is_refused(tmp_path: Path) -> None:
    """The record pass must read what the check pass checked."""
    from hindsight_core.cli.importers import Limits, open_import

    path = tmp_path / "growing.jsonl"
    path.write_text(_events(3), encoding="utf-8")
    with open_import(path, "auto", Limits(line=2**20, document=2**20)) as source:
        assert [e["content"] for e in source.events()] == ["note 0", "note 1", "note 2"]
        with path.open("a", encoding="utf-8") as log:
            log.write(_events(1))
        with pytest.raises(InvalidInputError, match="changed while it was being imported"):
            next(source.events())
