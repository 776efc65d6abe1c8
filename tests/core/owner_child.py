"""Child process for the ownership tests: opens an embedded engine on a directory and reports.

Usage: python owner_child.py DATA_DIR GO_FILE N_EVENTS

Imports and loads everything first, then waits for GO_FILE so that several children open the
directory at the same moment. Prints one line: ``OWNER <pid>`` (then records N_EVENTS and prints
``RECORDED <n>``, and holds the engine open until stdin closes) or ``BUSY <message>``."""

from __future__ import annotations

import os
import sys
import time

from hindsight_core import DataDirectoryInUseError, Hindsight
from hindsight_core.embeddings.e5 import E5Embedder


def main() -> None:
    data, go, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    embedder = E5Embedder()
    embedder.embed_query("warm up")
    while not os.path.exists(go):
        time.sleep(0.005)
    try:
        hs = Hindsight(data, embedder=embedder, background_consolidation=False)
    except DataDirectoryInUseError as exc:
        print(f"BUSY {exc}", flush=True)
        return
    with hs:
        print(f"OWNER {os.getpid()}", flush=True)
        hs.record_many([f"Process {os.getpid()} note {i}: topic {i % 7}, item {i}" for i in range(n)],
                       namespace="own:test")
        print(f"RECORDED {n}", flush=True)
        sys.stdin.read()  # hold the directory until the parent closes our stdin (or kills us)


if __name__ == "__main__":
    main()
