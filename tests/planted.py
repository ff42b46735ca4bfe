"""A password planted where a server hands it out: a connection string stored in a fixture's data.

Shared by the tests that check it never leaves the harness unredacted (results, uploads, report).
"""

from __future__ import annotations

import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PLANTED = "Planted_pw_7c41e9"
# A case (an item of a dataset's `cases:` list) whose reference calls read both connection strings.
CONNECTION_CASE = """
  - id: shop-connection-details
    scenario: tool_selection
    fixture: shop
    input: "In project {project_id}: what is my connection string, and which backup URL is configured?"
    reference_calls:
      - {tool: get_connection_string, arguments: {projectId: "{project_id}"}}
      - tool: run_sql
        arguments: {projectId: "{project_id}", sql: "SELECT note FROM customers WHERE note IS NOT NULL"}
    expected_answer: "The connection string of the main branch, and the backup URL stored in customers."
"""
UNREDACTED_PASSWORD = re.compile(r"postgres(?:ql)?://[^:\s/@]+:(?!\[REDACTED\])[^@\s]+@")


def planted_dataset(folder: Path, cases: str) -> Path:
    """`cases` (a dataset's YAML) in `folder`, beside a shop fixture whose data holds a password."""
    (folder / "fixtures").mkdir(parents=True)
    (folder / "cases.yaml").write_text(cases, encoding="utf-8")
    shop = (REPO_ROOT / "datasets" / "fixtures" / "shop.sql").read_text(encoding="utf-8")
    planted = (
        "ALTER TABLE customers ADD COLUMN note text;\n"
        f"UPDATE customers SET note = 'backup: postgresql://backup_admin:{PLANTED}@db.example.com/shop' WHERE id = 1;\n"
    )
    (folder / "fixtures" / "shop.sql").write_text(shop + "\n" + planted, encoding="utf-8")
    return folder / "cases.yaml"


def assert_no_password(text: str, where: str) -> None:
    """Neither the planted password nor any unredacted connection-string password is in `text`."""
    assert PLANTED not in text, f"the planted password reached {where}"
    assert not UNREDACTED_PASSWORD.search(text), f"a connection-string password reached {where}"
