#!/usr/bin/env bash
# Installs the base package (no torch, no extras: the demo uses only the embedded default), then records
# a multi-session conversation and shows what Hindsight stored and recalls. No server needed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh ""
exec .venv/bin/python -m hindsight_core.demo "$@"
