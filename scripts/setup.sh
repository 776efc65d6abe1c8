#!/usr/bin/env bash
# Creates .venv and installs the project with every extra. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
# torch first and pinned: an unpinned torch (pulled in by FlagEmbedding) resolves to a multi-GB CUDA build.
.venv/bin/pip install -q torch==2.13.0
.venv/bin/pip install -q -e ".[all,dev]"
