"""``docs/cli.md``: the ``--help`` of the app and of each command, generated so it cannot drift
(``python scripts/cli_docs.py`` rewrites it; a test fails when it is stale)."""

from __future__ import annotations

INTRO = """# The `hindsight` command line

`pip install hindsight-memory` installs the `hindsight` command (also `python -m hindsight_core.cli`).
It opens the same memory your code does: the embedded directory from `--path` or `$HINDSIGHT_PATH`
(default `./.hindsight`), and `--database-url` / `$HINDSIGHT_DATABASE_URL`, `--redis-url` /
`$HINDSIGHT_REDIS_URL`, `--chroma-url` / `$HINDSIGHT_CHROMA_URL` for a deployment on servers; an option
wins over its variable. `hindsight worker` is the long-running process of such a deployment
(docs/deploy.md).

An embedded directory is owned by one engine at a time: while your application holds it open, the
command exits with code 3 and says so (close the application, or run Chroma as a server so that several
processes can share the data).

Every command that reports prints tables for people and JSON with `--json` (`export` writes JSONL;
`ui` and `worker` run until stopped); long operations (import, consolidate, sweep, reconcile, reembed)
draw a progress bar on stderr, except with `--json` (`--no-progress` turns them off). The same
operations take `progress=` in the API: `True` for a tqdm bar, or a `(done, total)` callback.

| exit code | meaning |
|---|---|
| 0 | done |
| 1 | not found (namespace, memory), nothing erased, or a consolidation run failed |
| 2 | bad input (`InvalidInputError`): nothing was changed |
| 3 | a backend is unavailable, or the data directory is in use by another engine |

Examples:

```bash
hindsight import chat_store.json -n user:ana          # a LlamaIndex SimpleChatStore file
hindsight import history.json -n user:ana --session s1 # LangChain messages_to_dict JSON
hindsight import events.jsonl -n user:ana              # one Event per line, as record_many takes
hindsight ls user:ana --layer semantic --status active
hindsight show 01J...                                   # sources, supersedes chain, forecast
hindsight recall user:ana "what should I cook tonight?" # the tree, as agents recall it; why each candidate
hindsight tune questions.jsonl -n user:ana -o tuned.json # fit the relevance floor to labelled questions
hindsight sweep --dry-run                               # what would go cold or be archived, and when
hindsight export user:ana -o ana.jsonl && hindsight --path /elsewhere import ana.jsonl
hindsight grant kb:travel --to agent:planner            # agent:planner and below recall kb:travel's facts
hindsight grants kb:travel                              # the grants naming kb:travel
hindsight revoke kb:travel --to agent:planner           # from the next recall on, in every process
hindsight --database-url postgresql://db/hs --chroma-url http://chroma:8000 worker  # until SIGTERM
```

`import` is idempotent: every event gets a `source_id` derived from its position and text (or keeps its
own), so importing a file again adds nothing. JSONL is read a line at a time, so memory stays bounded
whatever the file's size: every event is checked in a first pass, then recorded in batches, and bad
input imports nothing. A line may be at most 4 MiB (`--max-line-mb`) and a LangChain or LlamaIndex
file, which is parsed whole, 64 MiB (`--max-document-mb`); input past a cap, or a line that never ends,
exits 2 as soon as the cap is passed. Standard input (`-`) is first copied to a temporary file, so that
it can be read twice. An export is checked and written in one transaction, so its memories are held
until it commits. `export` writes everything needed to rebuild the
namespace elsewhere (memories of every layer and status with their ids and activation, edges,
transcripts, procedures, which episodes were consolidated, and the grants that name it as the shared
namespace or the grantee); importing it reproduces the namespace exactly, and `import -n` renames the
namespace in its grants too. Vectors are not exported: the importing engine embeds with its own embedder.

`tune` fits the relevance floor (the bar a memory's evidence must reach before recall injects it) to
questions you labelled: one JSON object per line, `{"question": ..., "answers": [...]}`, where `answers`
holds the ids or `source_id`s of the memories that answer it, or is `[]` for a question nothing should be
injected for (general knowledge, another topic); `forbid` names memories that must not be injected for
it (the old budget the new one replaced, "Thanks, bye!", another user's fact): an answer with one of
them beside it fails, and a line with `forbid` and no `answers` is judged on that alone; `namespace`,
`session_id` and `at` (the ISO time it was asked) are optional. It needs at least 20 answerable and 10
unanswerable questions, and prints the operating-point curve: what each bar it tried answers, keeps
quiet and keeps clean of what was forbidden. Each candidate setting is chosen on all folds but one and
measured on the held one, so the table shows what the change does to questions it was not fitted on;
`--out` writes the tuned `HindsightConfig` as JSON only when that is better than today's settings. Load it with
`Hindsight(config=HindsightConfig.model_validate_json(path.read_text()))` or `hindsight worker --config`.
The recalls are read-only (nothing logged or reinforced). Tune again after changing the embedder.

`grant`, `revoke` and `grants` manage shared layers (`Hindsight.grant`, `revoke`, `grants`): a grant
lets recalls in the grantee, and in the namespaces below it (`agent:planner/user:7`), search the shared
namespace's semantic and procedural memories beside their own, by exact name only; a shared hit says
`shared from kb:travel` in the prompt (`hindsight recall` shows it). Granting again keeps the first
grant; granting a namespace to its own subtree exits 2 and changes nothing; revoking a grant that does not
exist exits 1. `grants NAMESPACE` lists the grants naming it on either side.
"""


def render() -> str:
    from typer.testing import CliRunner

    from hindsight_core.cli.app import app

    commands = [
        "namespaces", "ls", "show", "recall", "tune", "stats", "import", "export", "consolidate", "sweep", "reconcile",
        "reembed", "forget", "grant", "revoke", "grants", "ui", "worker",
    ]
    parts = [INTRO]
    for args in [[], *([c] for c in commands)]:
        result = CliRunner().invoke(app, [*args, "--help"], prog_name="hindsight", terminal_width=100,
                                    max_content_width=100)
        if result.exit_code != 0:
            raise RuntimeError(f"hindsight {' '.join(args)} --help failed: {result.output}")
        title = "hindsight --help" if not args else f"hindsight {args[0]} --help"
        parts.append(f"## `{title}`\n\n```text\n{result.stdout.rstrip()}\n```\n")
    return "\n".join(parts)
