"""What reinforcement costs a recall on the Redis activation index, batched and not (issue 30).

Each injected memory is reinforced: its activation row in the relational store and its key in the
namespace's Redis ZSET move. The recorder buffers recalls and writes them in one transaction and one
ZADD per namespace and layer once ``recall.reinforce_batch`` recalls (or ``reinforce_max_age_s``) have
gathered, off the caller's thread. This runs the same chat (a recall, then the turn recorded: the
write-heavy case, every turn changes the namespace) on two engines over one private ``redis-server``,
one flushing after every recall (``reinforce_batch=1``) and one at the default, calls alternated so both
see the same machine load, and reports per recall: wall time, process CPU time (the background flush
included), Redis commands (``INFO commandstats``, per database) and flushes.

    .venv/bin/python benchmarks/reinforce_batch.py --memories 1000 --turns 300 [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from hindsight_core import Hindsight, HindsightConfig
from hindsight_core.embeddings.hashed import HashedWordEmbedder

NAMESPACE = "user:bench"
TOPICS = ("budget", "flight", "allergy", "garden", "car", "dentist", "piano", "rent", "trip", "laptop")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _commands(client: Any) -> int:
    """Commands the server has run so far (both engines' databases: their calls alternate, and the count
    is read around each one, its background flush drained)."""
    return sum(int(v["calls"]) for v in client.info("commandstats").values())


def _engine(path: Path, url: str, batch: int, now: list[datetime]) -> Hindsight:
    config = HindsightConfig()
    config.recall.reinforce_batch = batch
    return Hindsight(path, redis_url=url, embedder=HashedWordEmbedder(), config=config,
                     clock=lambda: now[0], background_consolidation=False)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    import redis

    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        server = subprocess.Popen(["redis-server", "--port", str(port), "--save", "", "--appendonly", "no",
                                   "--dir", tmp], stdout=subprocess.DEVNULL)
        try:
            client = redis.Redis(port=port)
            for _ in range(100):
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.05)
            now = [datetime(2026, 1, 1, tzinfo=UTC)]
            batches = {"every recall (batch 1)": 1, f"batched ({HindsightConfig().recall.reinforce_batch})":
                       HindsightConfig().recall.reinforce_batch}
            engines = {name: _engine(Path(tmp) / f"e{i}", f"redis://127.0.0.1:{port}/{i}", batch, now)
                       for i, (name, batch) in enumerate(batches.items())}
            history = [{"content": f"Note {i} about my {TOPICS[i % len(TOPICS)]}: item {i * 7 % 101}.",
                        "role": "user", "session_id": f"s{i // 20}",
                        "occurred_at": now[0] + timedelta(minutes=i)} for i in range(args.memories)]
            for hs in engines.values():
                hs.record_many(history, NAMESPACE)
            now[0] += timedelta(minutes=args.memories + 1)
            for hs in engines.values():  # warm: snapshots built, indexes loaded
                hs.recall("What about my budget?", NAMESPACE)
                hs.flush_recall_log()
            wall: dict[str, list[float]] = {name: [] for name in engines}
            cpu: dict[str, list[float]] = {name: [] for name in engines}
            commands = dict.fromkeys(engines, 0)
            for turn in range(args.turns):
                topic = TOPICS[turn % len(TOPICS)]
                now[0] += timedelta(seconds=40)
                for name, hs in (engines.items() if turn % 2 == 0 else reversed(engines.items())):
                    before = _commands(client)
                    c0, t0 = time.process_time(), time.perf_counter()
                    hs.recall(f"What did I say about my {topic}?", NAMESPACE, session_id="live")
                    hs.record(f"Update {turn} on my {topic}.", NAMESPACE, role="user", session_id="live")
                    wall[name].append(time.perf_counter() - t0)
                    # the background flush this turn started belongs to its cost (CPU, commands), not to
                    # the caller's wait, nor to the other engine's next turn
                    hs._recall._pipeline().drain()
                    cpu[name].append(time.process_time() - c0)
                    commands[name] += _commands(client) - before
            for hs in engines.values():
                hs.flush_recall_log()
                hs.close()
            result: dict[str, Any] = {"memories": args.memories, "turns": args.turns, "systems": {}}
            for name in engines:
                result["systems"][name] = {
                    "turn_ms_p50": round(statistics.median(wall[name]) * 1000, 2),
                    "turn_ms_mean": round(statistics.fmean(wall[name]) * 1000, 2),
                    "cpu_ms_mean": round(statistics.fmean(cpu[name]) * 1000, 2),
                    "redis_commands_per_turn": round(commands[name] / args.turns, 2),
                }
        finally:
            server.terminate()
            server.wait(timeout=10)
    print(f"{args.memories} memories, {args.turns} chat turns (a recall and a record each)")
    print(f"{'':28} {'p50 ms':>8} {'mean ms':>8} {'CPU ms':>8} {'Redis cmds':>10}")
    for name, row in result["systems"].items():
        print(f"{name:28} {row['turn_ms_p50']:8.2f} {row['turn_ms_mean']:8.2f} {row['cpu_ms_mean']:8.2f} "
              f"{row['redis_commands_per_turn']:10.2f}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
