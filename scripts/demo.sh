#!/usr/bin/env bash
# Sets everything up, then records a multi-session conversation on the embedded default and shows
# what Hindsight stored and recalls. No server needed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m hindsight_core.demo "$@"
