"""Recall as memory grows: the engine against the floor, side by side in one run.

A deterministic hash embedder (the same for every system, so only the engine's own cost is counted)
embeds synthetic conversations. For each size the script measures, on the same vectors:

- recall p50/p95 with the namespace's structures warm ("cached") and right after a write;
- the floor: one unfiltered ANN query on a Chroma collection holding the same vectors (and the same
  query with a namespace ``where`` filter on a shared collection, the layout to avoid);
- a LangChain Chroma vector store on the same data (``langchain_chroma`` when installed, else the
  store is emulated with chromadb directly: a collection plus ``query`` with documents and metadata,
  which is what ``similarity_search_by_vector_with_relevance_scores`` does);
- an interleaved chat loop (record user turn, recall, record reply): per-turn p50/p95;
- ingest: ``record`` and ``record_many`` throughput against the embedder's own throughput;
- cold start (open the directory, first recall), RSS growth, disk bytes per memory;
- the namespaces layout: N namespaces x M memories in one store, one namespace's recall.

    .venv/bin/python benchmarks/scale.py --sizes 1000,10000 [--namespaces 1000x100] [--real 1000,10000]
        [--workdir DIR] [--write-doc LABEL]
    .venv/bin/python benchmarks/scale.py --small     # under a minute; CI runs it (asserts nothing on time)
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hindsight_core import Hindsight
from hindsight_core.embeddings.hashed import HashedWordEmbedder

DIM = 384
SESSION_TURNS = 20
START = datetime(2024, 1, 1, tzinfo=UTC)


# -- synthetic conversations -------------------------------------------------------------------------
_SYLLABLES = ["ka", "lo", "mi", "ren", "ta", "vo", "shi", "pe", "dan", "ul", "gor", "fi", "bea", "tro", "nu", "sel"]


def vocabulary(size: int = 6000) -> list[str]:
    rng = np.random.default_rng(1)
    words: dict[str, None] = {}
    while len(words) < size:
        n = int(rng.integers(2, 5))  # 16^2 + 16^3 + 16^4 possible words
        words["".join(_SYLLABLES[int(i)] for i in rng.integers(0, len(_SYLLABLES), n))] = None
    return list(words)


class Conversations:
    """Turns made of Zipf-distributed invented words around a few English frames, grouped in
    sessions of 20 turns one minute apart; the same seed gives the same texts."""

    FRAMES = ("I talked with {} about the {} and the {}.", "My {} wants a new {} before {}.",
              "We planned the {} trip with {} and {}.", "Remember that {} likes {} more than {}.")

    def __init__(self, seed: int) -> None:
        self.words = vocabulary()
        self.rng = np.random.default_rng(seed)
        ranks = np.arange(1, len(self.words) + 1, dtype=np.float64)
        self.p = (1.0 / ranks) / (1.0 / ranks).sum()

    def text(self) -> str:
        picks = self.rng.choice(len(self.words), size=6, p=self.p)
        frame = self.FRAMES[int(self.rng.integers(0, len(self.FRAMES)))]
        head = frame.format(*(self.words[int(i)] for i in picks[:3]))
        return head + " " + " ".join(self.words[int(i)] for i in picks[3:])

    def events(self, n: int, offset: int = 0, prefix: str = "s") -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for i in range(offset, offset + n):
            out.append({
                "content": self.text(), "session_id": f"{prefix}{i // SESSION_TURNS}",
                "role": "user" if i % 2 == 0 else "assistant",
                "occurred_at": START + timedelta(minutes=i),
            })
        return out

    def query(self) -> str:
        picks = self.rng.choice(len(self.words), size=3, p=self.p)
        return f"What did I say about {self.words[int(picks[0])]} and {self.words[int(picks[1])]}?"


# -- measuring ---------------------------------------------------------------------------------------
def pct(samples: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples) * 1000.0, q)) if samples else float("nan")


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def rss_mb() -> float:
    import psutil

    return float(psutil.Process().memory_info().rss) / 2**20


def disk_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


@dataclass
class SizeRow:
    size: int
    cached: list[float] = field(default_factory=list)
    after_write: list[float] = field(default_factory=list)
    floor: list[float] = field(default_factory=list)
    floor_filtered: list[float] = field(default_factory=list)
    langchain: list[float] = field(default_factory=list)
    chat: list[float] = field(default_factory=list)
    ingest_many: float = 0.0
    ingest_one: float = 0.0
    load_rate: float = float("nan")
    embedder_rate: float = 0.0
    cold_start: float = 0.0
    cold_process: float = 0.0
    rss_growth: float = 0.0
    disk_per_memory: float = 0.0


class FloorIndex:
    """The same vectors in plain Chroma: an unfiltered collection (the floor) and, for comparison, a
    shared collection queried with a namespace filter."""

    def __init__(self, root: Path, per_channel: int, filtered: bool = False) -> None:
        import chromadb
        from chromadb.config import Settings

        self.n = per_channel
        self.client = chromadb.PersistentClient(path=str(root), settings=Settings(anonymized_telemetry=False))
        self.plain = self.client.get_or_create_collection("floor", embedding_function=None,
                                                          metadata={"hnsw:space": "cosine"})
        self.shared = self.client.get_or_create_collection("shared", embedding_function=None,
                                                           metadata={"hnsw:space": "cosine"}) if filtered else None

    def add(self, ids: list[str], vectors: np.ndarray, texts: list[str], namespace: str,
            other_namespaces: int = 0) -> None:
        """Chroma inserts about 600 vectors/s here, so the shared collection is filled only when asked
        (``--filtered-floor``): at 1M memories each collection takes half an hour."""
        for start in range(0, len(ids), 5000):
            chunk = slice(start, start + 5000)
            self.plain.add(ids=ids[chunk], embeddings=vectors[chunk], documents=texts[chunk],
                           metadatas=[{"namespace": namespace}] * len(ids[chunk]))
            if self.shared is not None:
                self.shared.add(ids=ids[chunk], embeddings=vectors[chunk],
                                metadatas=[{"namespace": namespace}] * len(ids[chunk]))
        if other_namespaces and self.shared is not None:  # as many other tenants' vectors in the shared collection
            rng = np.random.default_rng(3)
            for start in range(0, other_namespaces, 5000):
                m = min(5000, other_namespaces - start)
                other = rng.standard_normal((m, DIM)).astype(np.float32)
                other /= np.linalg.norm(other, axis=1, keepdims=True)
                self.shared.add(ids=[f"o{start + j}" for j in range(m)], embeddings=other,
                                metadatas=[{"namespace": f"other{(start + j) % 999}"} for j in range(m)])

    def query(self, vector: np.ndarray) -> object:
        return self.plain.query(query_embeddings=[vector], n_results=self.n, include=["distances"])

    def query_filtered(self, vector: np.ndarray, namespace: str) -> object:
        assert self.shared is not None
        return self.shared.query(query_embeddings=[vector], n_results=self.n, where={"namespace": namespace},
                                 include=["distances"])


class EngineCollection:
    """The floor without a copy (``--floor-from-engine``): the engine's own Chroma collection of the
    namespace's turns, queried as ``FloorIndex`` queries its copy, once the engine is closed."""

    def __init__(self, path: Path, namespace: str, n: int = 40) -> None:
        import chromadb
        from chromadb.config import Settings

        self.n = n
        settings = Settings(anonymized_telemetry=False)
        self.client = chromadb.PersistentClient(path=str(path / "chroma"), settings=settings)
        own = [c for c in self.client.list_collections()
               if (c.metadata or {}).get("hindsight:namespace") == namespace
               and (c.metadata or {}).get("hindsight:layer") == "episodic"]
        if not own:
            raise SystemExit(f"no collection of its own for {namespace} in {path}")
        self.collection = max(own, key=lambda c: c.count())

    def query(self, vector: np.ndarray) -> object:
        return self.collection.query(query_embeddings=[vector], n_results=self.n, include=["distances"])


