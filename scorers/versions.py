"""Each scorer's version: a short hash of the code and data its verdict depends on.

Why: a scorer changes (a stricter rule, a fixed parse), and a stored run's scores were made by the
old one. A score that names the version that made it tells a reader whether today's scorer would
say the same, and `python -m analysis.rescore` shows what it says instead. A version written by
hand is forgotten; this one is derived, so it changes whenever the code does.

What a version covers, found by reading the source (nothing is imported to find it):
- the scorer's own module, whole (the module that defines the function its `SPEC` names);
- in every project module it uses, transitively, the top-level definitions it reaches by name
  (functions, classes, constants, each with what *they* name), plus the module's statements that
  run on import and bind nothing. So `harness/servers/registry.py`'s `roles_for` and the tool roles
  it reads are in every scorer that judges tools, while `family_for` and the sandbox machinery it
  imports are in none; an edit to a helper of one scorer moves that scorer's version alone;
- the version of every installed distribution a reached definition imports (`pglast`, `autoevals`,
  ...): an upgraded SQL parser can change a verdict;
- the bytes of the data files the scorer reads as configured (`ScorerSpec.reads`: the judge's
  template for factuality).

Comments, docstrings and blank lines are left out of the hashed text: editing them changes no
version. A name the reading cannot follow (a module used as a whole, a name bound in a way it does
not see) takes the whole module in: the version then moves more often than it must, never less.
What no reading of the source sees is not covered: a module imported by a name computed at run time
(`importlib.import_module(variable)`; a literal name is followed), or a file read without `reads=`
(`tests/scorers/test_versions.py` fails on a data file in `scorers/` no scorer declares).
This module is the mechanism, not a verdict, and is in no version. `python -m scorers.registry`
prints every scorer's version (`--parts`: what each covers).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import importlib.util
import io
import sys
import sysconfig
import tokenize
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from autoevals import Score

if TYPE_CHECKING:
    from scorers.spec import ScorerSpec

DIGITS = 12  # hex digits of a version: enough that two versions of one scorer never collide by chance
PART_DIGITS = 8
METADATA_KEY = "scorer_version"  # where a Score's metadata names the version that made it
SELF = __spec__.name if __spec__ is not None else __name__  # "scorers.versions", also under `python -m`


class VersionError(ValueError):
    """A scorer whose source cannot be read; the message names the module and file."""


# --- where a module's source is --------------------------------------------------------------------


@dataclass(frozen=True)
class Locator:
    """Finds a module's source file the way the import system would, without importing it.

    `roots`: folders to look in first, in order (a copy of `scorers/` under test); a top-level
    package not found there is looked up by `importlib.util.find_spec`, which runs nothing."""

    roots: tuple[Path, ...] = ()

    def package_dir(self, top: str) -> Path | None:
        """The folder of top-level package `top` (or the folder holding module `top`)."""
        for root in self.roots:
            if (root / top / "__init__.py").is_file() or (root / f"{top}.py").is_file():
                return root
        return _found_dir(top)

    def file_of(self, module: str) -> Path | None:
        """`a/b/c.py` or `a/b/c/__init__.py` under the folder of `a`; None when there is neither."""
        return _file_of(self, module)

    def is_project(self, top: str) -> bool:
        """Project code (its source is hashed), as opposed to the standard library or an installed
        distribution (only its version counts)."""
        if top in sys.stdlib_module_names or top == "__future__":
            return False
        root = self.package_dir(top)
        return root is not None and not _installed(root)


@cache
def _file_of(locator: Locator, module: str) -> Path | None:
    root = locator.package_dir(module.split(".")[0])
    if root is None:
        return None
    base = root.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@cache
def _found_dir(top: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin in (None, "built-in", "frozen"):
        return None
    origin = Path(spec.origin).resolve()
    return origin.parent.parent if origin.name == "__init__.py" else origin.parent


@cache
def _library_dirs() -> tuple[Path, ...]:
    paths = sysconfig.get_paths()
    return tuple(Path(paths[key]).resolve() for key in ("purelib", "platlib", "stdlib", "platstdlib") if key in paths)


def _installed(root: Path) -> bool:
    resolved = root.resolve()
    return any(resolved == library or library in resolved.parents for library in _library_dirs())


@cache
def distribution_of(top: str) -> str:
    """`name==version` of the installed distribution providing top-level module `top`: the one of the
    same name when it says it provides `top`, else the one that lists it (a slower search)."""
    try:
        same = importlib.metadata.distribution(top)
        provided = (same.read_text("top_level.txt") or "").split()
        if not provided or top in provided:
            return f"{same.metadata['Name']}=={same.version}"
    except importlib.metadata.PackageNotFoundError:
        pass
    names = importlib.metadata.packages_distributions().get(top) or []
    if not names:
        return f"{top}==unknown"
    name = sorted(names)[0]
    try:
        return f"{name}=={importlib.metadata.version(name)}"
    except importlib.metadata.PackageNotFoundError:
        return f"{name}==unknown"


# --- one module's top-level statements --------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """What an imported name stands for: `module` itself (`name` None) or `name` in `module`."""

    module: str
    name: str | None = None


@dataclass
class Statement:
    """One top-level statement: its hashed text, the names it binds and the names it uses."""

    text: str
    binds: set[str] = field(default_factory=set)
    uses: set[str] = field(default_factory=set)  # global names read bare
    attributes: set[tuple[str, str]] = field(default_factory=set)  # `name.attr` reads
    imports: list[Target] = field(default_factory=list)  # imports inside it (a function's own)
    always: bool = False  # runs on import and binds nothing a reader names: part of any use of the module


@dataclass
class Module:
    name: str
    statements: list[Statement]
    imported: dict[str, Target]  # top-level import aliases


def _resolve_from(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join([*parts, *([node.module] if node.module else [])])


def _import_targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> dict[str, Target]:
    """Alias -> what it names, for one import statement."""
    bound: dict[str, Target] = {}
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                bound[alias.asname] = Target(alias.name)
            else:  # `import a.b` binds `a`
                top = alias.name.split(".")[0]
                bound[top] = Target(top)
        return bound
    source = _resolve_from(module, is_package, node)
    for alias in node.names:
        if alias.name != "*":
            bound[alias.asname or alias.name] = Target(source, alias.name)
    return bound


def _is_type_checking(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _bound_names(node: ast.stmt) -> set[str]:
    """Names a top-level statement binds in the module (not inside the functions it defines)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    names: set[str] = set()
    pending: list[ast.AST] = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and current is not node:
            names.add(current.name)
            continue
        if isinstance(current, ast.Name) and isinstance(current.ctx, ast.Store):
            names.add(current.id)
        elif isinstance(current, ast.alias):
            names.add((current.asname or current.name).split(".")[0])
        pending.extend(ast.iter_child_nodes(current))
    return names


