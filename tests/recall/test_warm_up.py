"""``warm_up()`` loads, once per process, what the first recall would: the embedder's model, jieba's
dictionary, the floor's background vectors and the sentence-kind classifiers. Run in a fresh interpreter,
since the test session has loaded most of it already. What it saves is timed in benchmarks/cold_start.py
(docs/benchmark-log.md), not here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = r"""
import json, sys
from hindsight_core import Hindsight, HindsightConfig
from hindsight_core.recall import keyword, sentence_kinds
from hindsight_core.text import entities

config = HindsightConfig()
config.recall.warm_up_on_open = sys.argv[2] == "on-open"
hs = Hindsight(sys.argv[1], background_consolidation=False, config=config)
before = {"model": hs.embedder._model is not None, "jieba": "jieba" in sys.modules}
if sys.argv[2] == "explicit":
    hs.warm_up()
    hs.warm_up()  # idempotent
else:
    hs._warming.join()
pipeline = hs._recall.built
after = {
    "model": hs.embedder._model is not None, "jieba": keyword._jieba is not None,
    "pos_tagger": entities._posseg is not None and "jieba.posseg" in sys.modules,
    "background": pipeline is not None and pipeline._background is not None,
    "sentence_kinds": (hs.embedder.name, hs.embedder.dim) in sentence_kinds._fitted,
}
hs.record("我对花生过敏。", "user:w")
hits = [h.memory.content for h in hs.recall("我对什么过敏？", "user:w").hits]
hs.close()
print(json.dumps({"before": before, "after": after, "hits": hits}))
"""


@pytest.mark.integration  # a fresh interpreter with the real model
@pytest.mark.parametrize("mode", ["explicit", "on-open"])
def test_warm_up_loads_what_the_first_recall_needs(tmp_path: Path, mode: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "ANONYMIZED_TELEMETRY": "False"}
    out = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "data"), mode], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    if mode == "explicit":  # opening loads nothing (with warm_up_on_open the thread may have begun)
        assert report["before"] == {"model": False, "jieba": False}
    assert report["after"] == {"model": True, "jieba": True, "pos_tagger": True, "background": True,
                               "sentence_kinds": True}
    assert report["hits"] == ["我对花生过敏。"]


def test_close_waits_for_a_warm_up_in_flight(tmp_path: Path, embedder: object) -> None:
    from hindsight_core import Hindsight, HindsightConfig

    config = HindsightConfig()
    config.recall.warm_up_on_open = True
    hs = Hindsight(tmp_path / "data", config=config, embedder=embedder, background_consolidation=False)  # type: ignore[arg-type]
    hs.close()  # while the thread may still be loading: no error, and the thread is done
    assert hs._warming is not None and not hs._warming.is_alive()
