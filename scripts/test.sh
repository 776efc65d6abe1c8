#!/usr/bin/env bash
# Installs every extra and the dev tools (CPU torch included), then runs lint, type checks and the whole
# test suite (notebooks included).
# The Redis-backed tests need a server on 127.0.0.1:6379 (.ci/run starts one when none answers).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh all,dev
export ANONYMIZED_TELEMETRY=False HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/pytest -p no:cacheprovider --nbmake --nbmake-timeout=600 tests notebooks "$@"
