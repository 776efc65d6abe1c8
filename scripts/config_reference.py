"""Writes docs/configuration.md from the code: the pydantic models of ``HindsightConfig``, the engine
constructor's signature and the environment variables the packages read.

The option descriptions are the ``#:`` comments above each field, so the reference cannot drift from
the code: ``tests/test_configuration_doc.py`` fails when the file differs from what this script renders.

    python scripts/config_reference.py            # rewrite docs/configuration.md
    python scripts/config_reference.py --check    # exit 1 when it is out of date
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "docs" / "configuration.md"
PACKAGES = ["hindsight_core", "hindsight_langchain", "hindsight_llamaindex"]

#: Every environment variable a package reads (the test checks none is missing), with what it does.
ENV_VARS: dict[str, tuple[str, str]] = {
    "HINDSIGHT_PATH": (
        "`./.hindsight`",
        "Data directory of `Hindsight()` without `path=`, and of the process-wide engine the LangChain and "
        "LlamaIndex adapters share when given no `engine=`.",
    ),
    "HINDSIGHT_DATABASE_URL": (
        "unset",
        "`database_url` of every engine built without it (yours, the adapters' shared engine, the command line's "
        "`--database-url`): a `postgresql://` store instead of SQLite in the data directory. An argument wins.",
    ),
    "HINDSIGHT_REDIS_URL": (
        "unset",
        "`redis_url` of every engine built without it (and the command line's `--redis-url`); "
        "`redis+cluster://host:port` for a Redis Cluster. An argument wins; `redis_url=\"\"` turns it off.",
    ),
    "HINDSIGHT_CHROMA_URL": (
        "unset",
        "`chroma_url` of every engine built without it (and the command line's `--chroma-url`): a Chroma "
        "server. An argument wins; `chroma_url=\"\"` is embedded Chroma.",
    ),
}

#: The engine constructor's options (the test checks every parameter is described).
ENGINE_OPTIONS: dict[str, str] = {
    "path": "Data directory: the SQLite file, the embedded Chroma index, archives and the ownership lock. "
    "An embedded directory belongs to one engine at a time (`DataDirectoryInUseError`).",
    "database_url": "A `postgresql://` URL (the `postgres` extra): the relational store on PostgreSQL instead of "
    "SQLite in `path`; `None` reads `HINDSIGHT_DATABASE_URL`.",
    "redis_url": "Keep activation in Redis sorted sets at this URL instead of the SQLite table.",
    "chroma_url": "Use a Chroma server (`HttpClient`) at this URL instead of the embedded index; processes that "
    "share memory need it.",
    "clock": "A callable returning an aware `datetime`: the engine's notion of now (decay, sweep, tests).",
    "embedder": "An `Embedder`, a FlagEmbedding model name or local path (`bge` extra), a LangChain `Embeddings` "
    "or LlamaIndex embedding model, or `None` for the bundled multilingual-e5-small. The data set records it "
    "(name and dimension): opening it with another raises `EmbedderMismatchError` (see `reembed`).",
    "config": "A `HindsightConfig` (below); `None` takes every default.",
    "token_counter": "Counts tokens for budgets; `None` uses the default embedder's tokenizer.",
    "vector_index": "A `VectorIndex` to use instead of Chroma.",
    "activation_index": "An `ActivationIndex` to use instead of SQLite or Redis.",
    "redis_client": "A ready `redis.Redis` client, instead of `redis_url`.",
    "reconcile_on_open": "Apply pending outbox work and repair indexes that lost entries when the engine opens.",
    "extractor": "Consolidation extractor: `RuleExtractor()` (default) or `llm_extractor(...)` from an adapter "
    "(any object with `extract(episodes, context)`).",
    "background_consolidation": "Run the background worker that consolidates a session every "
    "`lifecycle.consolidate_every` episodes and once it has been quiet for `lifecycle.consolidate_idle_s`; "
    "`False` consolidates on demand only.",
    "reembed": "Move a data set built with another embedder to `embedder`: every indexed memory is embedded "
    "again and the vector index rebuilt before the constructor returns (README, \"Changing the embedder\").",
    "starting_memories": "A template each new user's root namespace gets once on first use (`StartingMemories`, a "
    "JSONL path, or a list of strings and dicts; docs/architecture.md, \"Starting memories\"). Malformed, it "
    "raises `InvalidInputError` before anything opens.",
    "reranker": "A cross-encoder reranker: a FlagEmbedding reranker name or path (`bge` extra), or an object; "
    "overrides `recall.reranker`.",
}

#: Descriptions of fields that carry no ``#:`` comment in the code (a field with neither fails the render).
FIELD_NOTES: dict[str, str] = {
    "activation.half_life_days": "Half-life of activation per layer, in days; `null` for a layer that does not "
    "decay (working memory).",
    "activation.importance_weight": "How much importance (1-5) raises a fresh memory's `ln A_ref` per point "
    "above 3.",
    "write.max_content_chars": "Longest text `record()` accepts.",
    "write.max_metadata_bytes": "Largest encoded metadata JSON, in bytes (see `max_metadata_depth`).",
    "write.default_importance": "Importance (1-5) of a memory recorded without one.",
    "recall.default_k": "Memories `recall()` returns when no `k=` is given.",
    "recall.default_budget_tokens": "Token budget of the injected prompt when no `budget_tokens=` is given.",
    "recall.rrf_k": "The `rrf_k` constant of reciprocal-rank fusion (`fusion=\"rrf\"`).",
    "recall.channel_weights": "Weight of each recall channel in the fusion.",
    "recall.rerank_top_n": "Candidates the reranker rescores.",
    "recall.floor_anchor_base": "How far above chance's best (the median of the maximum of n unrelated z-scores) "
                                "the bar some candidate must reach stands (see `floor_coverage_weight`).",
    "recall.floor_history_relief": "How much a history cue or a time expression lowers the bar.",
    "recall.source_excerpt_tokens": "Tokens of each cited source excerpt.",
    "recall.max_sources": "Source excerpts cited per injected memory.",
    "recall.reinforce_max_age_s": "Longest a buffered reinforcement waits before it is flushed, in seconds.",
    "lifecycle.procedure_initial_confidence": "Confidence of a newly learned procedure.",
}

SECTIONS: dict[str, str] = {
    "activation": "How activation (the strength of a memory, decaying over time and reinforced by use) starts "
    "and fades. Half-lives are in days per layer (`null`: the layer does not decay); the decay rate is "
    "`ln 2 / half_life`.",
    "write": "Input limits and batching of the write path. Input beyond a limit raises `InvalidInputError` "
    "and changes nothing.",
    "recall": "Channels, fusion, the relevance floor and the prompt budget of `recall()`. Options marked *fitted* "
    "are constants chosen on benchmark data (`hindsight_core.config.fitted_constants(RecallConfig)` lists them): "
    "the ones to fit again on your own data.",
    "lifecycle": "Consolidation, procedures, decay and eviction. Activation thresholds are in log space "
    "(`ln A`): `-3.0` means `A < 0.05`, which an untouched episode (importance 3, half-life 7 days) reaches "
    "after about a month.",
}


def field_comments(cls: type) -> dict[str, str]:
    """The ``#:`` comment block right above each annotated field of a class body."""
    source = textwrap.dedent(inspect.getsource(cls))
    lines = source.splitlines()
    (node,) = ast.parse(source).body
    assert isinstance(node, ast.ClassDef)
    comments: dict[str, str] = {}
    for statement in node.body:
        if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
            continue
        block: list[str] = []
        index = statement.lineno - 2
        while index >= 0 and lines[index].strip().startswith("#:"):
            block.insert(0, lines[index].strip()[2:].strip())
            index -= 1
        comments[statement.target.id] = " ".join(block)
    return comments


