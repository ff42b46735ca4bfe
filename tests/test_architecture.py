"""The house rules that imports can break: no cycles, and each folder keeps to its role."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("harness", "scorers", "evals", "analysis", "localneon")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    return {module_name(path): path for package in PACKAGES for path in (ROOT / package).rglob("*.py")}


def runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of `tree` outside `if TYPE_CHECKING:` blocks (annotations only, never run)."""
    kept: list[ast.AST] = []
    pending = [tree]
    while pending:
        node = pending.pop()
        kept.append(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and isinstance(child.test, ast.Name) and child.test.id == "TYPE_CHECKING":
                pending.extend(child.orelse)
                continue
            pending.append(child)
    return kept


def imports_of(path: Path, known: set[str]) -> set[str]:
    """Every project module `path` imports when it runs, at the top or inside a function (a cycle is
    a cycle wherever the import sits); imports for type checkers alone are left out."""
    found: set[str] = set()
    for node in runtime_nodes(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        found.update(name for name in names if name in known)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    known = set(modules)
    # A package's __init__ importing its own submodules is how packages work, not a cycle.
    return {
        name: {dep for dep in imports_of(path, known) if dep != name and not dep.startswith(name + ".")}
        for name, path in modules.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as the list of modules around it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if dep not in state and (cycle := visit(dep)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_the_cycle_finder_finds_a_planted_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_imports_for_type_checkers_alone_are_not_edges(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\nelse:\n    import b\nimport c\n"
    )
    assert imports_of(module, {"a", "b", "c"}) == {"b", "c"}


def test_no_import_cycle_between_project_modules() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


@pytest.mark.parametrize(
    ("package", "must_not_import"),
    [
        ("harness", ("scorers", "evals", "analysis")),  # the harness runs a case and knows nothing about scoring
        ("scorers", ("evals",)),  # scorers are pure functions of a trial's record
        ("localneon", ("harness", "scorers", "evals", "analysis")),  # reached only through MCP and HTTP
    ],
)
def test_each_folder_keeps_to_its_role(package: str, must_not_import: tuple[str, ...]) -> None:
    graph = import_graph()
    wrong = sorted(
        f"{module} imports {dep}"
        for module, deps in graph.items()
        if module.split(".")[0] == package
        for dep in deps
        if dep.split(".")[0] in must_not_import
    )
    assert not wrong, "\n".join(wrong)


def test_the_trial_runner_reaches_a_server_family_only_through_its_interface() -> None:
    """`harness/run/` imports the interface and the registry, never a family's own package (Neon's today)."""
    graph = import_graph()
    wrong = sorted(
        f"{module} imports {dep}"
        for module, deps in graph.items()
        if module.startswith("harness.run")
        for dep in deps
        if dep.startswith("harness.servers.") and dep not in ("harness.servers.family", "harness.servers.registry")
    )
    assert not wrong, "\n".join(wrong)
    assert "harness.servers.family" in graph["harness.run.trial"]


# Every `braintrust eval` process, a control-agent run included, loads the wiring and registers every
# provider; these libraries are only for the runs that use them and cost about 2 CPU-seconds together.
HEAVY_LIBRARIES = ("anthropic", "openai", "bm25s", "scipy")


def test_loading_the_evals_and_every_provider_leaves_the_model_libraries_unloaded() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, evals._wiring\n"
        "from harness.models.providers.registry import provider_specs\n"
        "provider_specs()\n"
        f"print(sorted(name for name in {HEAVY_LIBRARIES!r} if name in sys.modules))\n"
    )
    repo = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]", f"loaded at import: {done.stdout.strip()}"
