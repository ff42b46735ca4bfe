"""The documentation cannot rot quietly: links, anchors, commands and variables are checked against the code.

- every relative link and anchor in README.md and docs/*.md resolves (anchors as GitHub makes them
  from headings);
- every shell command README.md shows names a real make target, module or file, and every option
  it shows is one that command's `--help` lists;
- every environment variable the code reads (os.environ / getenv, the settings parser, the providers'
  `EnvVar` declarations, the Makefile) is in docs/configuration.md;
- the README stays short and every docs page opens with its question and is in the index.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import re
import runpy
import shlex
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from analysis.samples import stale_samples

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = REPO / "docs"
CONFIGURATION = DOCS / "configuration.md"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
# Every package of the suite (tests read variables of their own, which no user sets).
SCANNED_PACKAGES = sorted(p.parent.name for p in REPO.glob("*/__init__.py") if p.parent.name != "tests")
ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
SHELL_LANGUAGES = {"sh", "bash", "shell", "console"}
_FENCE = re.compile(r"^(?P<fence>```+|~~~+)(?P<info>[^`\n]*)$")
_SAMPLE_START = re.compile(r"^<!-- sample:[a-z]+ -->$")
_LINK = re.compile(r"!?\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
_INLINE_CODE = re.compile(r"`[^`\n]*`")


# --- Markdown, as GitHub reads it -----------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """A fenced code block: its info string, its lines, where it starts, and whether a sample marker precedes it."""

    info: str
    lines: list[str]
    line: int
    sample: bool


def split_markdown(text: str) -> tuple[list[tuple[int, str]], list[Block]]:
    """(the lines outside fenced blocks with their numbers, the fenced blocks)."""
    prose: list[tuple[int, str]] = []
    blocks: list[Block] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if not match:
            prose.append((index + 1, lines[index]))
            index += 1
            continue
        fence, start = match["fence"], index
        body: list[str] = []
        index += 1
        while index < len(lines) and not lines[index].startswith(fence):
            body.append(lines[index])
            index += 1
        sample = start > 0 and bool(_SAMPLE_START.match(lines[start - 1]))
        blocks.append(Block(match["info"].strip(), body, start + 1, sample))
        index += 1
    return prose, blocks


def heading_text(markdown: str) -> str:
    """A heading's text as rendered: links reduced to their text, code and emphasis marks dropped."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", markdown)
    return re.sub(r"[`*]|(?<!\w)_|_(?!\w)", "", text).strip()


def github_slug(text: str) -> str:
    """The anchor GitHub gives a heading (github-slugger): lower case, punctuation dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file, with GitHub's -1, -2 suffixes for repeated headings."""
    prose, _ = split_markdown(path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    found: set[str] = set()
    for _, line in prose:
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        slug = github_slug(heading_text(match[1]))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(path: Path) -> Iterator[tuple[int, str]]:
    """(line, target) of every Markdown link and image outside code."""
    prose, _ = split_markdown(path.read_text(encoding="utf-8"))
    for number, line in prose:
        for match in _LINK.finditer(_INLINE_CODE.sub("", line)):
            yield number, match["target"]


def broken_links(path: Path) -> list[str]:
    """`file:line: target (why)` for every relative link or anchor of `path` that does not resolve."""
    problems: list[str] = []
    for number, target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...: not ours to check
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.relative_to(REPO)}:{number}: {target}"
        if not resolved.is_relative_to(REPO):
            problems.append(f"{where} (outside the repository)")
        elif not resolved.exists():
            problems.append(f"{where} (no such file)")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            problems.append(f"{where} (no heading with that anchor in {resolved.relative_to(REPO)})")
        elif anchor and resolved.suffix != ".md":
            problems.append(f"{where} (an anchor into a file that is not Markdown)")
    return problems


def test_github_anchors_are_made_as_github_makes_them(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# How do I run it?\n## A/B in one command: `make ab`\n## Intervals and pass^k\n"
        "```sh\n# not a heading\n```\n## Intervals and pass^k\n### [Neon cloud](x.md) & *more*\n",
        encoding="utf-8",
    )
    assert anchors(page) == {
        "how-do-i-run-it",
        "ab-in-one-command-make-ab",
        "intervals-and-passk",
        "intervals-and-passk-1",
        "neon-cloud--more",
    }


