"""``hindsight tune``: a JSONL of labelled questions in, the held-out before/after table and a tuned
configuration out, which an engine then loads."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from hindsight_core import Hindsight, HindsightConfig

from ..recall.test_tuning import ANSWERABLE, FACTS, NS, OFF_TOPIC, PERMISSIVE

#: Questions judged on what must not come with their answer: a memory the permissive floor's five hits
#: carry beside it and a sound floor leaves out, far below the answer's evidence, so that the last bits
#: of another CPU's float arithmetic move none across a bar ("What car do I drive?" with "I run five
#: kilometres…" forbidden was one: on one machine a floor tuned to 0.37 left it out, on another not below
#: the shipped 1.47).
GUARDED = [("What's the name of our cat?", "car"), ("Do I drink coffee?", "penicillin"),
           ("How often do I go running?", "japanese"), ("When is my birthday?", "son")]


def _tune(data_dir: Path, clock: Any, embedder: Any, *args: str, config: HindsightConfig | None = None) -> Any:
    from hindsight_core.cli.app import app

    obj: dict[str, Any] = {"clock": clock, "embedder": embedder}
    if config is not None:
        obj["config"] = config  # the engine's own settings (an application passes its HindsightConfig)
    return CliRunner().invoke(app, ["--path", str(data_dir), "--no-progress", "tune", *args], obj=obj)


def test_tune_writes_a_configuration_that_keeps_off_topic_questions_out(
    open_engine: Callable[[Path], Hindsight], data_dir: Path, tmp_path: Path, clock: Any, embedder: Any
) -> None:
    hs = open_engine(data_dir)
    hs.record_many([{"content": text, "role": "user", "session_id": "s1", "source_id": sid} for sid, text in FACTS],
                   NS)
    hs.close()
    lines = [{"question": q, "answers": [sid]} for q, sid in ANSWERABLE] + [
        {"question": q, "answers": []} for q in OFF_TOPIC] + [
        {"question": q, "forbid": [sid]} for q, sid in GUARDED]  # guarded: judged on forbid alone
    examples = tmp_path / "examples.jsonl"
    examples.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n", encoding="utf-8")
    permissive = HindsightConfig()
    permissive.recall.floor_anchor_base = PERMISSIVE
    out = tmp_path / "tuned.json"

    result = _tune(data_dir, clock, embedder, str(examples), "-n", NS, "--out", str(out), "--json", config=permissive)

    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    held = report["held_out"]["unanswerable questions given nothing"]
    assert int(held["tuned"].split("/")[0]) >= int(held["today"].split("/")[0]) + 6
    assert report["improved"] and report["written"] == str(out)
    # the permissive bar injects the forbidden memory beside the answer; the tuned one less often held out
    guarded = report["held_out"]["guarded questions given nothing forbidden"]
    assert guarded["today"] == "0/4" and int(guarded["tuned"].split("/")[0]) >= 3
    assert len(report["curve"]) == 13 and {"floor_anchor_base", "answered", "quiet"} <= set(report["curve"][0])
    tuned = HindsightConfig.model_validate_json(out.read_text(encoding="utf-8"))
    assert tuned.recall.floor_anchor_base == report["fitted"]["floor_anchor_base"] > PERMISSIVE
    with Hindsight(data_dir, config=tuned, clock=clock, embedder=embedder, background_consolidation=False) as hs:
        given = [q for q in OFF_TOPIC if hs.recall(q, NS, subtree=True, track=False).hits]
        beside = {q: [h.memory.source_id for h in hs.recall(q, NS, subtree=True, track=False).hits]
                  for q, _ in GUARDED}
    assert len(given) <= 2
    answer = dict(ANSWERABLE)
    assert {q: (answer[q] in beside[q], forbidden in beside[q]) for q, forbidden in GUARDED} == {
        q: (True, False) for q, _ in GUARDED}, beside

    table = _tune(data_dir, clock, embedder, str(examples), "-n", NS, config=permissive)
    assert table.exit_code == 0
    assert "unanswerable questions given nothing" in table.stdout
    assert "guarded questions given nothing forbidden" in table.stdout and "guarded given nothing" in table.stdout
    assert "the operating points tried" in table.stdout and "(tuned)" in table.stdout
    assert f"recall.floor_anchor_base: {PERMISSIVE:g} -> " in table.stdout
    assert "--out FILE writes the tuned configuration" in table.stdout


def test_tune_refuses_too_few_or_malformed_examples(
    data_dir: Path, tmp_path: Path, clock: Any, embedder: Any
) -> None:
    few = tmp_path / "few.jsonl"
    few.write_text('{"question": "What car do I drive?", "answers": ["car"]}\n', encoding="utf-8")
    result = _tune(data_dir, clock, embedder, str(few), "-n", NS)
    assert result.exit_code == 2 and "too few examples" in result.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q"}\n', encoding="utf-8")
    result = _tune(data_dir, clock, embedder, str(bad), "-n", NS)
    assert result.exit_code == 2 and "line 1: answers must be" in result.output
    missing = _tune(data_dir, clock, embedder, str(tmp_path / "absent.jsonl"))
    assert missing.exit_code == 2 and "cannot read" in missing.output
