"""The inspector's pages through Starlette's TestClient, on a real embedded engine with recorded,
consolidated and recalled memories: what an operator sees, that looking changes nothing, and that
writes exist only when asked for."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from datetime import timedelta
from html import unescape
from urllib.parse import urlencode

import pytest

from hindsight_core.errors import MissingExtraError
from hindsight_core.types import Layer, Status

pytest.importorskip("starlette", reason="the ui extra is not installed")

from starlette.testclient import TestClient

from hindsight_core.ui import create_app

from .conftest import NS, OTHER, Recorded


def _client(recorded: Recorded, **options: object) -> TestClient:
    return TestClient(create_app(recorded.engine, **options), base_url="http://127.0.0.1")  # type: ignore[arg-type]


@pytest.fixture
def client(recorded: Recorded) -> Iterator[TestClient]:
    with _client(recorded) as c:
        yield c


def _ns(**params: str) -> str:
    return "/ns?" + urlencode({"name": NS, **params})


def test_namespaces_page_lists_every_namespace_with_counts(client: TestClient, recorded: Recorded) -> None:
    r = client.get("/")
    assert r.status_code == 200
    assert f">{NS}</a>" in r.text and f">{OTHER}</a>" in r.text
    stats = recorded.engine.stats()
    assert f'<div class="v">{stats.total}</div><div class="k">memories</div>' in r.text
    # no asset from the network: no external script, stylesheet or image
    assert "http://" not in r.text.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in r.text and "<script" not in r.text


def test_search_is_a_substring_within_one_namespace(client: TestClient, recorded: Recorded) -> None:
    r = client.get(_ns(q="PEANUTS"))
    assert r.status_code == 200
    assert f"/memory/{recorded.allergy.id}" in r.text and "Hangzhou" not in r.text
    # OTHER's memory never shows in NS, even when searched for
    bees = client.get(_ns(q="bees")).text
    assert f"/memory/{recorded.other.id}" not in bees and "No memory matches" in bees
    # LIKE's wildcards are literal characters here
    assert "No memory matches" in client.get(_ns(q="%")).text


def test_filters_by_layer_and_status(client: TestClient, recorded: Recorded) -> None:
    superseded = client.get(_ns(status="superseded")).text
    assert f"/memory/{recorded.old_city.id}" in superseded
    assert f"/memory/{recorded.new_city.id}" not in superseded
    semantic = client.get(_ns(layer="semantic", status="active")).text
    assert f"/memory/{recorded.new_city.id}" in semantic and f"/memory/{recorded.allergy.id}" not in semantic
    assert client.get(_ns(status="forgotten")).status_code == 400
    assert client.get("/ns?name=user:nobody").status_code == 404
    assert client.get("/ns?name=not%20a%20namespace").status_code == 400


def test_superseded_fact_links_its_successor_and_back(client: TestClient, recorded: Recorded) -> None:
    old = client.get(f"/memory/{recorded.old_city.id}").text
    assert 'id="status">superseded<' in old
    successor_block = old.split('id="successor"', 1)[1].split("</p>", 1)[0]
    assert f"/memory/{recorded.new_city.id}" in successor_block and "Shanghai" in successor_block
    new = client.get(f"/memory/{recorded.new_city.id}").text
    chain = new.split('id="chain"', 1)[1].split("</ol>", 1)[0]
    assert f"/memory/{recorded.old_city.id}" in chain and 'class="predecessor"' in chain
    # its sources are the episodes it was distilled from, linked
    sources = new.split('id="sources"', 1)[1].split("</ul>", 1)[0]
    for source_id in recorded.new_city.source_ids:
        assert f"/memory/{source_id}" in sources
    assert "Shanghai" in sources


def test_memory_page_draws_the_activation_curve_with_recalls_and_thresholds(
    client: TestClient, recorded: Recorded
) -> None:
    # recall shows the distilled fact for the allergy (its source episode is one hit with it)
    (fact,) = [m for m in recorded.engine.find(NS, layer=Layer.SEMANTIC) if "peanut" in m.content.casefold()]
    assert recorded.allergy.id in fact.source_ids
    page = client.get(f"/memory/{fact.id}").text
    svg = page.split('id="activation"', 1)[1].split("</svg>", 1)[0]
    assert svg.count('class="recall"') == 3  # the three recalls that injected it
    assert 'class="cold-threshold"' in svg and "cold threshold (strength -3)" in svg
    # a standing fact (an allergy) is held by the sweep: no day it goes cold, and the page says why
    assert 'id="cold-at"' not in page and "a standing fact about the person: kept while current" in page
    other = client.get(f"/memory/{recorded.other.id}").text
    never = other.split('id="activation"', 1)[1].split("</svg>", 1)[0]
    assert 'class="recall"' not in never
    assert 'id="cold-at"' in other and 'id="archive-at"' in other  # an event fades and is archived


def test_unknown_or_malformed_memory_ids(client: TestClient) -> None:
    assert client.get("/memory/01KJMA0FM0P9JMX0000000000").status_code == 404
    assert client.get("/memory/" + "x" * 300).status_code in (400, 404)


def test_recall_playground_shows_every_stage_and_changes_nothing(client: TestClient, recorded: Recorded) -> None:
    hs = recorded.engine
    before = {m.id: (m.activation, m.access_count) for m in hs.find(NS)}
    logged = hs.store.query("SELECT COUNT(*) FROM recall_log")[0][0]
    query = "Do I have any food allergies?"
    r = client.get("/recall?" + urlencode({"ns": NS, "q": query}))
    assert r.status_code == 200
    expected = hs.recall(query, NS, track=False).to_prompt()
    assert expected and "peanuts" in expected
    html = r.text
    assert unescape(html.split('<pre id="prompt">', 1)[1].split("</pre>", 1)[0]) == expected
    for channel in ("vector", "keyword", "temporal", "entity", "profile", "activation"):
        assert f"<strong>{channel}</strong>" in html
    assert 'class="kept"' in html and "bar to answer at all" in html
    hs.flush_recall_log()
    assert {m.id: (m.activation, m.access_count) for m in hs.find(NS)} == before
    assert hs.store.query("SELECT COUNT(*) FROM recall_log")[0][0] == logged


def test_recall_playground_says_a_small_talk_message_searches_nothing(client: TestClient) -> None:
    html = client.get("/recall?" + urlencode({"ns": NS, "q": "Thanks again"})).text
    assert 'id="small-talk"' in html and "nothing was searched" in html
    assert 'id="prompt"' not in html and "Nothing clears the relevance floor" not in html
    asked = client.get("/recall?" + urlencode({"ns": NS, "q": "Do I have any food allergies?"})).text
    assert 'id="small-talk"' not in asked


@pytest.mark.parametrize(("query", "about"), [
    ("How old am I?", "yes"), ("When does the renovation finish?", "yes"), ("Do I have any food allergies?", "yes"),
    ("What is the capital of Peru?", "no"), ("How do I configure BGP peering on a Juniper router?", "no"),
])
def test_recall_playground_says_whether_recall_read_a_question_about_the_user(
    client: TestClient, recorded: Recorded, query: str, about: str,
) -> None:
    """"about the user" is what recall decided by (a question about the asker anchors on weaker evidence):
    it was a pattern of its own, which said "no" for "How old am I?" while recall read it as one."""
    html = client.get("/recall?" + urlencode({"ns": NS, "q": query})).text
    assert f"about the user: {about}" in html
    assert recorded.engine.recall(query, NS, track=False).analysis.about_user is (about == "yes")


#: The engine's internal names that a page must not show as labels (issue 39).
JARGON = ("ln A", "anchor bar", "keep bar", "zsum", "rrf", "evidence z=", "coverage=", ">z<", "anchored")


def test_pages_speak_plain_words_and_explain_their_numbers(client: TestClient, recorded: Recorded) -> None:
    pages = {
        "recall": client.get("/recall?" + urlencode({"ns": NS, "q": "Do I have any food allergies?"})).text,
        "memory": client.get(f"/memory/{recorded.other.id}").text,
        "namespace": client.get(_ns()).text,
    }
    for name, html in pages.items():
        for word in JARGON:
            assert word not in html, (name, word)
    recall = pages["recall"]
    # the bars, the fusion and the floor's measures are named and explained on the page
    assert "bar to answer at all" in recall and "bar to be kept" in recall
    assert "scores added" in recall.split('id="fusion"', 1)[1].split("</span>", 1)[0]
    legend = unescape(recall.split('id="floor-legend"', 1)[1].split("</p>", 1)[0])
    assert "standard deviations" in legend and "unrelated everyday sentences" in legend
    assert "keyword weight" in legend and "compared with the two bars" in legend
    floor = recall.split('id="floor"', 1)[1].split("</tr>", 1)[0]
    assert ">evidence<" in floor and ">keyword match<" in floor and ">total evidence<" in floor
    assert "title=" in floor
    assert "evidence " in recall.split('id="hits"', 1)[1].split("</table>", 1)[0]
    assert "similar in meaning to the query" in recall
    # a memory's strength (its log activation) is labelled and explained, with the cold threshold
    for name in ("memory", "namespace"):
        legend = pages[name].split('id="strength-legend"', 1)[1].split("</p>", 1)[0].split("</dd>", 1)[0]
        legend = unescape(re.sub("<[^>]+>", "", legend))
        assert "how strongly the memory is held" in legend and "falls as time passes" in legend
        assert "below -3 and idle 30 days it goes cold" in legend, name
    assert "strength (log activation)" in pages["memory"]
    assert ">strength now<" in pages["namespace"]


def test_recall_playground_says_why_each_candidate_was_or_was_not_injected(
    client: TestClient, recorded: Recorded
) -> None:
    # the allergy episode is collapsed into the distilled fact: folded into it, not "dropped"
    assert recorded.allergy_fact is not None
    html = client.get("/recall?" + urlencode({"ns": NS, "q": "Do I have any food allergies?"})).text
    assert "dropped" not in html
    floor = html.split('id="floor"', 1)[1].split("</table>", 1)[0]
    rows = {re.findall(r'href="/memory/([^"]+)"', row)[0]: row for row in floor.split("<tr>")[2:]}
    assert "folded into" in rows[recorded.allergy.id]
    assert f"/memory/{recorded.allergy_fact.id}" in rows[recorded.allergy.id]
    assert ">injected<" in rows[recorded.allergy_fact.id]


def test_recall_playground_searches_the_user_tree_as_the_adapters_do(
    own_recorded: Recorded,
) -> None:
    hs = own_recorded.engine
    hs.upsert("The user's dog is called Biscuit", f"{NS}/store:memories", layer="semantic", kind="fact",
              role=None, source_id="dog")
    query = "What is my dog called?"
    expected = hs.recall(query, NS, subtree=True, track=False).to_prompt()
    assert "Biscuit" in expected
    with _client(own_recorded) as own:
        html = own.get("/recall?" + urlencode({"ns": NS, "q": query})).text
        assert unescape(html.split('<pre id="prompt">', 1)[1].split("</pre>", 1)[0]) == expected
        alone = own.get("/recall?" + urlencode({"ns": NS, "q": query, "only": "1"})).text
        assert "Biscuit" not in alone.split("<h2>Hits</h2>", 1)[1].split("</table>", 1)[0]


def test_recall_playground_refuses_bad_input(client: TestClient) -> None:
    r = client.get("/recall?" + urlencode({"ns": NS, "q": "allergies", "k": "lots"}))
    assert r.status_code == 400 and "k must be a whole number" in r.text
    r = client.get("/recall?" + urlencode({"ns": NS, "q": "allergies", "k": "0"}))
    assert r.status_code == 400 and "k must be" in r.text
    r = client.get("/recall?" + urlencode({"ns": "bad ns", "q": "allergies"}))
    assert r.status_code == 400 and "malformed" in r.text


def test_health_page_shows_the_figures(client: TestClient, recorded: Recorded) -> None:
    stats = recorded.engine.stats(NS).namespaces[NS]
    html = client.get("/health").text
    assert stats.recall_hit_rate is not None
    assert f"{100 * stats.recall_hit_rate:.0f}%" in html and "coverage" in html
    assert 'id="outbox-pending">0<' in html and "consolidation jobs" in html
    assert "done" in html  # the two consolidation jobs


def test_read_only_refuses_writes(client: TestClient, recorded: Recorded) -> None:
    page = client.get(f"/memory/{recorded.allergy.id}").text
    assert "Forget this memory" not in page and "Consolidate" not in client.get(_ns()).text
    assert client.post(f"/memory/{recorded.allergy.id}/forget").status_code == 403
    assert client.post("/consolidate", data={"ns": NS}).status_code == 403
    assert recorded.engine.get(recorded.allergy.id) is not None


def _form_token(html: str) -> str:
    found = re.search(r'name="token" value="([^"]+)"', html)
    assert found is not None, "the write form carries no token"
    return found.group(1)


def test_writable_forgets_and_consolidates(own_recorded: Recorded) -> None:
    recorded = own_recorded
    hs = recorded.engine
    with _client(recorded, writable=True) as client:
        page = client.get(f"/memory/{recorded.other.id}")
        assert "Forget this memory" in page.text
        token = _form_token(page.text)
        forget = f"/memory/{recorded.other.id}/forget"
        # writes from anywhere but the inspector's own pages are refused, whatever they carry
        for headers, data in [
            ({"origin": "http://evil.example"}, {"token": token}),
            ({"origin": "http://localhost:3000"}, {"token": token}),  # same host name, another site
            ({"origin": "http://127.0.0.1", "sec-fetch-site": "cross-site"}, {"token": token}),
            ({"origin": "http://127.0.0.1"}, {}),  # no form token
            ({}, {"token": "guessed"}),  # no origin, a wrong token
        ]:
            refused = client.post(forget, headers=headers, data=data, follow_redirects=False)
            assert refused.status_code == 403, (headers, data)
            assert hs.get(recorded.other.id) is not None
        r = client.post(forget, headers={"origin": "http://127.0.0.1", "sec-fetch-site": "same-origin"},
                        data={"token": token}, follow_redirects=False)
        assert r.status_code == 303
        assert hs.get(recorded.other.id) is None
        hs.record("Just so you know, I'm allergic to shellfish.", NS, session_id="s3")
        assert client.post("/consolidate", data={"ns": NS}).status_code == 403
        token = _form_token(client.get(_ns()).text)
        r = client.post("/consolidate", data={"ns": NS, "token": token})
        assert r.status_code == 200 and '"status": "done"' in unescape(r.text)
    assert any("shellfish" in m.content for m in hs.find(NS, layer=Layer.SEMANTIC, status=Status.ACTIVE))


def test_no_page_may_be_framed(client: TestClient, recorded: Recorded) -> None:
    for path in ("/", _ns(), f"/memory/{recorded.allergy.id}", "/recall", "/health", "/nowhere"):
        r = client.get(path)
        assert r.headers["content-security-policy"] == "frame-ancestors 'none'", path
        assert r.headers["x-frame-options"] == "DENY", path


def test_requests_for_another_host_are_refused(recorded: Recorded) -> None:
    """DNS rebinding: a page on evil.example resolving to 127.0.0.1 cannot read the inspector."""
    with TestClient(create_app(recorded.engine), base_url="http://evil.example") as client:
        assert client.get("/").status_code == 400


def test_missing_extra_names_the_ui_extra(recorded: Recorded, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "starlette", None)
    with pytest.raises(MissingExtraError, match=r"hindsight-memory\[ui\]"):
        create_app(recorded.engine)


def test_going_cold_lists_what_the_sweep_will_make_cold(own_recorded: Recorded) -> None:
    hs = own_recorded.engine

    def listed(client: TestClient, days: int) -> set[str]:
        page = client.get(_ns(fading=str(days)))
        assert page.status_code == 200 and 'id="fading-list"' in page.text
        return set(re.findall(r'<td><a href="/memory/([0-9A-Z]+)">', page.text))

    with _client(own_recorded) as client:
        week, month = listed(client, 7), listed(client, 40)
        assert f'fading=7">{len(week)}</a>' in client.get("/health").text
        assert client.get(_ns(fading="soon")).status_code == 400
    assert month and own_recorded.new_city.id not in month  # episodes idle since March; not the new fact
    report = hs.sweep(hs.now() + timedelta(days=40), namespace=NS)
    assert set(report.cooled_ids) == month


def test_a_failing_backend_is_a_page_saying_so(own_recorded: Recorded) -> None:
    with _client(own_recorded) as client:
        own_recorded.engine.close()
        r = client.get(f"/memory/{own_recorded.allergy.id}")
        assert r.status_code == 503 and "EngineClosedError" in r.text


def test_memory_page_shows_a_demotion_and_its_reinstatement(own_recorded: Recorded) -> None:
    hs = own_recorded.engine
    memory = own_recorded.other
    with _client(own_recorded) as client:
        assert "Never demoted." in client.get(f"/memory/{memory.id}").text
        hs.demote(memory.id, reason="Bob moved away", by="agent:helper")
        block = client.get(f"/memory/{memory.id}").text.split('id="demotions"', 1)[1].split("</ul>", 1)[0]
        assert 'class="in-force"' in block and "Bob moved away" in block and "agent:helper" in block
        hs.reinstate(memory.id)
        block = client.get(f"/memory/{memory.id}").text.split('id="demotions"', 1)[1].split("</ul>", 1)[0]
        assert 'class="reinstated"' in block and "reinstated" in block and "in force" not in block


def _block(html: str, element_id: str) -> str:
    return html.split(f'id="{element_id}"', 1)[1].split("</ul>", 1)[0]


def test_namespace_page_shows_what_it_reads_and_who_reads_it(own_recorded: Recorded) -> None:
    hs = own_recorded.engine
    shared = hs.record("Tomatoes need at least six hours of direct sun a day.", "kb:garden", layer="semantic",
                       kind="fact")
    child = f"{NS}/store:memories"
    hs.upsert("The user grows basil on the balcony", child, layer="semantic", kind="fact", role=None,
              source_id="basil")
    with _client(own_recorded) as client:
        page = client.get(_ns()).text
        assert "none: its recalls search only its own memories" in _block(page, "reads")
        assert "none: no other namespace reads it" in _block(page, "shared-with")

        hs.grant("kb:garden", to=NS)
        hs.grant(NS, to=OTHER, write=True)
        page = client.get(_ns()).text
        reads = _block(page, "reads")
        assert '<a href="/ns?name=kb%3Agarden">kb:garden</a>' in reads and "granted to this namespace" in reads
        assert OTHER not in reads and "none" not in reads and "promotes" not in reads  # a read grant
        shared_with = _block(page, "shared-with")
        assert f'<a href="/ns?name=user%3Abob">{OTHER}</a>' in shared_with and "kb:garden" not in shared_with
        assert "may promote general facts into it" in shared_with  # a write grant says so
        # the grantee's page shows the other side; a child reads through its root's grant
        assert f'<a href="/ns?name=user%3Aamy">{NS}</a>' in _block(client.get(f"/ns?name={OTHER}").text, "reads")
        below = _block(client.get("/ns?" + urlencode({"name": child})).text, "reads")
        assert "kb:garden" in below and f"granted to its root {NS}" in below
        garden = client.get("/ns?name=kb:garden").text
        assert f'<a href="/ns?name=user%3Aamy">{NS}</a>' in _block(garden, "shared-with")

        # the playground names the shared memory it searched, and the memory opens on its own page
        html = client.get("/recall?" + urlencode({"ns": NS, "q": "How much sun do tomatoes need?"})).text
        assert f'<a href="/memory/{shared.id}">' in html.split('id="channels"', 1)[1].split('id="floor"', 1)[0]
        assert "shared from kb:garden" in unescape(html.split('<pre id="prompt">', 1)[1].split("</pre>", 1)[0])
        opened = client.get(f"/memory/{shared.id}")
        assert opened.status_code == 200 and "kb:garden" in opened.text

        hs.revoke("kb:garden", to=NS)
        page = client.get(_ns()).text
        assert "kb:garden" not in _block(page, "reads") and OTHER in _block(page, "shared-with")
