"""Without its framework an adapter fails at import with an ImportError that names the extra."""

from __future__ import annotations

import importlib
import sys

import pytest

from hindsight_core import MissingExtraError

CASES = [
    ("langchain_classic", "hindsight_langchain.memory", "HindsightMemory"),
    ("langgraph", "hindsight_langchain.store", "HindsightStore"),
    ("langchain", "hindsight_langchain.middleware", "HindsightMemoryMiddleware"),
    ("langchain_core", "hindsight_langchain.chat_history", "HindsightChatMessageHistory"),
]


@pytest.mark.parametrize(("missing", "module", "name"), CASES)
def test_missing_framework_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, missing: str, module: str, name: str
) -> None:
    for loaded in [m for m in sys.modules if m == missing or m.startswith(f"{missing}.")]:
        monkeypatch.delitem(sys.modules, loaded)
    monkeypatch.setitem(sys.modules, missing, None)  # what an uninstalled package looks like to import
    for ours in [m for m in sys.modules if m.startswith("hindsight_langchain")]:
        monkeypatch.delitem(sys.modules, ours)
    with pytest.raises(ImportError, match=r"pip install 'hindsight-memory\[langchain\]'") as error:
        getattr(importlib.import_module("hindsight_langchain"), name)
    assert isinstance(error.value, MissingExtraError)
    with pytest.raises(ImportError, match=r"hindsight-memory\[langchain\]"):
        importlib.import_module(module)


def test_importing_the_package_needs_no_framework() -> None:
    import subprocess

    code = (
        "import sys; import hindsight_langchain; "
        "assert not any(m.startswith(('langchain', 'langgraph')) for m in sys.modules), 'eager import'; "
        "print(sorted(hindsight_langchain.__all__))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "HindsightStore" in out.stdout