def _imported_by_name(node: ast.AST) -> str | None:
    """The module of `importlib.import_module("a.b")` (or `__import__`) with a literal name, else None."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    first = node.args[0]
    if called in ("import_module", "__import__") and isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None


def _reads(node: ast.AST) -> tuple[set[str], set[tuple[str, str]], list[ast.Import | ast.ImportFrom]]:
    """Names read anywhere in `node` (function bodies included), the `name.attr` reads among them, and
    the import statements inside it; one walk."""
    bare: set[str] = set()
    attributes: set[tuple[str, str]] = set()
    heads: set[int] = set()
    names: list[ast.Name] = []
    imports: list[ast.Import | ast.ImportFrom] = []
    for current in ast.walk(node):
        if isinstance(current, ast.Name):
            names.append(current)
        elif isinstance(current, ast.Attribute) and isinstance(current.value, ast.Name):
            attributes.add((current.value.id, current.attr))
            heads.add(id(current.value))
        elif isinstance(current, ast.Import | ast.ImportFrom):
            imports.append(current)
        elif (literal := _imported_by_name(current)) is not None:
            imports.append(ast.Import(names=[ast.alias(name=literal, asname="_")]))  # the module itself
    bare = {name.id for name in names if not isinstance(name.ctx, ast.Store) and id(name) not in heads}
    return bare, attributes, imports


def _cleaned_lines(source: str, tree: ast.Module) -> list[str]:
    """The source's lines without comments and docstrings (blanked, so line numbers stay)."""
    lines = source.splitlines()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        tokens = []
    for token in tokens:
        if token.type == tokenize.COMMENT:
            row, column = token.start
            lines[row - 1] = lines[row - 1][:column]
    holders = [
        tree,
        *(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)),
    ]
    for holder in holders:
        body = getattr(holder, "body", [])
        if not body or not _is_docstring(body[0]):
            continue
        doc = body[0]
        last = doc.end_lineno or doc.lineno
        first_line = lines[doc.lineno - 1].encode("utf-8")
        last_line = lines[last - 1].encode("utf-8")
        before = first_line[: doc.col_offset].decode("utf-8", "replace")
        after = last_line[doc.end_col_offset or 0 :].decode("utf-8", "replace")
        if not before.strip() and not after.strip():  # the docstring has its lines to itself
            for row in range(doc.lineno, last + 1):
                lines[row - 1] = ""
    return lines