class LangChainStore:
    """A LangChain Chroma vector store on the same vectors: ``langchain_chroma.Chroma`` when it is
    installed; otherwise what its similarity search does, with chromadb directly (documents and
    metadata returned, distances turned into relevance scores)."""

    def __init__(self, client: object, embedder: HashedWordEmbedder) -> None:
        self.embedder = embedder
        try:
            from langchain_chroma import Chroma  # type: ignore[import-not-found]
        except ImportError:
            Chroma = None
        self.kind = "langchain_chroma" if Chroma is not None else "chromadb (langchain_chroma not installed)"
        self._lc = None
        self._collection = client.get_collection("floor")  # type: ignore[attr-defined]
        if Chroma is not None:
            from langchain_core.embeddings import Embeddings

            outer = embedder

            class _Emb(Embeddings):
                def embed_documents(self, texts: list[str]) -> list[list[float]]:
                    return outer.embed_documents(texts).tolist()

                def embed_query(self, text: str) -> list[float]:
                    return outer.embed_query(text).tolist()

            self._lc = Chroma(client=client, collection_name="floor", embedding_function=_Emb())

    def search(self, query: str, k: int) -> object:
        if self._lc is not None:
            return self._lc.similarity_search_with_relevance_scores(query, k=k)
        vector = self.embedder.embed_query(query)
        result = self._collection.query(query_embeddings=[vector], n_results=k,
                                        include=["documents", "metadatas", "distances"])
        return [(doc, meta, 1.0 - d) for doc, meta, d in
                zip(result["documents"][0], result["metadatas"][0], result["distances"][0], strict=True)]


