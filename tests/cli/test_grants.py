"""``hindsight grant``, ``revoke`` and ``grants`` against a real embedded engine: a grant changes what
the grantee's recall reads, the listing shows it (all of them, or those naming one namespace; a table or
JSON), bad input is one line and exit 2 with nothing changed, and a revoke of no grant exits 1."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from hindsight_core import Hindsight

SHARED = "kb:travel"
AGENT = "agent:planner"
USER = f"{AGENT}/user:7"
VISA = "Visitors to Japan for up to 90 days need no visa, only a passport valid for the whole stay."
QUESTION = "Do I need a visa for a two-week trip to Japan?"


def _seed(hs: Hindsight) -> str:
    """A shared fact, and a user of the grantee with a conversation of its own."""
    visa = hs.record(VISA, SHARED, layer="semantic", kind="fact")
    hs.record("I'm planning a trip to Japan in April with my sister.", USER, session_id="s1")
    return visa.id


def _listed(cli: Callable[..., Any], *args: str) -> list[tuple[str, str, datetime]]:
    result = cli("grants", *args, "--json")
    assert result.exit_code == 0, result.stderr
    return [(g["namespace"], g["grantee"], datetime.fromisoformat(g["granted_at"])) for g in result.json()]


def test_a_grant_lets_the_grantee_s_tree_recall_the_shared_fact_until_revoked(
    cli: Callable[..., Any], open_engine: Callable[[Path], Hindsight], data_dir: Path, clock: Any
) -> None:
    hs = open_engine(data_dir)
    visa = _seed(hs)
    hs.close()
    before = cli("recall", USER, QUESTION, "--json").json()
    assert visa not in [h["memory"]["id"] for h in before["hits"]]  # no grant, no read

    granted = cli("grant", SHARED, "--to", AGENT)
    assert granted.exit_code == 0, granted.stderr
    assert f"granted {SHARED!r} to {AGENT!r}" in granted.stdout
    assert _listed(cli) == [(SHARED, AGENT, clock())]
    after = cli("recall", USER, QUESTION, "--json").json()
    assert [h["memory"]["namespace"] for h in after["hits"] if h["memory"]["id"] == visa] == [SHARED]
    assert f'shared from {SHARED}] "{VISA}"' in after["prompt"]
    human = cli("recall", USER, QUESTION)
    assert f"shared from {SHARED}" in human.stdout and SHARED in human.stdout

    revoked = cli("revoke", SHARED, "--to", AGENT)
    assert revoked.exit_code == 0 and f"revoked {SHARED!r} from {AGENT!r}" in revoked.stdout
    assert _listed(cli) == []
    gone = cli("recall", USER, QUESTION, "--json").json()
    assert visa not in [h["memory"]["id"] for h in gone["hits"]] and "shared from" not in gone["prompt"]


def test_granting_again_keeps_the_first_grant(cli: Callable[..., Any], clock: Any) -> None:
    first = cli("grant", SHARED, "--to", AGENT, "--json")
    assert first.exit_code == 0 and first.json()["new"] is True
    granted_at = clock()
    clock.advance(days=3)
    again = cli("grant", SHARED, "--to", AGENT, "--json").json()
    assert again == {"namespace": SHARED, "grantee": AGENT, "granted_at": first.json()["granted_at"],
                     "write": False, "new": False}
    assert datetime.fromisoformat(again["granted_at"]) == granted_at
    human = cli("grant", SHARED, "--to", AGENT)
    assert human.exit_code == 0 and f"{SHARED!r} was already granted to {AGENT!r}" in human.stdout
    assert _listed(cli) == [(SHARED, AGENT, granted_at)]
    # granting again with --write sets what the grant allows, and keeps its time
    writing = cli("grant", SHARED, "--to", AGENT, "--write", "--json").json()
    assert (writing["write"], writing["new"], writing["granted_at"]) == (True, False, first.json()["granted_at"])
    table = cli("grants", SHARED)
    assert [line.split("│")[-2].strip() for line in table.stdout.splitlines() if AGENT in line] == ["yes"]


def test_grants_lists_every_grant_or_those_naming_one_namespace(cli: Callable[..., Any], clock: Any) -> None:
    assert cli("grant", SHARED, "--to", AGENT).exit_code == 0
    first = clock()
    clock.advance(hours=1)
    assert cli("grant", "kb:food", "--to", AGENT).exit_code == 0
    assert cli("grant", SHARED, "--to", "agent:writer").exit_code == 0
    later = clock()

    assert _listed(cli) == [("kb:food", AGENT, later), (SHARED, AGENT, first), (SHARED, "agent:writer", later)]
    # a namespace as the shared one, as the grantee, or named by no grant
    assert _listed(cli, SHARED) == [(SHARED, AGENT, first), (SHARED, "agent:writer", later)]
    assert _listed(cli, AGENT) == [("kb:food", AGENT, later), (SHARED, AGENT, first)]
    assert _listed(cli, USER) == []  # exact names: the grantee's child is named by no grant
    table = cli("grants", SHARED)
    assert table.exit_code == 0 and f"grants naming {SHARED!r}" in table.stdout
    rows = [line for line in table.stdout.splitlines() if SHARED in line and "grants naming" not in line]
    assert len(rows) == 2 and "kb:food" not in table.stdout
    assert AGENT in rows[0] and first.strftime("%Y-%m-%d %H:%M") in rows[0]
    assert "agent:writer" in rows[1] and later.strftime("%Y-%m-%d %H:%M") in rows[1]
    none = cli("grants", USER)
    assert none.exit_code == 0 and f"no grants naming {USER!r}" in none.stdout


def test_an_invalid_grant_is_a_clean_error_and_changes_nothing(cli: Callable[..., Any]) -> None:
    assert cli("grant", "kb:food", "--to", AGENT).exit_code == 0
    before = _listed(cli)
    for args in (
        ("grant", SHARED, "--to", f"{SHARED}/eu"),  # one subtree: it reads its own without a grant
        ("grant", f"{AGENT}/user:7", "--to", AGENT),
        ("grant", "not a namespace", "--to", AGENT),
        ("grant", SHARED, "--to", "{agent}"),
        ("revoke", "kb:food", "--to", "not a namespace"),
        ("grants", "not a namespace"),
    ):
        result = cli(*args)
        assert result.exit_code == 2, (args, result.output)
        assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1, args
        assert "Traceback" not in result.output and result.stdout == "", args
    assert "one subtree" in cli("grant", SHARED, "--to", f"{SHARED}/eu").stderr
    assert "malformed" in cli("grant", "not a namespace", "--to", AGENT).stderr
    assert _listed(cli) == before
    missing = cli("grant", SHARED)  # --to is required: click's own usage error, exit 2
    assert missing.exit_code == 2 and "--to" in missing.output and _listed(cli) == before


def test_revoking_a_grant_that_does_not_exist_exits_1_and_changes_nothing(cli: Callable[..., Any]) -> None:
    assert cli("grant", "kb:food", "--to", AGENT).exit_code == 0
    before = _listed(cli)
    human = cli("revoke", SHARED, "--to", AGENT)
    assert human.exit_code == 1
    assert f"nothing revoked: {SHARED!r} was not granted to {AGENT!r}" in human.stdout
    wrong_way = cli("revoke", AGENT, "--to", "kb:food", "--json")  # a grant names the shared namespace first
    assert wrong_way.exit_code == 1
    assert wrong_way.json() == {"namespace": AGENT, "grantee": "kb:food", "revoked": False}
    assert _listed(cli) == before
    done = cli("revoke", "kb:food", "--to", AGENT, "--json")
    assert done.exit_code == 0 and done.json() == {"namespace": "kb:food", "grantee": AGENT, "revoked": True}
    assert _listed(cli) == []