def _markdown(text: str) -> str:
    """Pipes are escaped even inside code spans: GitHub splits table cells on them anyway."""
    return text.replace("``", "`").replace("|", "\\|")


def _type_name(annotation: Any) -> str:
    name = annotation.__name__ if isinstance(annotation, type) else str(annotation)
    name = re.sub(r"\b(?:[a-z_][\w]*\.)+([A-Za-z_]\w*)", r"\1", name)
    return name.replace("typing.", "")


def _constraints(field: FieldInfo) -> str:
    marks = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<"}
    parts = []
    for item in field.metadata:
        for attribute, mark in marks.items():
            value = getattr(item, attribute, None)
            if value is not None:
                parts.append(f"{mark} {value}")
    return ", ".join(parts)


def _value(value: Any) -> str:
    return f"`{json.dumps(value, ensure_ascii=False)}`"


def section_table(name: str, model: type[BaseModel]) -> list[str]:
    comments = field_comments(model)
    defaults = model().model_dump(mode="json")
    rows = [
        f"## `{name}` ({model.__name__})",
        "",
        SECTIONS[name],
        "",
        "| option | type | default | allowed | what it does |",
        "|---|---|---|---|---|",
    ]
    for field_name, field in model.model_fields.items():
        option = f"{name}.{field_name}"
        text = comments.get(field_name) or FIELD_NOTES.get(option)
        if not text:
            raise SystemExit(f"config_reference.py: {option} has no #: comment in the code and no FIELD_NOTES entry")
        if isinstance(field.json_schema_extra, dict) and (on := field.json_schema_extra.get("fitted")):
            text = f"{text} *Fitted on {on}.*"
        kind = _markdown(f"`{_type_name(field.annotation)}`")
        default = _markdown(_value(defaults[field_name]))
        rows.append(f"| `{option}` | {kind} | {default} | {_constraints(field)} | {_markdown(text)} |")
    return [*rows, ""]


