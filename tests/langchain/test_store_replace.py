"""Replacing a LangGraph item is one transaction: a concurrent reader never finds a live key missing."""

from __future__ import annotations

import threading

from hindsight_core import Hindsight
from hindsight_langchain import HindsightStore


def test_reader_never_sees_a_live_key_missing_while_it_is_replaced(hs: Hindsight, ns: str) -> None:
    store = HindsightStore(engine=hs)
    namespace = ("replace", ns)
    store.put(namespace, "profile", {"text": "value 0", "n": 0})
    writes = 40
    done = threading.Event()
    reads = {"get": 0, "get_none": 0, "search": 0, "search_missing": 0}
    seen: set[int] = set()

    def writer() -> None:
        try:
            for n in range(1, writes + 1):
                store.put(namespace, "profile", {"text": f"value {n}", "n": n})
        finally:
            done.set()

    def reader() -> None:
        while not done.is_set():
            item = store.get(namespace, "profile")
            reads["get"] += 1
            if item is None:
                reads["get_none"] += 1
            else:
                seen.add(item.value["n"])
            found = store.search(namespace)
            reads["search"] += 1
            if [i.key for i in found] != ["profile"]:
                reads["search_missing"] += 1

    threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"\nreplace: {writes} puts, {reads}")
    assert reads["get"] > 0 and len(seen) > 1, "the reader must overlap the writer"
    assert reads["get_none"] == 0 and reads["search_missing"] == 0
    final = store.get(namespace, "profile")
    assert final is not None and final.value == {"text": f"value {writes}", "n": writes}
    # still one memory under the key, holding the last value, found by search on the new text only
    stored = hs.find(hs_ns := store.engine_namespace(namespace), source_ids=["profile"])
    assert len(stored) == 1 and stored[0].content == f"value {writes}"
    hits = store.search(namespace, query=f"value {writes}")
    assert [h.key for h in hits] == ["profile"]
    assert hs.stats(hs_ns).total == 1


def test_put_none_deletes_the_item_in_one_call(hs: Hindsight, ns: str) -> None:
    store = HindsightStore(engine=hs)
    namespace = ("replace", ns)
    store.put(namespace, "k", {"text": "to be deleted"})
    store.put(namespace, "k", None)
    assert store.get(namespace, "k") is None
    assert hs.find(store.engine_namespace(namespace)) == []
