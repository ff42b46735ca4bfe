"""Bytebase's DBHub (npm `@bytebase/dbhub`) as a server under test.

`EVAL_SERVER=dbhub` runs the version pinned in `package.json` / `package-lock.json` here, installed
on first use with `npm ci` (`install.py`), one stdio process per trial, pointed at that trial's own
database by `readwrite.toml` or `readonly.toml` (`harness.servers.dbhub.stdio`).
"""
