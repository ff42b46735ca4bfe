"""What one run shares between Braintrust's callbacks lives in `braintrust_run.run_state.Run`, not in module stores.

A module-level dict, list or set, a lock, a `global` statement or a memo (`functools.cache`) is
process-wide state a reader cannot follow and a second run in the process inherits; the scan below
finds each, in every module of `evals/`. Constants are tuples, frozensets or read-only mappings.
"""

from __future__ import annotations

import ast
from pathlib import Path

from braintrust_run.run_state import Run, new_run, this_run

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("evals", "braintrust_run")
# The one holder of the process's run.
HOLDER = ("braintrust_run/run_state.py", "_Holder")
# Memos of pure functions: the same arguments give the same answer in any run, so a second run may
# share them. Each names why.
PURE_MEMOS = {
    ("braintrust_run/login.py", "_parse"): "the CLI's flags, parsed from an argv that does not change in a process",
    (
        "braintrust_run/playground.py",
        "_settings_for",
    ): "settings with a playground's parameters applied: a pure function",
}
MUTABLE_CALLS = {
    "dict",
    "list",
    "set",
    "bytearray",
    "defaultdict",
    "OrderedDict",
    "Counter",
    "deque",
    "Lock",
    "RLock",
    "Event",
    "Condition",
    "Semaphore",
    "BoundedSemaphore",
    "Queue",
    "WeakValueDictionary",
    "WeakKeyDictionary",
    "WeakSet",
}
MUTABLE_DISPLAYS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
MEMOS = {"cache", "lru_cache", "cached"}


def _called_name(node: ast.expr) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _is_mutable(value: ast.expr | None) -> bool:
    return value is not None and (isinstance(value, MUTABLE_DISPLAYS) or _called_name(value) in MUTABLE_CALLS)


def _decorator_name(node: ast.expr) -> str | None:
    target = node.func if isinstance(node, ast.Call) else node
    return target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else None


def _bindings(body: list[ast.stmt]) -> list[tuple[str, ast.expr | None, int]]:
    found: list[tuple[str, ast.expr | None, int]] = []
    for statement in body:
        if isinstance(statement, ast.Assign):
            found += [(ast.unparse(target), statement.value, statement.lineno) for target in statement.targets]
        elif isinstance(statement, ast.AnnAssign):
            found.append((ast.unparse(statement.target), statement.value, statement.lineno))
    return found


def module_state(path: Path, relative: str) -> list[str]:
    """Every piece of process-wide mutable state `path` keeps at module level (empty: none)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = [
        f"{relative}:{line} {name}"
        for name, value, line in _bindings(tree.body)
        if (_is_mutable(value) and name != "__all__") or (name == "__all__" and isinstance(value, ast.List))
    ]
    for node in ast.walk(tree):
        if isinstance(node, ast.Global | ast.Nonlocal):
            found.append(f"{relative}:{node.lineno} {type(node).__name__.lower()} {', '.join(node.names)}")
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            memo = any(_decorator_name(decorator) in MEMOS for decorator in node.decorator_list)
            if memo and (relative, node.name) not in PURE_MEMOS:
                found.append(f"{relative}:{node.lineno} memo {node.name}")
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and (relative, node.name) != HOLDER and not _is_record(node):
            found += [
                f"{relative}:{line} {node.name}.{name}"
                for name, value, line in _bindings(node.body)
                if _is_mutable(value)
            ]
    return found


def _is_record(node: ast.ClassDef) -> bool:
    """A dataclass's fields are per instance (`field(default_factory=...)`), not shared."""
    return any(_decorator_name(decorator) == "dataclass" for decorator in node.decorator_list)


def state_in(root: Path, folders: tuple[str, ...] = SCANNED) -> list[str]:
    return [
        found
        for folder in folders
        for path in sorted((root / folder).rglob("*.py"))
        for found in module_state(path, path.relative_to(root).as_posix())
    ]


def test_no_module_in_evals_keeps_state_of_its_own() -> None:
    assert state_in(ROOT) == [], (
        "keep it in braintrust_run.run_state.Run (or make the constant a tuple or a read-only mapping)"
    )


def test_the_scan_finds_each_kind_of_store(tmp_path: Path) -> None:
    planted = tmp_path / "evals" / "with spaces in it" / "_planted.py"
    planted.parent.mkdir(parents=True)
    planted.write_text(
        "import functools, threading\n"
        "from collections import defaultdict\n"
        "__all__ = ['x']\n"
        "_SEEN: dict[str, int] = {}\n"
        "_ORDER = [n for n in range(3)]\n"
        "_LOCK = threading.Lock()\n"
        "_BY = defaultdict(list)\n"
        "NAMES = ('a', 'b')\n"
        "class Store:\n"
        "    kept = set()\n"
        "def bump():\n"
        "    global NAMES\n"
        "@functools.cache\n"
        "def asked(x): return x\n"
    )
    found = [line.rsplit(":", 1)[1].split(" ", 1)[1] for line in state_in(tmp_path)]
    assert sorted(found) == sorted(
        ["__all__", "_SEEN", "_ORDER", "_LOCK", "_BY", "global NAMES", "memo asked", "Store.kept"]
    )


def test_a_new_run_shares_nothing_with_the_last() -> None:
    first = new_run()
    first.scoring.judge_errors["k"] = "factuality: refused"
    first.start.planned_trials.append(3)
    assert this_run() is first
    second = new_run()
    assert this_run() is second and second is not first
    assert second.scoring.judge_errors == {} and second.start.planned_trials == []
    assert isinstance(second, Run) and second.scoring.lock is not first.scoring.lock
