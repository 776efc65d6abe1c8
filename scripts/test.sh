#!/usr/bin/env bash
# Installs every extra and the dev tools (CPU torch included), then runs lint, type checks and both test
# tiers (notebooks included).
# The integration tier needs Redis on 127.0.0.1:6379 and PostgreSQL on 5432 (.ci/run starts them when they
# do not answer).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh all,dev
export ANONYMIZED_TELEMETRY=False HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
.venv/bin/ruff check .
.venv/bin/mypy
# the unit tier first (seconds, fails fast), then the integration tier; exit code 5 = nothing selected
tier() { .venv/bin/pytest -p no:cacheprovider "$@" || { rc=$?; [ "$rc" -eq 5 ] || exit "$rc"; }; }
tier -m "not integration" tests "$@"
tier -m integration --nbmake --nbmake-timeout=600 tests notebooks "$@"
