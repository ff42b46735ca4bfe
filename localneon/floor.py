"""``python -m localneon.floor``: the database work one trial cannot avoid, timed (``localneon.measure.floor``)."""

from __future__ import annotations

import sys

from localneon.measure.floor import main

if __name__ == "__main__":
    sys.exit(main())
