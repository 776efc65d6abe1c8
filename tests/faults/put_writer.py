"""Child process for the put-crash test: replaces one LangGraph item in a loop, printing each
acknowledged value (a put that returned) on its own line.

Usage: python put_writer.py DATA_DIR START"""

from __future__ import annotations

import sys

from hindsight_core import Hindsight
from hindsight_langchain import HindsightStore

NAMESPACE = ("faults", "u1")
KEY = "counter"


def main() -> None:
    data, start = sys.argv[1], int(sys.argv[2])
    with Hindsight(data, background_consolidation=False) as hs:
        store = HindsightStore(engine=hs)
        n = start
        while True:
            store.put(NAMESPACE, KEY, {"text": f"the counter reads {n}", "n": n})
            print(n, flush=True)
            n += 1


if __name__ == "__main__":
    main()
