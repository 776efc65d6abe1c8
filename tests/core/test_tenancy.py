"""Namespaces are walls: a property test over random tenants and contents."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hindsight_core import Hindsight

NAMESPACES = st.sampled_from(["user:1", "user:2", "agent:a/user:1", "user:王磊", "user:10"])
WORDS = st.sampled_from(["peanut", "allergy", "budget", "Shanghai", "花生", "预算", "meeting", "tea"])
CONTENT = st.lists(WORDS, min_size=1, max_size=5).map(" ".join)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes=st.lists(st.tuples(NAMESPACES, CONTENT), min_size=1, max_size=12), query=CONTENT, reader=NAMESPACES)
def test_no_read_path_crosses_namespaces(tmp_path_factory, embedder, writes, query, reader) -> None:
    path: Path = tmp_path_factory.mktemp("tenancy")
    with Hindsight(path, embedder=embedder) as hs:
        owner: dict[str, str] = {}
        for namespace, content in writes:
            owner[hs.record(content, namespace=namespace, session_id="s").id] = namespace
        vector_hits = hs.vectors.query(reader, "episodic", hs.embedder.embed_query(query), 50)
        assert all(owner[h.memory_id] == reader for h in vector_hits)
        assert all(owner[mid] == reader for mid, _ in hs.activation.top(reader, "episodic", 50))
        assert all(m.namespace == reader for m in hs.working(reader, "s", budget_tokens=10_000))
        assert {h.memory_id for h in vector_hits} == {mid for mid, ns in owner.items() if ns == reader}
        for mid, namespace in owner.items():
            assert (hs.get(mid, namespace=reader) is not None) == (namespace == reader)
        result = hs.recall(query, namespace=reader, k=10)
        assert all(hit.memory.namespace == reader for hit in result.hits)
        assert all(c.superseded.namespace == reader for c in result.conflicts)
