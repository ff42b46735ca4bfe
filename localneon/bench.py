"""``python -m localneon.bench``: timings of the operations a trial depends on, in ``localneon.measure.bench``."""

from __future__ import annotations

import sys

from localneon.measure.bench import main

if __name__ == "__main__":
    sys.exit(main())
