"""Both notebooks run headless, print no warning, and show their figures with the story the engine told.

The notebooks are read on GitHub with their committed outputs, so a warning printed by an upstream
library, a missing figure or a plot whose story no longer matches what the engine did is a visible
defect. The kernel runs with ``MPLBACKEND=Agg``, as on a CI machine without a display: figures must
still reach the output as PNG images."""

from __future__ import annotations

import functools
import os
import struct
from base64 import b64decode
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
#: notebook -> the least number of PNG figures it shows
FIGURES = {"langchain_quickstart.ipynb": 1, "llamaindex_agent.ipynb": 2}


@functools.cache
def _execute(name: str) -> Any:
    """Each notebook runs once per test session, however many tests read its outputs."""
    path = NOTEBOOKS / name
    nb = nbformat.read(path, as_version=4)
    saved = {key: os.environ.pop(key, None) for key in ("OPENAI_API_KEY", "MPLBACKEND")}
    os.environ["MPLBACKEND"] = "Agg"  # the kernel inherits it: no display, no inline backend forced
    try:
        NotebookClient(
            nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
        ).execute()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return nb


@pytest.fixture(params=sorted(FIGURES))
def executed(request: pytest.FixtureRequest) -> tuple[str, Any]:
    return request.param, _execute(request.param)


def _outputs(nb: Any) -> list[dict[str, Any]]:
    return [out for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])]


def _texts(out: dict[str, Any]) -> list[str]:
    """Every piece of text an output shows a reader: streams, reprs, markdown, tracebacks."""
    data = out.get("data", {})
    texts = [out.get("text", ""), data.get("text/plain", ""), data.get("text/markdown", "")]
    texts += out.get("traceback", [])
    return [t if isinstance(t, str) else "".join(t) for t in texts if t]


def _text(nb: Any) -> str:
    return "\n".join(t for out in _outputs(nb) for t in _texts(out))


def _png_size(encoded: str) -> tuple[int, int]:
    raw = b64decode(encoded)
    assert raw[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG image"
    width, height = struct.unpack(">II", raw[16:24])  # the IHDR chunk comes first
    return width, height


def test_notebook_prints_no_warning_or_error(executed: tuple[str, Any]) -> None:
    name, nb = executed
    outputs = _outputs(nb)
    assert not [o for o in outputs if o["output_type"] == "error"], f"{name}: a cell raised"
    stderr = [o.get("text", "") for o in outputs if o["output_type"] == "stream" and o.get("name") == "stderr"]
    assert stderr == [], f"{name} printed to stderr: {stderr}"
    warned = [t for o in outputs for t in _texts(o) if "warning" in t.lower()]
    assert warned == [], f"{name} printed a warning: {warned}"


def test_notebook_shows_its_figures_as_png(executed: tuple[str, Any]) -> None:
    name, nb = executed
    images = [o["data"]["image/png"] for o in _outputs(nb) if "image/png" in o.get("data", {})]
    assert len(images) >= FIGURES[name], f"{name}: {len(images)} figures, expected {FIGURES[name]}"
    for encoded in images:
        width, height = _png_size(encoded)
        assert width >= 600 and height >= 150, f"{name}: a figure of {width}x{height} px is unreadable"
    assert "<Figure size" not in _text(nb), f"{name}: a figure was shown as its repr, not as an image"


def test_year_of_activation_matches_what_sweep_did() -> None:
    nb = _execute("llamaindex_agent.ipynb")
    rows = {line.split("  ")[0]: line for line in _text(nb).splitlines() if line.startswith(("fact: ", "episode: "))}
    assert "archived on day" in rows["episode: whale documentary"]  # never recalled: cold, then archived
    assert "archived on day" in rows["fact: hotel rooftop (importance 2)"]  # never recalled, not standing
    allergy = rows["fact: peanut allergy (importance 4)"]
    assert " active " in allergy and "kept while current" in allergy  # a standing fact: the sweep holds it
    assert " active " in rows["fact: Lisbon budget"]  # recalled until May, fading slowly since
    text = _text(nb)
    archive = text.split("….jsonl holds:")[1].split("\n\n")[0]  # the archive file, read back
    assert "'Yesterday I watched a documentary about whales'" in archive
    assert "'The hotel in Porto had a rooftop bar'" in archive
    assert "peanuts" not in archive and "Lisbon" not in archive
    assert "The user lives in Berlin" in text and "-> 'The user lives in Lisbon'" in text  # the conflict
    prompt = text.split("recall now injects:")[1].split("conflicts resolved")[0]
    assert "Lisbon" in prompt and "Paris" not in prompt and "Berlin" not in prompt
    assert "recall offers: ['book a flight → 1. ask for the budget" in text  # the latest procedure


def test_recall_breakdown_shows_channels_and_injected_prompt() -> None:
    nb = _execute("langchain_quickstart.ipynb")
    tables = [o["data"]["text/markdown"] for o in _outputs(nb) if "text/markdown" in o.get("data", {})]
    assert tables, "the breakdown table is missing"
    header = tables[0].splitlines()[2]
    for column in ("vector", "keyword", "activation", "final score", "why"):
        assert column in header
    # the distilled fact stands for the episode it came from (one hit per fact); the prompt quotes both
    assert "The user's budget is 3000 euros" in tables[0]
    assert "My budget for the Lisbon trip is 3000 euros." not in tables[0]
    injected = _text(nb).split("exactly what is injected into the prompt:")[1]
    assert injected.lstrip().startswith("Relevant memories (quoted notes")
    assert '"My budget for the Lisbon trip is 3000 euros."' in injected
