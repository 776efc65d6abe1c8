"""CI runs the LangChain quickstart notebook offline (scripted model) and checks what it shows."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "langchain_quickstart.ipynb"


def test_quickstart_notebook_runs_offline_and_shows_recall() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    env_key = os.environ.pop("OPENAI_API_KEY", None)  # the scripted path is the one CI can check
    try:
        NotebookClient(
            nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
        ).execute()
    finally:
        if env_key is not None:
            os.environ["OPENAI_API_KEY"] = env_key
    text = "\n".join(
        out.get("text", "") for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])
    )
    assert "Traceback" not in text
    ana, bob = text.split("system message Bob's thread got:")
    assert "System: Relevant memories" in text and "I'm allergic to peanuts." in text  # friday's prompt
    assert "window seats" in ana.split("system message Ana's thread got:")[1]
    assert "window seats" not in bob.split("('preferences', 'ana')")[0]
    assert "another user      : []" in text
