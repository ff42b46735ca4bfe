"""The house rules that imports can break: no cycles, and each folder keeps to its role."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("harness", "scorers", "evals", "braintrust_run", "tuning", "analysis", "localneon", "localmodel")


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
        found.update(name for name in imported_names(node) if name in known)
    return found


def imported_names(node: ast.AST) -> list[str]:
    """What an import statement names: `import a.b` -> a.b; `from a import b` -> a and a.b (b may be
    a module or a name in a); relative imports and any other node -> none."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        return [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return []


def import_graph() -> dict[str, set[str]]:
    """Each project module's imports of other project modules (a copy of its own for each caller)."""
    return {name: set(deps) for name, deps in _import_graph().items()}


@cache
def _import_graph() -> dict[str, set[str]]:
    """Parsed once a test process: eight tests read the graph, and parsing every module costs a
    CPU-second each time (the sources do not change while the tests run)."""
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
        ("harness", ("scorers", "evals", "braintrust_run", "analysis")),  # runs a case, knows nothing of scoring
        ("scorers", ("evals", "braintrust_run")),  # scorers are pure functions of a trial's record
        ("localneon", ("harness", "scorers", "evals", "braintrust_run", "analysis")),  # only through MCP and HTTP
        ("braintrust_run", ("evals",)),  # the machinery knows nothing of the eval files that wire it
        ("tuning", ("evals",)),  # the tuning loop runs evals as a user would, never through their wiring
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


# localneon's rooms, and the rooms each may import besides itself: lowest first. The faces (mcp, rest,
# sql_http) stand side by side on the engine and never reach into one another; serve joins them.
LOCALNEON_ROOMS: dict[str, tuple[str, ...]] = {
    "settings": (),
    "cluster": ("settings",),
    "engine": ("settings", "cluster"),
    "mcp": ("settings", "cluster", "engine"),
    "rest": ("settings", "engine"),
    "sql_http": ("settings", "cluster", "engine"),
    "measure": ("settings", "cluster", "engine"),
    "serve": ("settings", "cluster", "engine", "mcp", "rest", "sql_http"),
}
# The commands (`python -m localneon`, `python -m localneon.pg`, ...): thin entries into one room each.
LOCALNEON_COMMANDS = ("__main__", "pg", "gc", "snapshot", "bench")
LOCALNEON_TOP_LEVEL_MAX = 10


def localneon_room(module: str) -> str | None:
    """The room of a `localneon.*` module (`localneon.engine.sql` -> engine), None for a command entry."""
    parts = module.split(".")
    return None if len(parts) < 2 or parts[1] in LOCALNEON_COMMANDS else parts[1]


def test_localneon_keeps_its_top_level_to_commands_settings_and_rooms() -> None:
    top = sorted(path.stem for path in (ROOT / "localneon").glob("*.py"))
    assert len(top) <= LOCALNEON_TOP_LEVEL_MAX, f"localneon/ has {len(top)} modules at its top: {top}"
    assert set(top) <= {"__init__", "settings", *LOCALNEON_COMMANDS}, f"put these in a room: {top}"
    folders = {path.parent.name for path in (ROOT / "localneon").glob("*/__init__.py")}
    assert folders == set(LOCALNEON_ROOMS) - {"settings"}, f"rooms on disk {sorted(folders)}"


def test_each_localneon_room_imports_only_the_rooms_below_it() -> None:
    graph = import_graph()
    wrong = sorted(
        f"{module} imports {dep}"
        for module, deps in graph.items()
        if module.startswith("localneon.") and (room := localneon_room(module)) is not None
        for dep in deps
        if dep.startswith("localneon.")
        and (dep_room := localneon_room(dep)) != room
        and (dep_room is None or dep_room not in LOCALNEON_ROOMS[room])
    )
    assert not wrong, "\n".join(wrong)


def test_only_settings_touches_the_environment_in_localneon() -> None:
    touching = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "localneon").rglob("*.py")
        if path.name != "settings.py" and re.search(r"os\.environ|os\.getenv|getenv\(", path.read_text())
    )
    assert touching == [], f"read variables through localneon.settings: {touching}"