def _text(lines: list[str], node: ast.stmt) -> str:
    decorators = getattr(node, "decorator_list", [])
    start = min([node.lineno, *(d.lineno for d in decorators)])
    end = node.end_lineno or node.lineno
    return "\n".join(line.rstrip() for line in lines[start - 1 : end] if line.strip())


@cache
def _parse(path: Path, module: str) -> Module:
    try:
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source, str(path))
    except (OSError, SyntaxError, UnicodeDecodeError) as error:
        raise VersionError(f"module {module} ({path}): cannot be read: {error}") from None
    is_package = path.name == "__init__.py"
    lines = _cleaned_lines(source, tree)
    statements: list[Statement] = []
    imported: dict[str, Target] = {}
    for index, node in enumerate(tree.body):
        if (index == 0 and _is_docstring(node)) or _is_type_checking(node):
            continue  # a docstring, or imports for type checkers alone
        if isinstance(node, ast.Import | ast.ImportFrom):
            imported.update(_import_targets(module, is_package, node))
            continue
        bare, attributes, inner_imports = _reads(node)
        nested = [target for inner in inner_imports for target in _import_targets(module, is_package, inner).values()]
        definition = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Assign)
        definition = definition or isinstance(node, ast.AnnAssign | ast.AugAssign)
        statements.append(
            Statement(
                text=_text(lines, node),
                binds=_bound_names(node),
                uses=bare,
                attributes=attributes,
                imports=nested,
                always=not definition and not _is_docstring(node),
            )
        )
    return Module(module, statements, imported)


# --- what a scorer reaches ---------------------------------------------------------------------------


