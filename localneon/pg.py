"""``python -m localneon.pg start|stop|status|release``: the embedded cluster, in ``localneon.cluster.pg``."""

from __future__ import annotations

import sys

from localneon.cluster.pg import main

if __name__ == "__main__":
    sys.exit(main())