def test_localmodel_is_imported_by_nothing_and_reaches_localneon_only_through_its_cluster() -> None:
    graph = import_graph()
    wrong = sorted(
        f"{module} imports {dep}"
        for module, deps in graph.items()
        for dep in deps
        if (dep.split(".")[0] == "localmodel" and module.split(".")[0] != "localmodel")
        or (
            module.split(".")[0] == "localmodel"
            and dep.split(".")[0] == "localneon"
            and not dep.startswith("localneon.cluster")
        )
    )
    assert not wrong, "\n".join(wrong)


# What runs a trial but is not a family reaches a family only through the seam: the interface
# (`family`), the registry and the roles type. The scripted control agents too: they play whatever
# family the trial gives them, by its tool roles and its answer reader (`TrialContext.roles`, `.answers`).
SEAM = ("harness.servers.family", "harness.servers.registry", "harness.servers.roles")
BEHIND_THE_SEAM = ("harness.run", "harness.mcp", "harness.models", "harness.recording", "harness.measure")
BEHIND_THE_SEAM_MODULES = ("harness.cases", "harness.config", "harness.environment")


def seam_breaches(graph: dict[str, set[str]]) -> list[str]:
    def behind(module: str) -> bool:
        return module in BEHIND_THE_SEAM_MODULES or module.startswith(tuple(f"{p}." for p in BEHIND_THE_SEAM))

    return sorted(
        f"{module} imports {dep}"
        for module, deps in graph.items()
        if behind(module)
        for dep in deps
        if dep.startswith("harness.servers.") and dep not in SEAM
    )


def test_the_trial_machinery_reaches_a_server_family_only_through_the_seam() -> None:
    """`harness/run/`, `mcp/`, `models/` (the control agents included), `recording/`, `cases.py` and
    `config.py` import the interface, the registry and the roles type, never a family's own package."""
    graph = import_graph()
    assert seam_breaches(graph) == []
    assert "harness.servers.family" in graph["harness.run.trial"]
    planted = {
        "harness.config": {"harness.servers.neon.published.pin"},
        "harness.mcp.probe": {"harness.servers.registry"},
        "harness.models.control.oracle": {"harness.servers.neon.conventions"},
    }
    assert seam_breaches(planted) == [
        "harness.config imports harness.servers.neon.published.pin",
        "harness.models.control.oracle imports harness.servers.neon.conventions",
    ]


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
        "from datetime import date\n"
        "from harness.models.rules import end_of_life_refusal\n"  # the SDK's deprecation table, read as a file
        "end_of_life_refusal('anthropic:claude-opus-4-5', date(2026, 12, 1))\n"
        f"print(sorted(name for name in {HEAVY_LIBRARIES!r} if name in sys.modules))\n"
    )
    repo = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]", f"loaded at import: {done.stdout.strip()}"


def top_level_imports(path: Path) -> set[str]:
    """The top-level packages a module imports when it is loaded: its own top-level statements (and
    those of its top-level `if`/`try` blocks), not the imports inside functions."""
    found: set[str] = set()
    pending: list[ast.stmt] = list(ast.parse(path.read_text(), str(path)).body)
    while pending:
        node = pending.pop()
        found.update(name.split(".")[0] for name in imported_names(node))
        if isinstance(node, ast.If) and not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            pending.extend([*node.body, *node.orelse])
        elif isinstance(node, ast.Try):
            pending.extend([*node.body, *node.orelse, *node.finalbody])
    return found


def test_no_module_and_no_test_file_loads_a_model_library_when_imported() -> None:
    """Every test worker imports every test file to collect it, and the suite's modules with them: a
    model SDK or scipy at the top of one costs each worker its import (the SDK 2 s, scipy.stats 2 s).
    They are imported where they are used."""
    files = [*project_modules().values(), *(ROOT / "tests").rglob("*.py")]
    loading = sorted(
        f"{path.relative_to(ROOT)} imports {', '.join(sorted(heavy))}"
        for path in files
        if (heavy := top_level_imports(path) & set(HEAVY_LIBRARIES))
    )
    assert loading == [], "import these inside the functions that use them: " + "; ".join(loading)


FAMILY_PACKAGES = ("harness.servers.neon", "harness.servers.dbhub")


def test_the_scorers_reach_a_family_only_through_the_registry() -> None:
    """Scorers judge a record by its family's tool roles (`harness.servers.registry.roles_for`) and its
    terms for the case (`case_for`), never by importing a family's package."""
    graph = import_graph()
    assert {"harness.servers.neon.family", "harness.servers.dbhub.family"} <= set(graph)  # two families
    wrong = sorted(
        f"{module} imports {dep}"
        for module, deps in graph.items()
        if module.split(".")[0] == "scorers"
        for dep in deps
        if dep.startswith(FAMILY_PACKAGES)
    )
    assert not wrong, "\n".join(wrong)
    assert "harness.servers.registry" in graph["scorers._common"]