def test_a_broken_link_or_anchor_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    (tmp_path / "other.md").write_text("# Other?\n## Real heading\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page?\n[ok](other.md#real-heading) [ok](#page) `[code](nowhere.md)` [web](https://x.test/#a)\n"
        "[gone](missing.md) [bad anchor](other.md#fake) [self](#nope)\n",
        encoding="utf-8",
    )
    assert broken_links(page) == [
        "page.md:3: missing.md (no such file)",
        "page.md:3: other.md#fake (no heading with that anchor in other.md)",
        "page.md:3: #nope (no heading with that anchor in page.md)",
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    assert broken_links(page) == []


# --- The README's commands --------------------------------------------------------------------------


def make_targets() -> set[str]:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    return {match[1] for match in re.finditer(r"^([A-Za-z][\w.-]*)\s*:(?!=)", text, re.M)}


def repo_module(name: str) -> Path | None:
    """The file `python -m name` runs, when the module is the repository's own."""
    base = REPO / Path(*name.split("."))
    for candidate in (base / "__main__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def module_exists(name: str) -> bool:
    if repo_module(name):
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def shell_commands(block: Block) -> Iterator[tuple[int, list[str]]]:
    """(line, words) of each command in a shell block: continuations joined, comments dropped."""
    pending, start = "", block.line
    for offset, line in enumerate(block.lines, start=block.line + 1):
        if not pending:
            start = offset
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        words = shlex.split(pending + line, comments=True)
        pending = ""
        if words:
            yield start, words


def looks_like_repo_path(word: str) -> bool:
    """A word that names a file of this repository (its first folder is one of the checkout's)."""
    if word.startswith("-") or "://" in word or "=" in word or "/" not in word:
        return False
    first = word.split("/", 1)[0]
    return first != ".venv" and (REPO / first).is_dir()


def check_command(words: list[str], documented: set[str]) -> list[str]:
    """What is wrong with one shown command: an unknown target, module, file, option or variable."""
    problems: list[str] = []
    while words and re.fullmatch(r"[A-Z][A-Z0-9_]*=.*", words[0]):
        name, _, value = words.pop(0).partition("=")
        if name not in documented:
            problems.append(f"{name} is not in docs/configuration.md")
        if looks_like_repo_path(value) and not (REPO / value).exists():
            problems.append(f"{name}={value}: no such file")
    if not words:
        return problems
    program, arguments = words[0], words[1:]
    outputs = {arguments[i + 1] for i, word in enumerate(arguments[:-1]) if word in ("-o", "--out", "--pictures")}
    for word in arguments:
        if looks_like_repo_path(word) and word not in outputs and not (REPO / word).exists():
            problems.append(f"{word}: no such file")
    if program == "make":
        targets = [word for word in arguments if not word.startswith("-") and "=" not in word]
        known = make_targets()
        problems += [f"make {target}: no such target in the Makefile" for target in targets if target not in known]
        problems += [
            f"make variable {word.partition('=')[0]} is not in docs/configuration.md"
            for word in arguments
            if "=" in word and word.partition("=")[0] not in documented
        ]
    elif program in ("python", "python3", ".venv/bin/python") and arguments[:1] == ["-m"]:
        problems += check_module_command(arguments[1:])
    elif program == ".venv/bin/braintrust":
        if arguments[:1] != ["eval"]:
            problems.append(f"braintrust {' '.join(arguments[:1])}: the suite runs only `braintrust eval`")
    elif program == "cp":
        problems += [f"{word}: no such file" for word in arguments[:-1] if not (REPO / word).exists()]
    else:
        problems.append(f"{program}: a program this test does not know how to check (teach check_command)")
    return problems


def check_module_command(arguments: list[str]) -> list[str]:
    """`python -m MODULE ...`: the module is real, and every option shown is in its `--help`."""
    if not arguments:
        return ["python -m without a module"]
    module, rest = arguments[0], arguments[1:]
    if not module_exists(module):
        return [f"python -m {module}: no such module"]
    options = [word.partition("=")[0] for word in rest if word.startswith("--")]
    if not options:
        return []
    positionals = []
    for word in rest:  # subcommands (harness.pool setup) come before the first option
        if word.startswith("-"):
            break
        positionals.append(word)
    listed = set(re.findall(r"(?<![\w-])--[\w-]+", module_help(module, tuple(positionals))))
    return [f"python -m {module}: {option} is not in its --help" for option in options if option not in listed]


@cache
def module_help(module: str, positionals: tuple[str, ...]) -> str:
    """What `python -m MODULE POSITIONALS... --help` prints, run as `python -m` runs it (`runpy`) but in
    this process: a Python start and the module's imports cost a second or more of CPU a command."""
    shown = io.StringIO()
    argv = sys.argv
    sys.argv = [module, *positionals, "--help"]
    try:
        with contextlib.redirect_stdout(shown), contextlib.suppress(SystemExit), warnings.catch_warnings():
            # runpy warns when the module was imported before (another test did): it runs it afresh as
            # __main__ all the same, which is all a --help needs.
            warnings.filterwarnings("ignore", "'.*' found in sys.modules", RuntimeWarning)
            runpy.run_module(module, run_name="__main__", alter_sys=False)
    finally:
        sys.argv = argv
    return shown.getvalue()


def readme_blocks() -> list[Block]:
    return split_markdown(README.read_text(encoding="utf-8"))[1]


def test_every_readme_code_block_says_what_it_holds() -> None:
    """Commands must be in shell blocks (so this test finds them); untagged blocks only for samples."""
    untagged = [block.line for block in readme_blocks() if not block.info and not block.sample]
    assert untagged == [], f"README.md code blocks at lines {untagged} need a language (sh, text, yaml, ...)"


def test_every_readme_command_names_a_real_target_module_or_file() -> None:
    documented = configuration_variables()
    blocks = [block for block in readme_blocks() if block.info in SHELL_LANGUAGES]
    assert blocks, "README.md shows no shell commands"
    problems = [
        f"README.md:{line}: {' '.join(words)}: {problem}"
        for block in blocks
        for line, words in shell_commands(block)
        for problem in check_command(list(words), documented)
    ]
    assert problems == []


def test_a_command_that_names_nothing_real_is_reported() -> None:
    documented = {"EVAL_MODEL"}
    assert check_command(["make", "eval"], documented) == []
    assert check_command(["make", "evaluate"], documented) == ["make evaluate: no such target in the Makefile"]
    assert check_command(["EVAL_MODELS=x", "make", "eval"], documented) == [
        "EVAL_MODELS is not in docs/configuration.md"
    ]
    assert check_command([".venv/bin/python", "-m", "analysis.reports", "RUN"], documented) == [
        "python -m analysis.reports: no such module"
    ]
    assert check_command([".venv/bin/python", "-m", "analysis.report", "RUN", "--pictur", "x"], documented) == [
        "python -m analysis.report: --pictur is not in its --help"
    ]
    assert check_command(["cp", "datasets/cases/nothing.yaml", "x"], documented) == [
        "datasets/cases/nothing.yaml: no such file",
        "datasets/cases/nothing.yaml: no such file",
    ]
    assert check_command(["curl", "x"], documented) == [
        "curl: a program this test does not know how to check (teach check_command)"
    ]


def test_docs_name_only_real_make_targets_and_modules() -> None:
    """Inline `make X` and `python -m X` anywhere in README.md and docs/ name something that exists."""
    problems: list[str] = []
    for page in PAGES:
        prose, blocks = split_markdown(page.read_text(encoding="utf-8"))
        texts = [(n, span) for n, line in prose for span in _INLINE_CODE.findall(line)]
        texts += [(b.line + i + 1, line) for b in blocks if b.info in SHELL_LANGUAGES for i, line in enumerate(b.lines)]
        for number, text in texts:
            where = f"{page.relative_to(REPO)}:{number}"
            for target in re.findall(r"(?<![\w.-])make ([a-z][\w-]*)", text):
                if target not in make_targets():
                    problems.append(f"{where}: make {target}: no such target")
            for module in re.findall(r"python -m ([A-Za-z_][\w.]*)", text):
                if not module_exists(module):
                    problems.append(f"{where}: python -m {module}: no such module")
    assert problems == []


# --- Every variable the code reads is documented -----------------------------------------------------


def _is_env(node: ast.expr) -> bool:
    """`os.environ`, `environ`, a variable holding an environment mapping (`env`, `source`, ...), or a
    settings object's snapshot of one (`self.env`, `run.env`)."""
    if isinstance(node, ast.Attribute):
        return node.attr in ("environ", "env")
    return isinstance(node, ast.Name) and bool(re.search(r"env|environ|^source$", node.id))


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """A function's positional parameters as a call passes them (a method's `self` or `cls` left out)."""
    params = [arg.arg for arg in node.args.args]
    return params[1:] if params[:1] in (["self"], ["cls"]) else params


def reader_functions(trees: list[ast.Module]) -> dict[str, int]:
    """Functions (and methods) that read the environment variable named by one of their parameters,
    directly or by handing it to another such function, in any of `trees`: name -> the parameter's
    position. So `settings.share_limit("EVAL_MAX_INFRA_ERRORS")` counts, where `share_limit` passes its
    name on to the settings module's reader."""
    functions = [function for tree in trees for function in _functions(tree)]
    readers: dict[str, int] = {}
    while True:
        before = dict(readers)
        for name, params, candidates in functions:
            for inner in candidates:
                for key in EnvReads.read_keys(inner, readers):
                    if isinstance(key, ast.Name) and key.id in params and name not in readers:
                        readers[name] = params.index(key.id)
        if readers == before:
            return readers


@cache
def _functions(tree: ast.Module) -> list[tuple[str, list[str], list[ast.AST]]]:
    """A module's functions: name, parameters, and the nodes in them that can read (calls, subscripts,
    comparisons). Walked once a module: `reader_functions` goes over them until nothing is added, for
    all modules and then for each, and walking whole trees each time cost seconds."""
    return [
        (node.name, _parameters(node), [inner for inner in ast.walk(node) if isinstance(inner, _MAY_READ)])
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


_MAY_READ = (ast.Call, ast.Subscript, ast.Compare)  # the only nodes `EnvReads.read_keys` finds a name in


def string_constants(tree: ast.Module) -> dict[str, str]:
    """A module's top-level `NAME = "text"` assignments."""
    return {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


class EnvReads(ast.NodeVisitor):
    """Environment variable names a module reads, with their line numbers.

    Recognised: `os.environ.get(N)`, `os.environ[N]`, `N in os.environ`, `os.getenv(N)`, any call given
    an environment and a name (`_get(env, N)`), `EnvVar(N)`, a function whose parameter is such a name
    (`_positive_int(N, 4)`), and names taken from a literal tuple a `for` loop walks. N is a string or a
    module constant holding one.
    """

    def __init__(
        self, tree: ast.Module, imported: dict[str, str] | None = None, readers: dict[str, int] | None = None
    ) -> None:
        self.found: dict[str, int] = {}
        # Names of string constants: this module's, over those of the suite's other modules (`imported`),
        # so `os.environ.get(CONTEXT_VARIABLE)` counts where CONTEXT_VARIABLE was imported from elsewhere.
        self.constants = {**(imported or {}), **string_constants(tree)}
        self.tuples = {
            target.id: node.value.elts
            for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple | ast.List)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        # Readers of the suite's other modules (`readers`, from `reader_functions`) and this one's.
        self.readers = {**(readers or {}), **reader_functions([tree])}
        self.loop_values: dict[str, list[ast.expr]] = {}
        self.visit(tree)

    @classmethod
    def read_keys(cls, node: ast.AST, readers: dict[str, int]) -> list[ast.expr]:
        """The expressions naming a variable `node` reads: directly, or given to one of `readers`."""
        keys = [key] if (key := cls._read_key(node)) is not None else []
        if isinstance(node, ast.Call):
            called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            position = readers.get(called)
            if position is not None and position < len(node.args):
                keys.append(node.args[position])
        return keys

    @staticmethod
    def _read_key(node: ast.AST) -> ast.expr | None:
        """The expression naming the variable, when `node` reads the environment directly."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            if node.func.attr in ("get", "pop") and _is_env(node.func.value):
                return node.args[0]
            if node.func.attr == "getenv":
                return node.args[0]
        if isinstance(node, ast.Call) and len(node.args) >= 2 and _is_env(node.args[0]):
            return node.args[1]
        if isinstance(node, ast.Subscript) and _is_env(node.value):
            return node.slice
        if (
            isinstance(node, ast.Compare)
            and len(node.comparators) == 1
            and _is_env(node.comparators[0])
            and isinstance(node.ops[0], ast.In | ast.NotIn)
        ):
            return node.left
        return None

    def _names(self, node: ast.expr) -> list[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.Name):
            if node.id in self.constants:
                return [self.constants[node.id]]
            return [name for value in self.loop_values.get(node.id, []) for name in self._names(value)]
        return []

    def _add(self, node: ast.expr, line: int) -> None:
        for name in self._names(node):
            if ENV_NAME.fullmatch(name):
                self.found.setdefault(name, line)

    def visit_For(self, node: ast.For) -> None:
        if isinstance(node.iter, ast.Tuple | ast.List):
            targets = node.target.elts if isinstance(node.target, ast.Tuple) else [node.target]
            for position, target in enumerate(targets):
                if isinstance(target, ast.Name):
                    values = []
                    for item in node.iter.elts:
                        if isinstance(item, ast.Tuple) and position < len(item.elts):
                            values.append(item.elts[position])
                        elif not isinstance(item, ast.Tuple) and len(targets) == 1:
                            values.append(item)
                    self.loop_values[target.id] = values
        self.generic_visit(node)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        """`os.environ[name] for name in PASS_THROUGH` over a module-level tuple of names."""
        if isinstance(node.target, ast.Name) and isinstance(node.iter, ast.Name) and node.iter.id in self.tuples:
            self.loop_values[node.target.id] = list(self.tuples[node.iter.id])
        self.generic_visit(node)

    def visit_ListComp(self, node: ast.ListComp) -> None:
        self._comprehension(node, node.generators)

    def visit_SetComp(self, node: ast.SetComp) -> None:
        self._comprehension(node, node.generators)

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> None:
        self._comprehension(node, node.generators)

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self._comprehension(node, node.generators)

    def _comprehension(self, node: ast.AST, generators: list[ast.comprehension]) -> None:
        for generator in generators:  # bind the loop names before the element that reads them
            self.visit_comprehension(generator)
        self.generic_visit(node)

    def generic_visit(self, node: ast.AST) -> None:
        key = self._read_key(node)
        if key is not None:
            self._add(key, getattr(node, "lineno", 0))
        if isinstance(node, ast.Call):
            called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if called == "EnvVar" and node.args:
                self._add(node.args[0], node.lineno)
            position = self.readers.get(called)
            if position is not None and position < len(node.args):
                self._add(node.args[position], node.lineno)
        super().generic_visit(node)


def code_variables() -> dict[str, list[str]]:
    """Every environment variable the suite's code and Makefile read: name -> where (file:line, ...)."""
    return {name: list(places) for name, places in _code_variables().items()}


@cache
def _code_variables() -> dict[str, list[str]]:
    """Scanned once a test process (two tests read it; parsing every module costs seconds of CPU)."""
    trees = {
        path: ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for package in SCANNED_PACKAGES
        for path in sorted((REPO / package).rglob("*.py"))
    }
    imported = {name: value for tree in trees.values() for name, value in string_constants(tree).items()}
    readers = reader_functions(list(trees.values()))
    found: dict[str, list[str]] = {}
    for path, tree in trees.items():
        for name, line in EnvReads(tree, imported, readers).found.items():
            found.setdefault(name, []).append(f"{path.relative_to(REPO)}:{line}")
    for name, line in makefile_variables().items():
        found.setdefault(name, []).append(f"Makefile:{line}")
    return found


_MAKE_BUILTINS = {"MAKE", "MAKEFLAGS", "SHELL", "CURDIR", "MAKECMDGOALS"}


def makefile_variables() -> dict[str, int]:
    """Variables the Makefile takes from outside: `NAME ?= ...`, `$${NAME...}` in recipes, and `$(NAME)`
    of a name the Makefile never sets (given on make's command line or in the environment)."""
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    assigned = set(re.findall(r"^([A-Z_][A-Z0-9_]*)\s*(?::=|=)", text, re.M))
    found: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        names = re.findall(r"^([A-Z_][A-Z0-9_]*)\s*\?=", line)
        names += re.findall(r"\$\$\{([A-Z_][A-Z0-9_]*)", line)
        names += [n for n in re.findall(r"\$[({]([A-Z_][A-Z0-9_]*)[)}]", line) if n not in assigned]
        for name in names:
            if name not in _MAKE_BUILTINS:
                found.setdefault(name, number)
    return found


def configuration_variables() -> set[str]:
    """Variables docs/configuration.md documents: each `NAME` in the first column of a table row."""
    documented: set[str] = set()
    for line in CONFIGURATION.read_text(encoding="utf-8").splitlines():
        if line.startswith("|"):
            first = line.split("|")[1]
            documented.update(re.findall(r"`([A-Z][A-Z0-9_]*)`", first))
    return documented


def test_the_scanner_finds_every_way_the_code_reads_a_variable() -> None:
    source = """
import os
SWITCH = "EVAL_SWITCH"
def _positive(name, default):
    return os.environ.get(name, default)
def read(env):
    a = os.environ.get("A_GET"); b = os.environ["B_ITEM"]; c = os.getenv("C_GETENV")
    d = _get(env, "D_HELPER"); e = source.get("E_SOURCE"); f = "F_IN" in os.environ
    g = _positive("G_PARAM", 4); h = os.environ.get(SWITCH)
    for name, field in (("I_LOOP", "i"), ("J_LOOP", "j")):
        _number(env, name, int)
    passed = {name: os.environ[name] for name in PASSED if name in os.environ}
    env.setdefault("NOT_READ_SET", "1")
    return EnvVar("K_ENVVAR"), "NOT_READ", {"L_KEY": 1}.get("L_KEY")
PASSED = ("M_PASSED", "N_PASSED")
class Settings:
    def _text(self, name):
        return self.env.get(name, "")
    def project(self):
        return self._text("P_METHOD")
def limit(name):
    return current()._text(name)
q = limit("Q_PASSED_ON")
"""
    found = EnvReads(ast.parse(source + "x = os.environ.get(ELSEWHERE)\n"), {"ELSEWHERE": "O_IMPORTED"}).found
    assert sorted(found) == [
        "A_GET",
        "B_ITEM",
        "C_GETENV",
        "D_HELPER",
        "EVAL_SWITCH",
        "E_SOURCE",
        "F_IN",
        "G_PARAM",
        "I_LOOP",
        "J_LOOP",
        "K_ENVVAR",
        "M_PASSED",
        "N_PASSED",
        "O_IMPORTED",
        "P_METHOD",
        "Q_PASSED_ON",
    ]


def test_the_scan_sees_the_settings_the_providers_and_the_makefile() -> None:
    assert {"harness", "evals", "braintrust_run", "scorers", "analysis", "localneon"} <= set(SCANNED_PACKAGES)
    found = code_variables()
    for name, place in {
        "EVAL_MAX_TURNS": "harness/config.py",  # a loop over (name, field, kind) tuples
        "EVAL_CONCURRENCY": "braintrust_run/",  # through a helper taking the name
        "EVAL_JUDGE_CALIBRATION": "braintrust_run/",  # through a module constant
        "ANTHROPIC_API_KEY": "harness/",  # EnvVar declarations
        "TEST_WORKERS": "Makefile",
        "LOCALNEON_KEEP": "",
    }.items():
        assert any(where.startswith(place) for where in found.get(name, [])), (name, found.get(name))


def test_every_variable_the_code_reads_is_in_the_configuration_page() -> None:
    documented = configuration_variables()
    missing = {name: where[0] for name, where in sorted(code_variables().items()) if name not in documented}
    assert missing == {}, "add these to docs/configuration.md: " + ", ".join(f"{n} ({w})" for n, w in missing.items())


# --- Shape ------------------------------------------------------------------------------------------


def test_the_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= 250, f"README.md has {lines} lines; move detail into docs/"


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda page: page.name)
def test_every_docs_page_opens_with_its_question_and_is_in_the_index(page: Path) -> None:
    first = page.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# ") and first.rstrip().endswith("?"), f"{page.name} opens with {first!r}"
    if page.name != "README.md":
        index_targets = {target.partition("#")[0] for _, target in links(DOCS / "README.md")}
        assert page.name in index_targets, f"docs/README.md does not link {page.name}"


def test_a_stale_or_missing_sample_is_reported(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- sample:summary -->\nold\n<!-- /sample:summary -->\n", encoding="utf-8")
    assert stale_samples({"summary": "old"}, [page]) == []
    assert stale_samples({"summary": "new", "matrix": "m"}, [page]) == [
        f"{page}: summary",
        "no page holds a <!-- sample:matrix --> block",
    ]
