#!/usr/bin/env bash
# The adapters against the oldest and the newest releases pyproject.toml allows.
#
# For each resolver strategy (uv's `lowest-direct`: every direct requirement at its lower bound, and
# `highest`), resolve the package with its langchain and llamaindex extras (plus the test tools of
# scripts/resolution-test-requirements.in), build a venv from that lock, install the package into it
# and run the adapter tests (tests/langchain, tests/llamaindex). A lower bound in pyproject.toml that
# no longer works fails the `lowest-direct` run; a new release inside a range that breaks us fails the
# `highest` run. The locks are written next to the venvs (`$HINDSIGHT_RESOLUTIONS_DIR`, default
# .venv-resolutions/) so a failure can be reproduced with the same versions.
#
#   bash scripts/test-resolutions.sh                  # both strategies
#   bash scripts/test-resolutions.sh highest          # one
#   bash scripts/test-resolutions.sh highest -k store # extra pytest arguments after the strategies
#
# uv comes from PATH, else it is installed from PyPI into a private venv. The notebook test is left to
# the main run (scripts/test.sh): it needs a Jupyter kernel and tests the notebook, not a version range.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
dir=${HINDSIGHT_RESOLUTIONS_DIR:-.venv-resolutions}
mkdir -p "$dir"

strategies=()
while [ $# -gt 0 ] && { [ "$1" = lowest-direct ] || [ "$1" = highest ]; }; do strategies+=("$1"); shift; done
[ ${#strategies[@]} -gt 0 ] || strategies=(lowest-direct highest)

uv=$(command -v uv || true)
if [ -z "$uv" ]; then
  [ -x "$dir/uv/bin/uv" ] || { "$python" -m venv "$dir/uv" && "$dir/uv/bin/pip" install -q uv; }
  uv="$dir/uv/bin/uv"
fi
version=$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
export ANONYMIZED_TELEMETRY=False HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

for strategy in "${strategies[@]}"; do
  start=$SECONDS
  lock="$dir/$strategy.txt"
  venv="$dir/$strategy"
  echo "== $strategy: resolving"
  "$uv" pip compile -q pyproject.toml scripts/resolution-test-requirements.in \
    --extra langchain --extra llamaindex --resolution "$strategy" --python-version "$version" \
    --no-header --no-annotate -o "$lock"
  grep -iE '^(langchain|langchain-core|langchain-classic|langgraph|llama-index-core|pydantic|chromadb|numpy)==' "$lock" \
    | tr '\n' ' '; echo
  [ -x "$venv/bin/python" ] || "$uv" venv -q --python "$python" "$venv"
  "$uv" pip sync -q --python "$venv/bin/python" "$lock"
  "$uv" pip install -q --python "$venv/bin/python" --no-deps -e .
  echo "== $strategy: testing"
  "$venv/bin/python" -m pytest -p no:cacheprovider -q \
    --ignore tests/langchain/test_notebook.py tests/langchain tests/llamaindex "$@"
  echo "== $strategy: done in $((SECONDS - start)) s"
done