# A scorer is a pure function of a record: importing one loads the record's and the case's types,
# the family table's leaf terms and its own helpers, never the machinery that runs a trial.
# Project modules outside scorers/, packages' __init__ aside: integrity 10, factuality 11 (the judge's model rules).
SCORER_IMPORT_LIMIT = 11
NOT_FOR_SCORERS = ("harness.config", "harness.models.agent", "harness.models.control", "harness.mcp", "harness.run")
FAMILY_MACHINERY = ("family", "backend", "sandbox", "api", "state", "stdio")


def test_importing_a_scorer_loads_no_hub() -> None:
    """`harness.config` once pulled the agent loop, every control agent and both families' machinery
    into each scorer's import (55 project modules for `scorers.integrity`)."""
    import json
    import subprocess
    import sys

    from scorers.registry import SCORERS

    modules = sorted({item.fn.__module__ for item in SCORERS})
    probe = (
        "import importlib, json, sys\n"
        "importlib.import_module(sys.argv[1])\n"
        f"project = {PACKAGES!r}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in project and"
        " not hasattr(sys.modules[m], '__path__') and not m.startswith('scorers.'))))\n"
    )
    found = {}
    for module in modules:  # one process each: what one scorer's import loads, not the sum
        done = subprocess.run(
            [sys.executable, "-c", probe, module], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr[-2000:]
        found[module] = json.loads(done.stdout)
    for module, loaded in found.items():
        machinery = [
            name
            for name in loaded
            if name.startswith(NOT_FOR_SCORERS)
            or (name.startswith(FAMILY_PACKAGES) and name.rsplit(".", 1)[-1] in FAMILY_MACHINERY)
        ]
        assert not machinery, f"importing {module} loads the machinery that runs trials: {machinery}"
        assert len(loaded) <= SCORER_IMPORT_LIMIT, f"importing {module} loads {len(loaded)} modules: {loaded}"


# --- Settings are read in one place ------------------------------------------------------------------

# Read the environment: only these modules (docs/architecture.md#where-settings-live). localneon/ has
# its own settings module; tests/ set up environments for what they run.
SETTINGS_SCANNED = ("harness", "evals", "braintrust_run", "tuning", "scorers", "analysis", "localmodel")
SETTINGS_MODULES = {
    "harness/environment.py": "the process environment's one snapshot; where things are on this machine",
    "harness/config.py": "Settings: what a trial needs, from the environment and .env",
    "braintrust_run/settings.py": "EvalSettings: what a run of the evals needs; a launcher's child environment",
    "harness/servers/neon/worn_surface.py": "which surface the twin wears: EVAL_SURFACE, LOCALNEON_SURFACE",
}
# (file, function) -> why it touches the environment itself. A whole copy for a child process
# (`{**os.environ, ...}`, `dict(os.environ)`, `os.environ.copy()`, `os.environ.items()`) needs no entry.
ENVIRONMENT_EXCEPTIONS = {
    ("harness/servers/neon/stdio.py", "server_environment"): "passes chosen variables on to a stdio server (a child)",
    (
        "braintrust_run/login.py",
        "adopt_cli_login",
    ): "the Braintrust SDK reads --api-key/--app-url/--org-name as variables",
    ("braintrust_run/login.py", "export_api_key"): "the SDK's REST client (the base lookup) reads BRAINTRUST_API_KEY",
    (
        "braintrust_run/login.py",
        "load_suite_env",
    ): "the SDKs (Braintrust, the model SDKs) read .env's variables themselves",
    (
        "braintrust_run/doors.py",
        "resolve_here",
    ): "an eval file started without the launcher makes the run's choices for itself",
    ("localmodel/smoke.py", "mark_descendants"): "marks every process the smoke starts, libraries' children too",
}
_COPIES = ("copy", "items")  # os.environ.copy(), os.environ.items(): the whole environment, for a child


def _is_environ(node: ast.AST) -> bool:
    """`os.environ` (or `os.environb`), or `environ` imported from os."""
    if isinstance(node, ast.Attribute) and node.attr in ("environ", "environb"):
        return isinstance(node.value, ast.Name) and node.value.id == "os"
    return isinstance(node, ast.Name) and node.id in ("environ", "environb")


class EnvironmentTouches(ast.NodeVisitor):
    """Every place a module reads or writes the environment other than by copying all of it:
    `os.environ.get(...)`, `os.environ[...]`, `... in os.environ`, `setdefault`, writes, `os.environ`
    handed on as a mapping, `os.getenv`/`putenv`/`unsetenv`, `load_dotenv` (which writes it)."""

    def __init__(self, tree: ast.Module) -> None:
        self.found: list[tuple[int, str, str]] = []  # (line, enclosing function, what)
        self._functions: list[str] = []
        self._copied: set[int] = set()  # id() of `os.environ` nodes that are whole copies
        imported_environ = any(
            isinstance(node, ast.ImportFrom) and node.module == "os" and any(a.name == "environ" for a in node.names)
            for node in ast.walk(tree)
        )
        if imported_environ:
            self.found.append((1, "<module>", "from os import environ"))
        self.visit(tree)

    def _function(self) -> str:
        return self._functions[-1] if self._functions else "<module>"

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._functions.append(node.name)
        self.generic_visit(node)
        self._functions.pop()

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def visit_Dict(self, node: ast.Dict) -> None:
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None and _is_environ(value):  # {**os.environ, ...}
                self._copied.add(id(value))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "dict" and len(node.args) == 1 and _is_environ(node.args[0]):
            self._copied.add(id(node.args[0]))
        if isinstance(func, ast.Attribute) and func.attr in _COPIES and _is_environ(func.value) and not node.args:
            self._copied.add(id(func.value))
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in ("getenv", "putenv", "unsetenv", "getenvb") or name == "load_dotenv":
            self.found.append((node.lineno, self._function(), f"{name}(...)"))
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if _is_environ(node) and id(node) not in self._copied:
            self.found.append((node.lineno, self._function(), "os." + node.attr))
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if _is_environ(node) and id(node) not in self._copied:
            self.found.append((node.lineno, self._function(), node.id))


def environment_touches(root: Path = ROOT) -> list[str]:
    """`file:line (function): what` for every environment read or write outside the settings modules
    and the listed exceptions."""
    wrong: list[str] = []
    for package in SETTINGS_SCANNED:
        for path in sorted((root / package).rglob("*.py")):
            where = path.relative_to(root).as_posix()
            if where in SETTINGS_MODULES:
                continue
            for line, function, what in EnvironmentTouches(ast.parse(path.read_text(), where)).found:
                if (where, function) not in ENVIRONMENT_EXCEPTIONS:
                    wrong.append(f"{where}:{line} ({function}): {what}")
    return wrong


def test_the_environment_checker_finds_every_kind_of_read_and_write(tmp_path: Path) -> None:
    module = tmp_path / "harness" / "m.py"
    module.parent.mkdir()
    module.write_text(
        "import os\nfrom dotenv import load_dotenv\n"
        "def reads(env=os.environ):\n"  # 3: a default that hands the environment on
        "    a = os.environ.get('A'); b = os.environ['B']; c = 'C' in os.environ\n"  # 4 (three)
        "    os.environ.setdefault('D', '1'); os.environ['E'] = '1'; del os.environ['F']\n"  # 5 (three)
        "    g = os.getenv('G'); load_dotenv('.env'); use(os.environ)\n"  # 6 (three)
        "def copies():\n"
        "    return {**os.environ, 'X': '1'}, dict(os.environ), os.environ.copy(), list(os.environ.items())\n"
    )
    found = [line.split(": ", 1)[0] for line in environment_touches(tmp_path)]
    assert found == [f"harness/m.py:{line} (reads)" for line in (3, 4, 4, 4, 5, 5, 5, 6, 6, 6)]


def test_only_the_settings_modules_read_the_environment() -> None:
    """Every setting is read once, in a settings module, and passed down (docs/development.md#adding-a-setting);
    modules of one process never talk through os.environ."""
    assert set(SETTINGS_MODULES) | {where for where, _ in ENVIRONMENT_EXCEPTIONS} <= {
        path.relative_to(ROOT).as_posix() for package in SETTINGS_SCANNED for path in (ROOT / package).rglob("*.py")
    }, "a listed settings module or exception no longer exists: remove it from the list"
    wrong = environment_touches()
    assert not wrong, "read these through a settings object (or list why not):\n" + "\n".join(wrong)