@dataclass
class _Walk:
    locator: Locator
    reached: dict[str, set[int]] = field(default_factory=dict)  # module -> statement indices
    whole: set[str] = field(default_factory=set)
    names: set[tuple[str, str]] = field(default_factory=set)
    distributions: set[str] = field(default_factory=set)
    pending: list[tuple[str, int]] = field(default_factory=list)

    def module(self, name: str) -> Module | None:
        path = self.locator.file_of(name)
        return None if path is None else _parse(path, name)

    def enter(self, name: str) -> Module | None:
        """Note that `name` (and its packages' `__init__`) runs: their import-time statements count."""
        parts = name.split(".")
        found: Module | None = None
        for depth in range(1, len(parts) + 1):
            current = ".".join(parts[:depth])
            if current == SELF:
                return None
            loaded = self.module(current)
            if loaded is None:
                continue
            if current not in self.reached:
                self.reached[current] = set()
                for index, statement in enumerate(loaded.statements):
                    if statement.always:
                        self.add(current, index)
            found = loaded
        return found if found is not None and found.name == name else None

    def add(self, module: str, index: int) -> None:
        if index not in self.reached.setdefault(module, set()):
            self.reached[module].add(index)
            self.pending.append((module, index))

    def target(self, target: Target) -> None:
        top = target.module.split(".")[0]
        if not top or target.module == SELF or target.module.startswith(SELF + "."):
            return
        if not self.locator.is_project(top):
            if top not in sys.stdlib_module_names and top != "__future__":
                self.distributions.add(distribution_of(top))
            return
        if target.name is None:
            self.everything(target.module)
            return
        submodule = f"{target.module}.{target.name}"
        if self.locator.file_of(submodule) is not None:
            self.everything(submodule)
            return
        self.name(target.module, target.name)

    def everything(self, module: str) -> None:
        """All of `module`: it is used as a whole (passed around, or a name the reading cannot follow)."""
        if module in self.whole:
            return
        loaded = self.enter(module)
        if loaded is None:
            return
        self.whole.add(module)
        for index in range(len(loaded.statements)):
            self.add(module, index)
        for target in loaded.imported.values():
            self.target(target)

    def name(self, module: str, name: str) -> None:
        if (module, name) in self.names or module in self.whole:
            return
        self.names.add((module, name))
        loaded = self.enter(module)
        if loaded is None:
            return
        binding = [index for index, statement in enumerate(loaded.statements) if name in statement.binds]
        for index in binding:
            self.add(module, index)
        if name in loaded.imported:
            self.target(loaded.imported[name])
        elif not binding:
            self.everything(module)  # bound some way the reading does not see: take it all

    def run(self) -> None:
        while self.pending:
            module, index = self.pending.pop()
            loaded = self.module(module)
            assert loaded is not None
            statement = loaded.statements[index]
            for target in statement.imports:
                self.target(target)
            heads = {head for head, _ in statement.attributes}
            for used in statement.uses | heads:
                self.use(loaded, used, statement)

    def use(self, loaded: Module, used: str, statement: Statement) -> None:
        """A name `statement` reads: a definition of its module, or what an import bound it to."""
        if any(used in other.binds for other in loaded.statements):
            self.name(loaded.name, used)  # (also when an import bound it first: both are followed)
        target = loaded.imported.get(used)
        if target is None:
            return
        module = target.module if target.name is None else f"{target.module}.{target.name}"
        if target.name is not None and self.locator.file_of(module) is None:
            self.target(target)  # a name imported from a module
            return
        if not self.locator.is_project(module.split(".")[0]) or used in statement.uses:
            self.target(Target(module))  # a distribution, or a project module passed around whole
            return
        for head, attribute in statement.attributes:  # `module.attr`: that attribute alone
            if head == used:
                self.target(Target(module, attribute))


@dataclass(frozen=True)
class CodeVersion:
    """A module's code version and what went into it: per project module a digest of the text
    reached in it, and the installed distributions the reached code imports."""

    version: str
    parts: dict[str, str]


def _digest(*chunks: str) -> str:
    hasher = hashlib.sha256()
    for chunk in chunks:
        hasher.update(chunk.encode("utf-8"))
        hasher.update(b"\0")
    return hasher.hexdigest()


def code_version(module: str, locator: Locator | None = None) -> CodeVersion:
    """The version of `module`'s code: the module whole, what it reaches in project modules, and the
    distributions they import. A `VersionError` when the module has no readable source."""
    chosen = locator or Locator()
    if chosen.file_of(module) is None:
        raise VersionError(f"module {module}: no source file found")
    return _code_version(module, chosen)