def engine_parameters() -> dict[str, str]:
    """The constructor's keyword options and their defaults (every option is in its signature)."""
    from hindsight_core import Hindsight

    options: dict[str, str] = {}
    for parameter in inspect.signature(Hindsight.__init__).parameters.values():
        if parameter.name != "self" and parameter.kind is not inspect.Parameter.VAR_KEYWORD:
            options[parameter.name] = repr(parameter.default)
    return options


def env_vars_read() -> set[str]:
    """Every ``HINDSIGHT_*`` string constant in the packages' source: what they may read from the environment."""
    found: set[str] = set()
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    and re.fullmatch(r"HINDSIGHT_[A-Z0-9_]+", node.value)
                ):
                    found.add(node.value)
    return found


def render() -> str:
    from hindsight_core.config import HindsightConfig

    missing = sorted(set(engine_parameters()) - ENGINE_OPTIONS.keys())
    if missing:
        raise SystemExit(f"config_reference.py: describe the engine options {missing} in ENGINE_OPTIONS")
    undocumented = sorted(env_vars_read() - ENV_VARS.keys())
    if undocumented:
        raise SystemExit(f"config_reference.py: describe the environment variables {undocumented} in ENV_VARS")

    out = [
        "# Configuration reference",
        "",
        "<!-- Generated by scripts/config_reference.py from the code; do not edit by hand. -->",
        "",
        "Everything is configured in code: the engine constructor takes the deployment (where data lives, "
        "which servers), and `HindsightConfig` holds the tuning, in four sections. The environment "
        "variables below are the only settings read from the environment; every other option is passed "
        "explicitly.",
        "",
        "```python",
        "from hindsight_core import Hindsight, HindsightConfig",
        "",
        'config = HindsightConfig.model_validate({"recall": {"default_k": 8}, "lifecycle": {"cold_idle_days": 60}})',
        'hs = Hindsight("./.hindsight", config=config)',
        "hs.close()",
        "```",
        "",
        "Sections are pydantic models (`hindsight_core.config.ActivationConfig`, `WriteConfig`, "
        "`RecallConfig`, `LifecycleConfig`, all in `hindsight_core.config`); "
        "a value outside its allowed range raises pydantic's `ValidationError` when the config is built.",
        "",
        "## Environment variables",
        "",
        "| variable | default | what it does |",
        "|---|---|---|",
    ]
    for variable, (default, text) in sorted(ENV_VARS.items()):
        out.append(f"| `{variable}` | {default} | {text} |")
    out += [
        "",
        "## Engine constructor: `Hindsight(path=None, *, ...)`",
        "",
        "| option | default | env var | what it does |",
        "|---|---|---|---|",
    ]
    env_of = {"path": "`HINDSIGHT_PATH`"}
    for option, default in engine_parameters().items():
        out.append(f"| `{option}` | `{default}` | {env_of.get(option, '')} | {ENGINE_OPTIONS[option]} |")
    out.append("")
    options = {f"{name}.{sub}" for name, field in HindsightConfig.model_fields.items()
               for sub in field.annotation.model_fields}  # type: ignore[union-attr]
    stale = sorted(FIELD_NOTES.keys() - options)
    if stale:
        raise SystemExit(f"config_reference.py: FIELD_NOTES describes options that no longer exist: {stale}")
    for name, field in HindsightConfig.model_fields.items():
        model = field.annotation
        assert isinstance(model, type) and issubclass(model, BaseModel)
        out += section_table(name, model)
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/configuration.md is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print("docs/configuration.md is out of date: run python scripts/config_reference.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
