"""``sweep --dry-run`` predicts the real sweep and changes nothing; ``progress=`` on the long operations."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from hindsight_core import Hindsight, InvalidInputError


def _state(hs: Hindsight, namespace: str) -> list[tuple[str, str, float]]:
    return [(m.id, m.status.value, m.activation.ref_time) for m in hs.find(namespace)]


def test_sweep_dry_run_changes_nothing_and_predicts_the_real_sweep(
    cli: Callable[..., Any], open_engine: Callable[[Path], Hindsight], data_dir: Path, clock: Any
) -> None:
    hs = open_engine(data_dir)
    ancient = hs.record("I used to play the oboe", "u1", source_id="a")
    clock.advance(days=60)
    hs.sweep()  # the oboe, 60 days idle, goes cold (the archive takes 90)
    faded = hs.record("I visited Ghent once", "u1", source_id="b")
    pinned = hs.record("my locker code is 4711", "u1", metadata={"pinned": True})
    clock.advance(days=25)
    fresh = hs.record("I start a new job on Monday", "u1", source_id="c")
    clock.advance(days=10)
    before = _state(hs, "u1")
    assert [s for _, s, _ in before] == ["cold", "active", "active", "active"]
    archive = hs.archive_path("u1")
    hs.close()

    when = clock().isoformat()
    planned = cli("sweep", "--dry-run", "--now", when, "--json").json()
    assert planned["dry_run"] is True
    assert planned["cooled_ids"] == [faded.id]  # 35 days idle; the pinned one never fades
    assert planned["archived_ids"] == [ancient.id]  # cold and idle past 90 days
    upcoming = planned["upcoming"]
    assert [u["id"] for u in upcoming] == [fresh.id]  # next to go cold if not recalled
    assert upcoming[0]["cold_at"] > when
    hs = open_engine(data_dir)
    assert _state(hs, "u1") == before and not archive.exists()
    hs.close()

    # 90 days on, nothing swept meanwhile: what cools in a sweep is archived by the same sweep when old enough
    clock.advance(days=90)
    later = clock().isoformat()
    plan = cli("sweep", "--dry-run", "--now", later, "--json").json()
    human = cli("sweep", "--dry-run", "--now", later)
    assert human.exit_code == 0 and "dry run: nothing changed" in human.stdout and ancient.id in human.stdout
    hs = open_engine(data_dir)
    assert _state(hs, "u1") == before and not archive.exists()
    real = hs.sweep()
    assert real.dry_run is False
    assert real.cooled_ids == plan["cooled_ids"] and real.archived_ids == plan["archived_ids"]
    assert set(plan["cooled_ids"]) == {faded.id, fresh.id}
    assert set(plan["archived_ids"]) == {ancient.id, faded.id, fresh.id}
    assert plan["archives"] == {"u1": str(archive)} and archive.exists()
    assert hs.get(pinned.id) is not None and hs.get(ancient.id) is None
    hs.close()
    done = cli("sweep", "--json").json()
    assert (done["cooled"], done["archived"]) == (0, 0)
    assert cli("sweep", "--now", "yesterday").exit_code == 2


def test_forecast_matches_when_the_sweep_cools(open_engine: Callable[[Path], Hindsight], data_dir: Path,
                                               clock: Any) -> None:
    from hindsight_core.lifecycle.forecast import forecast

    hs = open_engine(data_dir)
    m = hs.record("I visited Ghent once", "u1")
    cold_at = forecast(m, hs.config).cold_at
    assert cold_at is not None
    assert hs.sweep(cold_at - timedelta(minutes=1), dry_run=True).cooled_ids == []
    assert hs.sweep(cold_at + timedelta(minutes=1), dry_run=True).cooled_ids == [m.id]
    with pytest.raises(InvalidInputError):
        hs.sweep(dry_run="yes")  # type: ignore[arg-type]


def test_show_and_the_dry_run_agree_with_the_sweep_that_a_standing_fact_is_held(
    cli: Callable[..., Any], open_engine: Callable[[Path], Hindsight], data_dir: Path, clock: Any
) -> None:
    hs = open_engine(data_dir)
    allergy = hs.record("I'm allergic to aspirin, it gives me breathing trouble.", "u1")
    visit = hs.record("I visited Ghent once", "u1")
    hs.close()
    assert cli("show", allergy.id, "--json").json()["forecast"] == {
        "memory_id": allergy.id, "cold_at": None, "archive_at": None}
    assert cli("show", visit.id, "--json").json()["forecast"]["cold_at"] is not None
    clock.advance(days=400)
    plan = cli("sweep", "--dry-run", "--now", clock().isoformat(), "--json").json()
    assert plan["archived_ids"] == [visit.id]
    hs = open_engine(data_dir)
    assert hs.sweep().archived_ids == [visit.id]
    assert hs.get(allergy.id) is not None


def test_progress_callbacks_count_every_long_operation(
    open_engine: Callable[[Path], Hindsight], data_dir: Path, clock: Any, tmp_path: Path
) -> None:
    hs = open_engine(data_dir)
    hs.config.write.batch_size = 4
    seen: dict[str, list[tuple[int, int]]] = {}

    def recorder(name: str) -> Callable[[int, int], None]:
        return lambda done, total: seen.setdefault(name, []).append((done, total))

    events = [{"content": f"We went hiking in valley number {i} last weekend", "session_id": "s1"} for i in range(10)]
    hs.record_many(events, "u1", progress=recorder("record"))
    assert seen["record"][0] == (0, 10) and seen["record"][-1] == (10, 10) and len(seen["record"]) == 4
    hs.consolidate("u1", progress=recorder("consolidate"))
    assert seen["consolidate"][-1] == (10, 10)
    clock.advance(days=200)
    hs.sweep(progress=recorder("sweep"))
    done, total = seen["sweep"][-1]
    assert done == total >= 3  # expire/cool, archive selection, one namespace archived
    hs.reconcile(progress=recorder("reconcile"))
    assert seen["reconcile"][-1][0] == seen["reconcile"][-1][1]
    hs.record("I like tea", "u2")
    assert hs.reembed(progress=recorder("reembed")) == 1
    assert seen["reembed"][-1] == (1, 1)
    export = list(hs.export_namespace("u2"))
    other = open_engine(tmp_path / "other")
    report = other.import_namespace(export, progress=recorder("import"))
    assert report.memories == 1 and seen["import"][-1] == (1, 1)
    with pytest.raises(InvalidInputError):
        hs.reconcile(progress="loud")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        other.import_namespace([{"type": "memory"}])
    assert json.dumps(export)  # plain JSON


def test_progress_true_draws_a_tqdm_bar(open_engine: Callable[[Path], Hindsight], data_dir: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    hs = open_engine(data_dir)
    hs.record("I like tea", "u1")
    hs.reembed(progress=True)
    assert "re-embed" in capsys.readouterr().err


async def test_async_twins_of_the_new_operations(
    open_engine: Callable[[Path], Hindsight], data_dir: Path, tmp_path: Path
) -> None:
    hs = open_engine(data_dir)
    await hs.arecord("I like tea", "u1")
    assert await hs.areembed("u1") == 1
    assert (await hs.asweep(dry_run=True)).dry_run is True
    assert (await hs.aconsolidate("u1", progress=False)).namespace == "u1"
    records = await hs.aexport_namespace("u1")
    other = open_engine(tmp_path / "other")
    report = await other.aimport_namespace(records)
    assert report.memories == sum(1 for r in records if r["type"] == "memory") == len(hs.find("u1"))
    assert [m.model_dump() for m in other.find("u1")] == [m.model_dump() for m in hs.find("u1")]