@cache
def _code_version(module: str, locator: Locator) -> CodeVersion:
    walk = _Walk(locator)
    walk.everything(module)
    walk.run()
    parts: dict[str, str] = {}
    for name in sorted(walk.reached):
        loaded = walk.module(name)
        indices = sorted(walk.reached[name])
        if loaded is None or not indices:
            continue
        parts[name] = _digest(name, *(loaded.statements[index].text for index in indices))[:PART_DIGITS]
    for distribution in sorted(walk.distributions):
        parts[distribution] = ""
    version = _digest(*(f"{key}:{value}" for key, value in sorted(parts.items())))[:DIGITS]
    return CodeVersion(version, parts)


def reached(module: str, locator: Locator | None = None) -> dict[str, list[str]]:
    """What `module`'s code version covers: per project module, the names of the definitions reached
    (`<import-time>` for statements that bind none), for a person (`--parts`) and for tests."""
    walk = _Walk(locator or Locator())
    walk.everything(module)
    walk.run()
    covered: dict[str, list[str]] = {}
    for name in sorted(walk.reached):
        loaded = walk.module(name)
        if loaded is None or not walk.reached[name]:
            continue
        statements = [loaded.statements[index] for index in sorted(walk.reached[name])]
        covered[name] = sorted(
            {bound for s in statements for bound in s.binds}
            | ({"<import-time>"} if any(not s.binds for s in statements) else set())
        )
    return covered


# --- data files, and a scorer's version ---------------------------------------------------------------


def file_digest(path: Path) -> str:
    """The bytes' digest; a file that cannot be read has a version too (`unreadable`), never an error:
    the scorer reading it reports the problem on its scores."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:PART_DIGITS]
    except OSError:
        return "unreadable"


@dataclass(frozen=True)
class ScorerVersion:
    """One scorer's version, and the parts it is made of (for saying what changed)."""

    name: str
    version: str
    parts: dict[str, str]


def version_of(spec: ScorerSpec, env: Mapping[str, str] | None = None, locator: Locator | None = None) -> ScorerVersion:
    """`spec`'s version: its module's code version and the data it reads under `env` (default: the
    process's settings)."""
    code = code_version(spec.fn.__module__, locator)
    data = {f"data:{path.name}": file_digest(path) for path in spec.reads(env)}
    parts = {**code.parts, **data}
    version = code.version if not data else _digest(code.version, *sorted(data.values()))[:DIGITS]
    return ScorerVersion(spec.name, version, parts)


def scorer_versions(
    specs: Iterable[ScorerSpec], env: Mapping[str, str] | None = None, locator: Locator | None = None
) -> dict[str, str]:
    """{score name: version} of `specs` (e.g. `scorers.registry.SCORERS`)."""
    return {spec.name: version_of(spec, env, locator).version for spec in specs}


def stamp(score: Score, version: str) -> Score:
    """The same score, its metadata naming the version that made it."""
    return Score(name=score.name, score=score.score, metadata={**(score.metadata or {}), METADATA_KEY: version})


def version_in(score: Score) -> str | None:
    """The version a score's metadata names, if any."""
    value = (score.metadata or {}).get(METADATA_KEY)
    return value if isinstance(value, str) else None


def changed_parts(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    """What differs between two versions' parts: `module` (its code), `pglast 8.7 -> 8.8`, `data:x.yaml`."""
    changed: list[str] = []
    for key in sorted(set(old) | set(new)):
        if "==" in key:
            continue
        if old.get(key) != new.get(key):
            state = "new" if key not in old else "gone" if key not in new else "changed"
            changed.append(f"{key} ({state})")
    old_dists = {key.split("==")[0]: key for key in old if "==" in key}
    new_dists = {key.split("==")[0]: key for key in new if "==" in key}
    for name in sorted(set(old_dists) | set(new_dists)):
        if old_dists.get(name) != new_dists.get(name):
            changed.append(f"{old_dists.get(name, name + ' (none)')} -> {new_dists.get(name, 'none')}")
    return changed