def load(hs: Hindsight, conv: Conversations, namespace: str, n: int, batch: int = 2000,
         prefix: str = "s") -> None:
    done = 0
    while done < n:
        m = min(batch, n - done)
        hs.record_many(conv.events(m, offset=done, prefix=prefix), namespace=namespace)
        done += m


def measure_size(size: int, args: argparse.Namespace, root: Path) -> SizeRow:
    row = SizeRow(size=size)
    embedder = HashedWordEmbedder()
    conv = Conversations(seed=size)
    path = root / f"n{size}"
    namespace = "user:bench"
    marker = path / f"loaded-{size}"
    reuse = bool(args.workdir) and marker.exists()
    runs = len(list(path.glob("run-*"))) if reuse else 0
    gc.collect()
    rss0 = rss_mb()
    hs = Hindsight(path, embedder=embedder)
    # ingest: record_many and record on a slice, against the embedder alone on the same texts
    probe = conv.events(min(size, args.ingest), prefix="probe")
    suffix = f":{runs}" if runs else ""
    texts = [str(e["content"]) for e in probe]
    t = time.perf_counter()
    for start in range(0, len(texts), 64):
        embedder.embed_documents(texts[start:start + 64])
    row.embedder_rate = len(texts) / (time.perf_counter() - t)
    embedder._ids.clear()
    t = time.perf_counter()
    hs.record_many(probe, namespace="ingest:many" + suffix)
    row.ingest_many = len(probe) / (time.perf_counter() - t)
    singles = probe[: max(1, len(probe) // 4)]
    t = time.perf_counter()
    for event in singles:
        hs.record(str(event["content"]), namespace="ingest:one" + suffix, session_id=str(event["session_id"]))
    row.ingest_one = len(singles) / (time.perf_counter() - t)
    if reuse:  # the same texts are drawn (so the queries below are the same), not recorded again
        for done in range(0, size, 2000):
            conv.events(min(2000, size - done), offset=done)
        (path / f"run-{runs}").touch()
    else:
        t = time.perf_counter()
        load(hs, conv, namespace, size)
        row.load_rate = size / (time.perf_counter() - t)
        if args.workdir:
            marker.touch()
    queries = [conv.query() for _ in range(args.recalls)]
    hs.recall(queries[0], namespace, track=False)  # builds whatever is lazy
    settle(hs)
    row.cached = timed(iter_calls(hs, queries, namespace), args.recalls)
    writes = conv.events(args.after_writes, offset=size, prefix="s")

    def write_then_recall(i: int) -> float:
        e = writes[i]
        hs.record(str(e["content"]), namespace, session_id=str(e["session_id"]), occurred_at=e["occurred_at"])
        t = time.perf_counter()
        hs.recall(queries[i % len(queries)], namespace, track=False)
        return time.perf_counter() - t

    row.after_write = [write_then_recall(i) for i in range(args.after_writes)]
    chat = conv.events(args.chat_turns * 2, offset=size + args.after_writes, prefix="chat")

    def turn(i: int) -> float:
        t = time.perf_counter()
        user, reply = chat[2 * i], chat[2 * i + 1]
        hs.record(str(user["content"]), namespace, session_id="chat", role="user")
        hs.recall(str(user["content"]), namespace, session_id="chat")
        hs.record(str(reply["content"]), namespace, session_id="chat", role="assistant")
        return time.perf_counter() - t

    row.chat = [turn(i) for i in range(args.chat_turns)]
    hs.flush_recall_log()
    row.rss_growth = rss_mb() - rss0
    hs.close()
    row.disk_per_memory = disk_bytes(path) / (size + len(probe) + len(singles))
    # cold start: open the directory and answer the first recall
    gc.collect()
    t = time.perf_counter()
    with Hindsight(path, embedder=embedder) as again:
        again.recall(queries[1], namespace, track=False)
    row.cold_start = time.perf_counter() - t
    row.cold_process = cold_start_process(path, namespace, queries[2])
    # the floor and LangChain on the same vectors
    rows = Hindsight  # keep the name short below
    del rows
    # with --workdir the floor's collection is kept beside the namespace and reused, as the namespace is
    # (it then lacks the few dozen memories each later run writes)
    if args.floor_from_engine:
        qv = [embedder.embed_query(q) for q in queries]
        own = EngineCollection(path, namespace)
        own.query(qv[0])
        row.floor = timed(iter_vectors(own.query, qv), args.recalls)
        if not args.keep and not args.workdir:
            shutil.rmtree(path, ignore_errors=True)
        return row
    floor_path = root / f"floor{size}"
    floor_marker = floor_path / f"loaded-{int(args.filtered_floor)}"
    reuse_floor = bool(args.workdir) and floor_marker.exists()
    if not reuse_floor:
        shutil.rmtree(floor_path, ignore_errors=True)
    floor = FloorIndex(floor_path, per_channel=40, filtered=args.filtered_floor)
    if not reuse_floor:
        ids, vectors, docs = stored_vectors(path, namespace)
        floor.add(ids, vectors, docs, namespace, other_namespaces=size if args.filtered_floor else 0)
        del ids, vectors, docs
        if args.workdir:
            floor_marker.touch()
    qv = [embedder.embed_query(q) for q in queries]
    floor.query(qv[0])
    row.floor = timed(iter_vectors(floor.query, qv), args.recalls)
    if args.filtered_floor:
        row.floor_filtered = timed(iter_vectors(lambda v: floor.query_filtered(v, namespace), qv), args.recalls)
    lc = LangChainStore(floor.client, embedder)
    args.langchain_kind = lc.kind
    lc.search(queries[0], 10)
    row.langchain = timed(iter_calls_lc(lc, queries), args.recalls)
    if not args.workdir:
        shutil.rmtree(floor_path, ignore_errors=True)
    if not args.keep and not args.workdir:
        shutil.rmtree(path, ignore_errors=True)
    return row


def cold_start_process(path: Path, namespace: str, query: str) -> float:
    """Cold start as a new process sees it: starting Python, importing the engine (and Chroma), opening
    the directory and answering the first recall."""
    import json
    import subprocess

    t = time.perf_counter()
    subprocess.run([sys.executable, __file__, "--cold-start", json.dumps([str(path), namespace, query])],
                   check=True, capture_output=True)
    return time.perf_counter() - t


def _cold_start_child(spec: str) -> None:
    import json

    path, namespace, query = json.loads(spec)
    with Hindsight(path, embedder=HashedWordEmbedder()) as hs:
        hs.recall(query, namespace, track=False)


def stored_vectors(path: Path, namespace: str) -> tuple[list[str], np.ndarray, list[str]]:
    """The engine's own stored vectors of the namespace (so the floor indexes exactly the same data)."""
    import sqlite3

    con = sqlite3.connect(path / "hindsight.sqlite3")
    rows = con.execute(
        "SELECT m.id, e.vector, m.content FROM memories m JOIN embeddings e ON e.memory_id = m.id "
        "WHERE m.namespace = ? ORDER BY m.seq", (namespace,)
    ).fetchall()
    con.close()
    vectors = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
    return [r[0] for r in rows], vectors, [r[2] for r in rows]


def settle(hs: Hindsight) -> None:
    """Wait for what the first recall started in the background (the snapshot file's save, the Chroma
    collection's load), so "cached" is the steady state rather than a recall competing with them."""
    hs._recall._pipeline().corpora.wait_for_saves()
    wait_loaded = getattr(hs.vectors, "wait_loaded", None)
    if wait_loaded is not None:
        wait_loaded()


def iter_calls(hs: Hindsight, queries: list[str], namespace: str) -> Callable[[], object]:
    it = iter(range(10**9))
    return lambda: hs.recall(queries[next(it) % len(queries)], namespace, track=False)


def iter_calls_lc(lc: LangChainStore, queries: list[str]) -> Callable[[], object]:
    it = iter(range(10**9))
    return lambda: lc.search(queries[next(it) % len(queries)], 10)


def iter_vectors(fn: Callable[[np.ndarray], object], vectors: list[np.ndarray]) -> Callable[[], object]:
    it = iter(range(10**9))
    return lambda: fn(vectors[next(it) % len(vectors)])


@dataclass
class TenantRow:
    namespaces: int
    per_namespace: int
    recall: list[float] = field(default_factory=list)
    floor: list[float] = field(default_factory=list)
    floor_filtered: list[float] = field(default_factory=list)
    rss_growth: float = 0.0


def measure_tenants(count: int, each: int, args: argparse.Namespace, root: Path) -> TenantRow:
    row = TenantRow(namespaces=count, per_namespace=each)
    embedder = HashedWordEmbedder()
    conv = Conversations(seed=count * each)
    path = root / f"t{count}x{each}"
    with Hindsight(path, embedder=embedder) as hs:
        # RSS grows from the second namespace on (scaled to all of them): the first pays for opening the
        # vector store (Chroma's runtime, about 70 MB whatever is stored), which is no tenant's cost and
        # was counted or not as an earlier size of the same run had loaded it
        hs.record_many(conv.events(each, prefix="t0s"), namespace="tenant:0")
        gc.collect()
        rss0 = rss_mb()
        for t in range(1, count):
            hs.record_many(conv.events(each, prefix=f"t{t}s"), namespace=f"tenant:{t}")
        probe = [f"tenant:{i}" for i in np.random.default_rng(5).choice(count, size=min(count, 20), replace=False)]
        queries = [conv.query() for _ in range(args.recalls)]
        for ns in probe:
            hs.recall(queries[0], ns, track=False)
        it = iter(range(10**9))

        def one() -> object:
            i = next(it)
            return hs.recall(queries[i % len(queries)], probe[i % len(probe)], track=False)

        row.recall = timed(one, args.recalls)
        row.rss_growth = (rss_mb() - rss0) * count / max(count - 1, 1)
    # floor: the namespace's vectors alone (unfiltered), and all tenants in one filtered collection
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(root / "tfloor"), settings=Settings(anonymized_telemetry=False))
    ns = probe[0]
    ids, vectors, _ = stored_vectors(path, ns)
    alone = client.create_collection("alone", embedding_function=None, metadata={"hnsw:space": "cosine"})
    alone.add(ids=ids, embeddings=vectors)
    shared = client.create_collection("shared", embedding_function=None, metadata={"hnsw:space": "cosine"})
    import sqlite3

    con = sqlite3.connect(path / "hindsight.sqlite3")
    batch: list[tuple[str, bytes, str]] = []
    for mid, blob, namespace in con.execute(
        "SELECT m.id, e.vector, m.namespace FROM memories m JOIN embeddings e ON e.memory_id = m.id"
    ):
        batch.append((mid, blob, namespace))
        if len(batch) >= 5000:
            _add(shared, batch)
            batch = []
    if batch:
        _add(shared, batch)
    con.close()
    qv = [embedder.embed_query(q) for q in queries]
    row.floor = timed(iter_vectors(
        lambda v: alone.query(query_embeddings=[v], n_results=min(40, each), include=["distances"]), qv), args.recalls)
    row.floor_filtered = timed(iter_vectors(
        lambda v: shared.query(query_embeddings=[v], n_results=40, where={"namespace": ns}, include=["distances"]),
        qv), args.recalls)
    shutil.rmtree(root / "tfloor", ignore_errors=True)
    if not args.keep:
        shutil.rmtree(path, ignore_errors=True)
    return row


def _add(collection: object, batch: list[tuple[str, bytes, str]]) -> None:
    collection.add(  # type: ignore[attr-defined]
        ids=[b[0] for b in batch], embeddings=np.stack([np.frombuffer(b[1], dtype=np.float32) for b in batch]),
        metadatas=[{"namespace": b[2]} for b in batch],
    )


@dataclass
class RealRow:
    size: int
    chat: list[float] = field(default_factory=list)
    ingest_many: float = 0.0
    embedder_rate: float = 0.0


class _UnderHashName:
    """The default model under the hash embedder's name and size, to time a chat turn with the real
    model on a store the hash embedder loaded (embedding 100k memories with the model alone would take
    over an hour here). Only the cost is measured: the stored vectors are the hash embedder's."""

    def __init__(self, model: object) -> None:
        self._model = model
        hashed = HashedWordEmbedder()
        self.name, self.dim = hashed.name, hashed.dim

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._model.embed_documents(texts)  # type: ignore[attr-defined,no-any-return]

    def embed_query(self, text: str) -> np.ndarray:
        return self._model.embed_query(text)  # type: ignore[attr-defined,no-any-return]


def measure_real(size: int, args: argparse.Namespace, root: Path) -> RealRow:
    """The end-to-end row: the default embedder (multilingual-e5-small), the chat loop per turn on a
    namespace of ``size`` memories, and ``record_many`` against the model alone on the same texts.

    With ``--workdir`` holding the hash-loaded namespace of that size (``n{size}``), the turn runs
    there with the model under the hash embedder's name (see ``_UnderHashName``); otherwise a store is
    loaded with the model itself."""
    from hindsight_core.embeddings.resolve import resolve_embedder

    row = RealRow(size=size)
    model = resolve_embedder(None)
    conv = Conversations(seed=size + 11)
    hashed = root / f"n{size}"
    on_hash = (hashed / f"loaded-{size}").exists()
    path = hashed if on_hash else root / f"real{size}"
    embedder = _UnderHashName(model) if on_hash else model
    namespace = "user:bench" if on_hash else "user:real"
    events = conv.events(256 if on_hash else size, prefix="real")
    probe = [str(e["content"]) for e in events[:256]]
    model.embed_documents(probe[:8])  # the model loaded, as an engine that has answered once
    t = time.perf_counter()
    model.embed_documents(probe)
    row.embedder_rate = len(probe) / (time.perf_counter() - t)
    row.on_hash = on_hash
    with Hindsight(path, embedder=embedder) as hs:  # type: ignore[arg-type]
        marker = path / f"loaded-{size}"
        if on_hash:
            t = time.perf_counter()
            hs.record_many(events, namespace=f"ingest:real:{len(list(path.glob('run-*')))}")
            row.ingest_many = len(events) / (time.perf_counter() - t)
        elif not (args.workdir and marker.exists()):
            t = time.perf_counter()
            hs.record_many(events, namespace=namespace)
            row.ingest_many = size / (time.perf_counter() - t)
            marker.touch()
        else:
            row.ingest_many = float("nan")
        chat = conv.events(args.chat_turns * 2 + 2, offset=size, prefix="chat")
        hs.recall(str(chat[0]["content"]), namespace, session_id="chat")  # what is lazy, built

        def turn(i: int) -> float:
            t = time.perf_counter()
            user, reply = chat[2 * i + 2], chat[2 * i + 3]
            hs.record(str(user["content"]), namespace, session_id="chat", role="user")
            hs.recall(str(user["content"]), namespace, session_id="chat")
            hs.record(str(reply["content"]), namespace, session_id="chat", role="assistant")
            return time.perf_counter() - t

        row.chat = [turn(i) for i in range(args.chat_turns)]
    if not args.keep and not args.workdir and not on_hash:
        shutil.rmtree(path, ignore_errors=True)
    return row


def report(rows: list[SizeRow], tenants: list[TenantRow], args: argparse.Namespace,
           real: Sequence[RealRow] = ()) -> str:
    lines = [
        "| memories | recall cached p50 / p95 | right after a write p50 | floor (Chroma, unfiltered) p50"
        " | shared collection + namespace filter p50 | LangChain Chroma p50 | cached / floor"
        " | after write / cached | chat turn p50 / p95 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cached, floor = pct(r.cached, 50), pct(r.floor, 50)
        lines.append(
            f"| {r.size:,} | {cached:.1f} / {pct(r.cached, 95):.1f} ms | {pct(r.after_write, 50):.1f} ms"
            f" | {floor:.2f} ms | {pct(r.floor_filtered, 50):.2f} ms | {pct(r.langchain, 50):.2f} ms"
            f" | {cached / floor:.1f}x | {pct(r.after_write, 50) / cached:.2f}x"
            f" | {pct(r.chat, 50):.1f} / {pct(r.chat, 95):.1f} ms |"
        )
    lines += [
        "",
        "| memories | record_many / s | loading the namespace / s | record / s | embedder alone / s"
        " | record_many / embedder | cold start to first recall (in process / new process) | RSS growth"
        " | disk / memory |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.size:,} | {r.ingest_many:,.0f} | {r.load_rate:,.0f} | {r.ingest_one:,.0f} | {r.embedder_rate:,.0f}"
            f" | {r.ingest_many / r.embedder_rate:.2f} | {r.cold_start:.2f} s / {r.cold_process:.2f} s"
            f" | {r.rss_growth:.0f} MB | {r.disk_per_memory:,.0f} B |"
        )
    if tenants:
        lines += [
            "",
            "| namespaces x memories | one namespace's recall p50 / p95 | its vectors alone in Chroma p50"
            " | one shared collection + filter p50 | recall / floor | RSS growth |",
            "|---|---|---|---|---|---|",
        ]
        for t in tenants:
            lines.append(
                f"| {t.namespaces:,} x {t.per_namespace} | {pct(t.recall, 50):.1f} / {pct(t.recall, 95):.1f} ms"
                f" | {pct(t.floor, 50):.2f} ms | {pct(t.floor_filtered, 50):.2f} ms"
                f" | {pct(t.recall, 50) / pct(t.floor, 50):.1f}x | {t.rss_growth:.0f} MB |"
            )
    if real:
        base = pct(real[0].chat, 50)
        lines += [
            "",
            "| default embedder, memories | chat turn p50 / p95 | turn / turn at the smallest size"
            " | record_many / s | model alone / s | record_many / model |",
            "|---|---|---|---|---|---|",
        ]
        for r in real:
            where = " (hash-loaded store)" if r.on_hash else ""
            lines.append(
                f"| {r.size:,}{where} | {pct(r.chat, 50):.0f} / {pct(r.chat, 95):.0f} ms"
                f" | {pct(r.chat, 50) / base:.2f}x"
                f" | {r.ingest_many:,.1f} | {r.embedder_rate:,.1f} | {r.ingest_many / r.embedder_rate:.2f} |"
            )
    lines += ["", f"LangChain store: {getattr(args, 'langchain_kind', 'n/a')}. {args.recalls} recalls per cell, "
              f"{args.after_writes} after writes, {args.chat_turns} chat turns; Python {platform.python_version()}, "
              f"{os.cpu_count()} cores."]
    return "\n".join(lines)


def summary(rows: Sequence[SizeRow], tenants: Sequence[TenantRow], real: Sequence[RealRow],
            args: argparse.Namespace) -> dict[str, object]:
    """The run's figures for ``--json`` (docs/benchmarks.md, rendered by ``benchmarks/report.py``): p50s in
    milliseconds, each ratio from the same run's numbers."""
    def known(value: float, digits: int) -> float | None:  # not measured in this run: null, not NaN
        return None if math.isnan(value) else round(value, digits)

    def ms(values: Sequence[float], q: float = 50) -> float | None:
        return known(pct(values, q), 3)

    import subprocess

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[1]).stdout.strip()
    return {
        "measured": {"date": datetime.now(UTC).date().isoformat(), "commit": commit or None},
        "recalls": args.recalls, "after_writes": args.after_writes, "chat_turns": args.chat_turns,
        "sizes": {f"{r.size}": {
            "recall_p50_ms": ms(r.cached), "recall_p95_ms": ms(r.cached, 95), "floor_p50_ms": ms(r.floor),
            "after_write_p50_ms": ms(r.after_write), "langchain_p50_ms": ms(r.langchain),
            "chat_turn_p50_ms": ms(r.chat), "cold_start_new_process_s": round(r.cold_process, 3),
            "rss_growth_mb": round(r.rss_growth), "load_per_s": known(r.load_rate, 0)} for r in rows},
        "tenants": {f"{t.namespaces}x{t.per_namespace}": {
            "recall_p50_ms": ms(t.recall), "floor_p50_ms": ms(t.floor), "rss_growth_mb": round(t.rss_growth)}
            for t in tenants},
        "real_chat_turn_p50_ms": {f"{r.size}": ms(r.chat) for r in real},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000", help="memories in one namespace, comma-separated")
    parser.add_argument("--namespaces", default="", help="tenant layouts, e.g. 1000x100,10000x100")
    parser.add_argument("--real", default="", help="sizes for the default-embedder row, e.g. 1000,10000")
    parser.add_argument("--recalls", type=int, default=100)
    parser.add_argument("--after-writes", type=int, default=8)
    parser.add_argument("--chat-turns", type=int, default=20)
    parser.add_argument("--ingest", type=int, default=1000, help="events in the ingest probe")
    parser.add_argument("--filtered-floor", action="store_true", help="also time a shared filtered collection")
    parser.add_argument("--small", action="store_true", help="a run under a minute (CI)")
    parser.add_argument("--cold-start", default="", help=argparse.SUPPRESS)
    parser.add_argument("--keep", action="store_true", help="keep the data directories")
    parser.add_argument("--root", default=None, help="where the data directories go (default: a temp dir)")
    parser.add_argument("--workdir", default=None,
                        help="keep the data directories here and reuse a namespace loaded by an earlier run "
                             "(its size is not loaded again; each run adds its writes and chat turns)")
    parser.add_argument("--write-doc", default="", help="write the table to docs/benchmark-log.md under this label")
    parser.add_argument("--floor-from-engine", action="store_true",
                        help="the floor queries the engine's own collection instead of a copy (no half hour of "
                             "inserts per million memories; LangChain is not measured then)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here (benchmarks/report.py)")
    args = parser.parse_args()
    if args.cold_start:
        _cold_start_child(args.cold_start)
        return
    if args.small:
        args.sizes, args.recalls, args.after_writes, args.chat_turns, args.ingest = "300", 10, 3, 3, 100
        args.namespaces = args.namespaces or "20x30"
    sizes = [int(s) for s in args.sizes.split(",") if s]
    layouts = [tuple(int(x) for x in spec.split("x")) for spec in args.namespaces.split(",") if spec]
    args.root = args.workdir or args.root
    root = Path(args.root) if args.root else Path(tempfile.mkdtemp(prefix="scale-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        rows = []
        tenants: list[TenantRow] = []
        for size in sizes:
            rows.append(measure_size(size, args, root))
            print(report(rows, tenants, args), file=sys.stderr, flush=True)  # partial tables as they come
        for count, each in layouts:
            tenants.append(measure_tenants(count, each, args, root))
            print(report(rows, tenants, args), file=sys.stderr, flush=True)
        real: list[RealRow] = []
        for size in [int(s) for s in args.real.split(",") if s]:
            real.append(measure_real(size, args, root))
            print(report(rows, tenants, args, real), file=sys.stderr, flush=True)
    finally:
        if not args.root and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    table = report(rows, tenants, args, real)
    print(table)
    if args.json:
        import json

        args.json.write_text(json.dumps(summary(rows, tenants, real, args), indent=1) + "\n", encoding="utf-8")
    if args.write_doc:
        from _report import write_section

        write_section(f"scale-{args.write_doc}", f"### {args.write_doc}\n\n`{' '.join(sys.argv)}`\n\n{table}")


if __name__ == "__main__":
    main()
