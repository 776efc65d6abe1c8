#!/usr/bin/env bash
# Creates .venv and installs the project with the extras asked for. Safe to re-run.
#
#   bash scripts/setup.sh              # every extra and the dev tools (what scripts/test.sh needs)
#   bash scripts/setup.sh ""           # the base package only (what scripts/demo.sh needs: no torch)
#   bash scripts/setup.sh redis,dev    # any comma-separated list of extras
#
# pip runs only when something changed: a stamp in .venv records a hash of pyproject.toml and of this
# script, and the extras already installed; a run whose extras are all installed under the same hash
# skips pip entirely.
set -euo pipefail
cd "$(dirname "$0")/.."
extras=${1-all,dev}
python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv

stamp=.venv/hindsight-setup.stamp
key=$(cat pyproject.toml scripts/setup.sh | .venv/bin/python -c \
  'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')
installed=""
if [ -f "$stamp" ] && [ "$(sed -n 1p "$stamp")" = "$key" ]; then
  installed=$(sed -n 2p "$stamp")
fi
missing=0
case ",$installed," in *",base,"*) ;; *) missing=1 ;; esac
for extra in ${extras//,/ }; do
  case ",$installed," in *",$extra,"*) ;; *) missing=1 ;; esac
done
if [ "$missing" = 0 ]; then
  exit 0
fi

.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
case ",$extras," in
  *",all,"* | *",bge,"*)
    # The bge extra needs torch. Pinned and installed first: an unpinned torch (pulled in by
    # FlagEmbedding) resolves on PyPI to a multi-GB CUDA build. A copy on this machine (pip's configured
    # find-links) wins; otherwise the CPU build comes from the PyTorch index. Its own dependencies are
    # installed with the project just below.
    if ! .venv/bin/pip install -q --no-index --no-deps torch==2.13.0 >/dev/null 2>&1; then
      echo "setup: no local torch==2.13.0 wheel; installing the CPU build from the PyTorch index"
      .venv/bin/pip install -q torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
    fi
    ;;
esac
if [ -n "$extras" ]; then
  .venv/bin/pip install -q -e ".[$extras]"
else
  .venv/bin/pip install -q -e .
fi

merged=base
for extra in ${installed//,/ } ${extras//,/ }; do
  case ",$merged," in *",$extra,"*) ;; *) merged="$merged,$extra" ;; esac
done
printf '%s\n%s\n' "$key" "$merged" > "$stamp"
