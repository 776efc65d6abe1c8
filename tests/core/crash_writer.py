"""Child process for the crash test: bulk-imports events and logs each acknowledged batch.

Usage: python crash_writer.py DATA_DIR ACK_FILE N_EVENTS [REDIS_URL]"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime, timedelta

from hindsight_core import Event, Hindsight


def main() -> None:
    data, ack_path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    redis_url = sys.argv[4] if len(sys.argv) > 4 else None
    start = datetime(2024, 1, 1, tzinfo=UTC)
    events = [
        Event(content=f"Event {i}: the user mentioned topic {i % 97} and item {i * 7 % 1013}",
              session_id=f"s{i // 100}", occurred_at=start + timedelta(minutes=i), source_id=f"E{i}")
        for i in range(n)
    ]
    with open(ack_path, "a", encoding="utf-8") as ack, Hindsight(data, redis_url=redis_url) as hs:

        def acknowledge(batch: list) -> None:
            ack.write("".join(f"{m.source_id}\n" for m in batch))
            ack.flush()
            os.fsync(ack.fileno())

        hs.record_many(events, namespace="crash:test", on_commit=acknowledge)


if __name__ == "__main__":
    main()
