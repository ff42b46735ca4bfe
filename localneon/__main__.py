"""``python -m localneon``: the server (``localneon.serve.cli``; also the ``localneon`` script)."""

from __future__ import annotations

from localneon.serve.cli import main

if __name__ == "__main__":
    main()
