"""The SDK's private API is used in `braintrust_run/sdk_private.py` alone, and only on the SDK it was read from."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

from braintrust import SpanCustomizer, SpanExportData, set_span_customizers

from braintrust_run import sdk_private as private
from tests.fakes.braintrust_server import FakeBraintrust

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("evals", "braintrust_run", "analysis", "harness", "scorers", "localmodel", "validity", "localneon", "tests")
HOME = ROOT / "braintrust_run" / "sdk_private.py"


def private_sdk_uses(path: Path) -> list[str]:
    """`from braintrust... import _name` and `braintrust...._name` in one file, by line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "braintrust":
            found += [f"{node.lineno}: {alias.name}" for alias in node.names if alias.name.startswith("_")]
            if any(part.startswith("_") for part in (node.module or "").split(".")):
                found.append(f"{node.lineno}: {node.module}")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            text = ast.unparse(node)
            if text.startswith("braintrust."):
                found.append(f"{node.lineno}: {text}")
    return found


def test_the_scanner_finds_a_planted_private_import(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(
        "from braintrust.logger import _internal_get_global_state\nimport braintrust\nbraintrust.logger._state\n"
    )
    assert private_sdk_uses(planted) == ["1: _internal_get_global_state", "3: braintrust.logger._state"]


def test_no_module_but_one_uses_the_sdks_private_api() -> None:
    users = {
        str(path.relative_to(ROOT)): uses
        for package in SCANNED
        for path in (ROOT / package).rglob("*.py")
        if path != HOME and (uses := private_sdk_uses(path))
    }
    assert users == {}, f"use braintrust_run/sdk_private.py instead: {users}"
    assert private_sdk_uses(HOME), "the home of the private API uses none: the scanner or the module moved"


def test_the_installed_sdk_is_the_one_the_private_api_was_read_from() -> None:
    installed = importlib.metadata.version("braintrust")
    assert installed == private.READ_FROM, (
        f"braintrust {installed} is installed, braintrust_run/sdk_private.py was read from {private.READ_FROM}: "
        "read its functions against the new SDK's source, then update READ_FROM"
    )


class _Marker(SpanCustomizer):
    def on_span_export(self, data: SpanExportData) -> SpanExportData:
        return data


def test_each_private_read_answers_what_it_says() -> None:
    before = private.span_customizers()
    marker = _Marker()
    set_span_customizers([*before, marker])
    try:
        assert private.span_customizers()[-1] is marker
    finally:
        set_span_customizers(list(before))
    logger = private.background_logger()
    assert hasattr(logger, "failed_publish_payloads_dir") and callable(logger.flush)


def test_the_login_token_is_the_key_the_sdk_logged_in_with() -> None:
    """In a process of its own (a login is process-wide), against the stand-in for Braintrust's API."""
    probe = (
        "import os, braintrust\n"
        "from braintrust_run.sdk_private import login_token\n"
        "print(login_token())\n"
        "braintrust.login()\n"
        "print(login_token() == os.environ['BRAINTRUST_API_KEY'])\n"
    )
    with FakeBraintrust() as braintrust:
        env = {**os.environ, **braintrust.env()}
        done = subprocess.run(
            [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
        )
    assert done.stdout.split() == ["None", "True"], done.stderr[-2000:]
