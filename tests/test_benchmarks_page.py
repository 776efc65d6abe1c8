"""docs/benchmarks.md is exactly what ``benchmarks/report.py`` renders from ``benchmarks/results/``: the page
of today's figures cannot drift from the JSON the benchmarks wrote (re-render: python benchmarks/report.py)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _report() -> ModuleType:
    spec = importlib.util.spec_from_file_location("benchmarks_report", ROOT / "benchmarks" / "report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_is_what_the_results_render() -> None:
    report = _report()
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert page == report.render(ROOT / "benchmarks" / "results"), "run: python benchmarks/report.py"
    assert page.count("\n") < 220  # a page to read, not the log


def test_a_missing_benchmark_is_shown_as_not_measured(tmp_path: Path) -> None:
    report = _report()
    shutil.copy(ROOT / "benchmarks" / "results" / "machine.json", tmp_path / "machine.json")
    shutil.copy(ROOT / "benchmarks" / "results" / "locomo.json", tmp_path / "locomo.json")
    page = report.render(tmp_path)
    assert page.count("Not measured in this run.") == len(report.BENCHMARKS) - 1
    assert "| hindsight |" in page and "benchmark-log.md" in page


def test_compact_drops_per_question_rows_and_keeps_counts() -> None:
    report = _report()
    full = {"data": {"questions": 3}, "per_question": {"a": [1, 2]}, "off_topic": {"asked": 2, "margins": [0.1]}}
    assert report.compact(full) == {"data": {"questions": 3}, "off_topic": {"asked": 2}}
    assert json.loads(json.dumps(report.compact(full)))  # stays JSON


def test_a_vector_cache_refuses_another_models_vectors(tmp_path: Path) -> None:
    from benchmarks._measure import CachedEmbedder
    from hindsight_core.embeddings.hashed import HashedWordEmbedder

    first = CachedEmbedder(HashedWordEmbedder(name="words-a"), tmp_path)
    stored = first.embed_documents(["I live in Lisbon."])
    again = CachedEmbedder(HashedWordEmbedder(name="words-a"), tmp_path)
    assert again.has("I live in Lisbon.") and (again.embed_documents(["I live in Lisbon."]) == stored).all()
    with pytest.raises(ValueError, match="words-a"):
        CachedEmbedder(HashedWordEmbedder(name="words-b"), tmp_path)
