"""Child process for the browser test: serves the inspector on an embedded directory with
``hindsight_core.ui.serve``, exactly as ``hindsight ui`` does, on a clock frozen at a given instant
(the recorded history is simulated).

Usage: python serve_child.py DATA_DIR PORT ISO_NOW"""

from __future__ import annotations

import sys
from datetime import datetime

from hindsight_core import Hindsight
from hindsight_core.ui import serve


def main() -> None:
    data, port, now = sys.argv[1], int(sys.argv[2]), datetime.fromisoformat(sys.argv[3])
    with Hindsight(data, clock=lambda: now, background_consolidation=False) as hs:
        serve(hs, port=port)


if __name__ == "__main__":
    main()
