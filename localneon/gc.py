"""``python -m localneon.gc``: drop what killed processes left, in ``localneon.engine.gc``."""

from __future__ import annotations

import sys

from localneon.engine.gc import main

if __name__ == "__main__":
    sys.exit(main())
