"""`python -m harness.pool setup [--apply]`: create or check the Neon pool projects (docs/servers.md#neon-cloud)."""

from __future__ import annotations

import sys

from harness.servers.neon.pool_setup import main

if __name__ == "__main__":
    sys.exit(main())
