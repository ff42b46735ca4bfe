"""``python -m localneon.snapshot``: save a tool surface, or report drift (``localneon.mcp.snapshot``)."""

from __future__ import annotations

import sys

from localneon.mcp.snapshot import main

if __name__ == "__main__":
    sys.exit(main())
