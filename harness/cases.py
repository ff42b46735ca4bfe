"""Eval cases: the schema of a case file and a loader that refuses bad ones loudly.

Case files live in `datasets/` (or wherever `EVAL_DATASET` points). A file is YAML:

    version: 1
    cases:
      - id: add-description-column
        scenario: prepare
        ...

A bad file stops the run with the file, the case id and the problem, and where it can, the fix (the
nearest field name to a misspelt one, every folder a fixture was looked for in); nothing is half-loaded.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harness.environment import DEFAULT_DATASET, host

REPO_ROOT = Path(__file__).resolve().parent.parent
# The terms the bundled cases are written in: Neon's, the suite's first family's. A case names a
# database, the staging tool and the read that lists branches in these words; a family whose server
# says otherwise reads each case in its own terms (`ServerFamily.case_for`), and Neon's conventions
# take the same words from here (`harness.servers.neon.conventions`).
# The database a Neon project is made with, which tools use when no `databaseName` is given; a fixture
# folder's `neondb.sql` loads there, and its other files into databases of their own names.
DEFAULT_DATABASE = "neondb"
# The first step of the two-step migration workflow: SQL staged on a temporary branch.
PREPARE_TOOL = "prepare_database_migration"
# The read that lists a project's branches with their ids and names (Neon has no list_branches
# tool): how a careful agent finds the id of a branch it knows by name, since Neon's tools take ids.
LIST_BRANCHES_TOOL = "describe_project"
BUNDLED_DATASET = DEFAULT_DATASET  # EVAL_DATASET's default: datasets/cases/
BUNDLED_FIXTURES = REPO_ROOT / "datasets" / "fixtures"
SUPPORTED_VERSIONS = (1,)
PROJECT_PLACEHOLDER = "{project_id}"
# In a reference call's argument, "{branch_id:NAME}": the id of the project's branch named NAME.
# Neon's tools take branch ids (a name there is refused: "branch not found"), and a plan knows a
# branch the agent makes during the trial only by its name; an agent following the plan reads the id
# from an earlier call of the plan that lists the project's branches (`describe_project`).
BRANCH_ID_PLACEHOLDER = re.compile(r"\{branch_id:([A-Za-z0-9_][A-Za-z0-9_.-]{0,62})\}")

Scenario = Literal["prepare", "complete", "tool_selection"]
Approval = Literal["none", "approve", "decline"]
MainOutcome = Literal["unchanged", "changed"]


class DatasetError(ValueError):
    """A case file that cannot be used, with where and why."""


# What each `workflow:` tag says the safe path is; a report groups cases by it. A case has at most one
# (the bundled ones exactly one, `tests/datasets`), and it must agree with the case's scenario.
WORKFLOWS: dict[str, str] = {
    "stage": "stage the change on a temporary branch, report it, ask before touching main",
    "stage-apply": "stage, ask, and apply to main once the user approves",
    "stage-cancel": "stage, ask, and cancel when the user declines: main unchanged",
    "read": "answer a question with read-only tools",
    "refuse": "the session's grant does not allow the change: explain, change nothing",
    "clarify": "the request is ambiguous: ask which one is meant, change nothing",
    "tune": "study the query on a temporary branch, try the fix there, show both plans, ask before touching main",
    "tune-apply": "tune on a temporary branch, ask, and apply the fix to main once the user approves",
    "tune-cancel": "tune on a temporary branch, ask, and discard it when the user declines: main unchanged",
    "confirm-apply": "ask before a destructive tool (delete, reset, reconfigure), and call it once the user approves",
    "confirm-cancel": "ask before a destructive tool; the user declines: nothing destructive is called",
}
RISKS = ("none", "low", "medium", "high")
# Structured tags are `prefix:value`; a tag without a colon is a free label (the operation: add_column,
# ...). Each prefix's allowed values: a tuple lists them all; None takes any lowercase slug.
TAG_PREFIXES: dict[str, tuple[str, ...] | None] = {
    "workflow": tuple(WORKFLOWS),
    "risk": RISKS,
    "domain": None,  # what the data is about, by convention the fixture's name
    "care": None,  # what the change needs beyond its DDL: backfill, batches, lock, view, foreign_key
    "pressure": None,  # how the user pushes to skip the safe path: urgency, skip-branch, preapproval, ...
    "ambiguity": None,  # what a clarify case leaves open: table, column, database, intent
    "injection": None,  # where an instruction planted for the agent hides
}
SINGLE_VALUED = ("workflow", "risk", "domain")
_TAG_VALUE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


class ReferenceCall(BaseModel):
    """One tool call of a reference plan (what a careful agent would call); string arguments may hold
    `{project_id}` and `{branch_id:NAME}` (`BRANCH_ID_PLACEHOLDER`)."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def branch_names_needed(call: ReferenceCall) -> list[str]:
    """The branch names whose ids the call's arguments ask for (`{branch_id:NAME}`), in order."""
    return [name for text in _strings(call.arguments) for name in BRANCH_ID_PLACEHOLDER.findall(text)]


def branch_ids_before_listing(calls: list[ReferenceCall]) -> str | None:
    """Why a plan cannot be followed: a call asking for a branch's id before any call of the plan lists
    the project's branches (where the id is read); None when every id can be looked up in time."""
    listed = False
    for number, call in enumerate(calls, start=1):
        needed = branch_names_needed(call)
        if needed and not listed:
            return (
                f"reference call {number} ({call.tool}) passes the id of branch {needed[0]!r} "
                f"({{branch_id:{needed[0]}}}), but no earlier reference call lists the project's branches "
                f"to read it from: add a {LIST_BRANCHES_TOOL} call before it"
            )
        listed = listed or call.tool == LIST_BRANCHES_TOOL
    return None


class Target(BaseModel):
    """What the migration must touch: the table, and the column when there is one."""

    model_config = ConfigDict(extra="forbid")

    table: str
    column: str | None = None


class Grant(BaseModel):
    """What the trial's MCP session may do, set in the MCP URL as Neon's server reads it.

    The harness always pins the session to the trial's own project (`projectId`); a case adds
    `readonly: true` (write tools removed) or `categories` (only those tool categories listed).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    readonly: bool = False
    categories: list[str] | None = None


class Case(BaseModel):
    """One eval case. `input` and follow-ups may name `{project_id}`; the harness fills it in."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    scenario: Scenario
    input: str = Field(min_length=1)
    follow_ups: list[str] = Field(default_factory=list)
    approval: Approval = "none"
    expected_answer: str = Field(min_length=1)
    fixture: str = Field(pattern=r"^[A-Za-z0-9_-]+$")
    reference_sql: str | None = None
    reference_calls: list[ReferenceCall] = Field(default_factory=list)
    expected_main: MainOutcome = "unchanged"
    required_tools: list[str] = Field(default_factory=list)
    forbidden_tools: list[str] = Field(default_factory=list)
    tool_order: list[tuple[str, str]] = Field(default_factory=list)  # (earlier, later)
    target: Target | None = None
    tags: list[str] = Field(default_factory=list)
    trial_count: int | None = Field(default=None, ge=1)
    grant: Grant | None = None
    # The database the request is about, on a fixture with more than one (a folder fixture); the
    # reference SQL applies there. None: the project's default database.
    database: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_]{0,62}$")

    # Why an answer that calls no tool is a right answer to this case (a request the session's grant
    # forbids, say): the lab's do-nothing baseline may then pass its deterministic scores, and the judge
    # reads the words. Every other case must fail an agent that does nothing (`make validity` checks).
    nothing_needed: str | None = Field(default=None, min_length=10)
    # The answer must rest on what the agent read (the question a clarify case asks back names what the
    # database holds): the trajectory fails an answer given without one successful read-only call.
    must_read: bool = False
    # Set by the loader: where the fixture's SQL is.
    fixture_path: Path | None = None
    source_file: Path | None = None

    @field_validator("tags")
    @classmethod
    def _known_tags(cls, tags: list[str]) -> list[str]:
        problems = [problem for tag in tags if (problem := tag_problem(tag))]
        for prefix in SINGLE_VALUED:
            values = [tag for tag in tags if tag.startswith(f"{prefix}:")]
            if len(values) > 1:
                problems.append(f"{len(values)} {prefix} tags ({', '.join(values)}): a case has one")
        if len(set(tags)) < len(tags):
            problems.append(f"repeated tags: {sorted({tag for tag in tags if tags.count(tag) > 1})}")
        if problems:
            raise ValueError("; ".join(problems))
        return tags

    @property
    def workflow(self) -> str | None:
        """The value of the case's `workflow:` tag, if it has one."""
        return next((tag.partition(":")[2] for tag in self.tags if tag.startswith("workflow:")), None)

    @model_validator(mode="after")
    def _consistent(self) -> Case:
        if PROJECT_PLACEHOLDER not in self.input:
            raise ValueError(f"input must name the project with the placeholder {PROJECT_PLACEHOLDER}")
        if self.approval != "none" and not self.follow_ups:
            raise ValueError(f"approval is '{self.approval}' but there are no follow_ups to send it")
        if self.expected_main == "changed":
            if self.approval != "approve":
                raise ValueError("expected_main 'changed' needs approval 'approve': main changes only on approval")
            if not self.reference_sql:
                raise ValueError("expected_main 'changed' needs reference_sql to build the expected state")
        if self.scenario == "complete" and self.approval == "none":
            raise ValueError("a 'complete' case must approve or decline in a follow-up")
        both = set(self.required_tools) & set(self.forbidden_tools)
        if both:
            raise ValueError(f"tools both required and forbidden: {sorted(both)}")
        if not self.reference_sql and not self.reference_calls:
            raise ValueError("a case needs reference_sql or reference_calls (the control agents follow them)")
        unlisted = branch_ids_before_listing(self.reference_calls)
        if unlisted:
            raise ValueError(unlisted)
        mismatch = workflow_mismatch(self)
        if mismatch:
            raise ValueError(mismatch)
        if self.nothing_needed and (self.is_migration or self.required_tools or self.must_read):
            raise ValueError("nothing_needed is for a case whose right answer calls no tool: it requires none")
        return self

    @property
    def target_database(self) -> str:
        """Where the request's change (and the reference SQL) goes: `database`, else the default."""
        return self.database or DEFAULT_DATABASE

    @property
    def is_migration(self) -> bool:
        return self.scenario in ("prepare", "complete") or PREPARE_TOOL in self.required_tools

    def render(self, text: str, project_id: str) -> str:
        return text.replace(PROJECT_PLACEHOLDER, project_id)

    def content_hash(self) -> str:
        """sha256 of the case's canonical JSON (first 16 hex), without where it was loaded from.

        Two runs of a case compare only if this is equal: an edited input, reference or check makes
        a different case under the same id.
        """
        # A field added later is left out while unset, so the cases written before it keep their hash.
        unset = {
            name for name, default in (("nothing_needed", None), ("must_read", False)) if getattr(self, name) == default
        }
        fields = self.model_dump(mode="json", exclude={"fixture_path", "source_file", *unset})
        canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def tag_problem(tag: str) -> str | None:
    """What is wrong with one tag (an unknown prefix, a value its prefix does not allow), or None."""
    if ":" not in tag:
        return None  # a free label
    prefix, _, value = tag.partition(":")
    if prefix not in TAG_PREFIXES:
        nearest = difflib.get_close_matches(prefix, list(TAG_PREFIXES), n=1, cutoff=0.6)
        hint = f"; did you mean '{nearest[0]}:{value}'?" if nearest else ""
        return f"tag {tag!r} has an unknown prefix '{prefix}' (known: {', '.join(TAG_PREFIXES)}{hint})"
    allowed = TAG_PREFIXES[prefix]
    if allowed is not None and value not in allowed:
        nearest = difflib.get_close_matches(value, list(allowed), n=1, cutoff=0.6)
        hint = f"; did you mean '{prefix}:{nearest[0]}'?" if nearest else ""
        return f"tag {tag!r}: {prefix} must be one of {', '.join(allowed)}{hint}"
    if not _TAG_VALUE.match(value):
        return f"tag {tag!r}: the value after '{prefix}:' must be a lowercase slug (letters, digits, _ -)"
    return None


def workflow_mismatch(case: Case) -> str | None:
    """Why the case's `workflow:` tag contradicts what the case asks for, or None."""
    workflow = case.workflow
    if workflow is None:
        return None
    expected = {"stage": "none", "stage-apply": "approve", "stage-cancel": "decline"}
    expected.update({"tune": "none", "tune-apply": "approve", "tune-cancel": "decline"})
    confirm = {"confirm-apply": "approve", "confirm-cancel": "decline"}  # a change that is no migration
    if workflow in expected:
        if not case.is_migration or case.approval != expected[workflow]:
            return (
                f"tag 'workflow:{workflow}' needs a migration case with approval '{expected[workflow]}' "
                f"(this one: scenario {case.scenario}, approval {case.approval})"
            )
    elif workflow in confirm and case.approval != confirm[workflow]:
        return f"tag 'workflow:{workflow}' needs approval '{confirm[workflow]}' (this one: approval {case.approval})"
    elif case.is_migration:
        return f"tag 'workflow:{workflow}' is for a case that asks for no change, but this one stages a migration"
    return None


def _check_sql_parses(sql: str) -> None:
    import pglast

    try:
        pglast.parse_sql(sql)
    except pglast.parser.ParseError as error:
        raise ValueError(f"reference_sql does not parse: {error}") from error


def fixture_folders(case_file: Path) -> list[Path]:
    """Where a case's fixture is looked for, first match wins (datasets/README.md, "Fixtures"):
    `fixtures/` beside the case file, `../fixtures/` from it, then the bundled fixtures."""
    return [case_file.parent / "fixtures", case_file.parent.parent / "fixtures", BUNDLED_FIXTURES]


def _resolve_fixture(name: str, case_file: Path) -> Path:
    """The fixture's SQL file `<name>.sql`, or its folder `<name>/` (one `<database>.sql` per database)."""
    folders = fixture_folders(case_file)
    for folder in folders:
        candidate = folder / f"{name}.sql"
        if candidate.is_file():
            _check_utf8(candidate)
            return candidate
        if (folder / name).is_dir():
            for _, script in _folder_scripts(folder / name):
                _check_utf8(script)
            return folder / name
    searched = ", then ".join(str(folder) for folder in folders)
    raise ValueError(
        f"fixture '{name}' not found: looked for {name}.sql or {name}/ in {searched} (fixtures/ beside the "
        "case file, ../fixtures/ from it, then the bundled fixtures; first match wins)"
    )


_DATABASE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")


def _folder_scripts(folder: Path) -> list[tuple[str, Path]]:
    """A fixture folder's (database, script) pairs, the default database first; refuses a folder
    without `neondb.sql`, a file that is no database name, or anything but `.sql` files."""
    scripts: list[tuple[str, Path]] = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        if not entry.is_file() or entry.suffix != ".sql":
            raise ValueError(f"fixture folder {folder} holds {entry.name}: only <database>.sql files belong there")
        if not _DATABASE_NAME.match(entry.stem):
            raise ValueError(
                f"fixture {entry}: '{entry.stem}' is not a database name (lowercase letters, digits, _; a letter first)"
            )
        scripts.append((entry.stem, entry))
    if not any(database == DEFAULT_DATABASE for database, _ in scripts):
        raise ValueError(f"fixture folder {folder} has no {DEFAULT_DATABASE}.sql (the project's default database)")
    return sorted(scripts, key=lambda pair: (pair[0] != DEFAULT_DATABASE, pair[0]))


def scripts_at(fixture: Path) -> list[tuple[str, Path]]:
    """(database, SQL file) for each database a fixture (a file or a folder) loads, the default first."""
    return _folder_scripts(fixture) if fixture.is_dir() else [(DEFAULT_DATABASE, fixture)]


def fixture_scripts(case: Case) -> list[tuple[str, Path]]:
    """`scripts_at` the case's fixture."""
    if case.fixture_path is None:
        raise ValueError(f"case {case.id}: no fixture_path (load cases with harness.cases.load_cases)")
    return scripts_at(case.fixture_path)


LOADING_NOTE = "while loading the fixture into database "


def note_loading(error: BaseException, database: str) -> None:
    """Mark an error raised by a fixture script with its database (`loading_database` reads it back)."""
    error.add_note(f"{LOADING_NOTE}{database}")


def loading_database(error: BaseException) -> str | None:
    """The database whose fixture script raised `error`, when a loader noted it."""
    notes = getattr(error, "__notes__", None) or []
    return next((note[len(LOADING_NOTE) :] for note in notes if note.startswith(LOADING_NOTE)), None)


def fixture_databases(case: Case) -> tuple[str, ...]:
    """The databases the case's main holds, the default first: what the harness captures and compares."""
    return tuple(database for database, _ in fixture_scripts(case))


# The models a nested field's keys are checked against, by the field's name in a case.
_NESTED: dict[str, type[BaseModel]] = {"target": Target, "grant": Grant, "reference_calls": ReferenceCall}
_SET_BY_LOADER = ("fixture_path", "source_file")


def _known_fields(location: tuple[Any, ...]) -> list[str]:
    """The field names valid where `location` (pydantic's `loc`, the unknown key last) points."""
    parent = next((part for part in location[:-1] if isinstance(part, str)), None)
    model: type[BaseModel] = _NESTED.get(parent, Case) if parent else Case
    return [name for name in model.model_fields if name not in _SET_BY_LOADER]


def _problem(issue: Any) -> str:
    """One pydantic issue as `where: what`, with the nearest valid name when a key is unknown."""
    location = tuple(issue["loc"])
    text = f"{'.'.join(str(part) for part in location) or 'case'}: {issue['msg']}"
    if issue.get("type") == "extra_forbidden" and location and isinstance(location[-1], str):
        nearest = difflib.get_close_matches(location[-1], _known_fields(location), n=1, cutoff=0.6)
        if nearest:
            text += f" (did you mean '{nearest[0]}'?)"
    return text


def _check_utf8(path: Path) -> None:
    """A fixture must be UTF-8 text: found now, naming the file, not as a failed trial later."""
    try:
        path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"fixture {path} is not UTF-8 text ({error.reason} at byte {error.start})") from None


SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_file(path: Path) -> list[Case]:
    """Load and validate one case file; raise DatasetError naming the file and case on any problem."""
    try:
        # libyaml's parser where PyYAML has it (ten times the pure-Python one's speed, same documents):
        # every trial process, and every test collecting the bundled cases, reads all of them.
        document = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
    except UnicodeDecodeError as error:
        raise DatasetError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from error
    except (OSError, yaml.YAMLError) as error:
        raise DatasetError(f"{path}: cannot read YAML: {error}") from error
    if not isinstance(document, dict):
        raise DatasetError(f"{path}: expected a mapping with 'version' and 'cases' at the top")
    version = document.get("version")
    if version not in SUPPORTED_VERSIONS:
        raise DatasetError(f"{path}: unsupported version {version!r} (supported: {SUPPORTED_VERSIONS})")
    raw_cases = document.get("cases")
    if not isinstance(raw_cases, list) or not raw_cases:
        raise DatasetError(f"{path}: 'cases' must be a non-empty list")
    cases: list[Case] = []
    for position, raw in enumerate(raw_cases, start=1):
        case_id = raw.get("id", f"#{position}") if isinstance(raw, dict) else f"#{position}"
        cases.append(validate_case(raw, f"{path}: case '{case_id}'", path))
    return cases


def validate_case(raw: object, where: str, case_file: Path) -> Case:
    """One case's fields checked as a case file's are (schema, SQL, fixture found from `case_file`'s
    folder); a DatasetError starting with `where` says what is wrong. Rows from a Braintrust dataset
    come through here too (`harness.case_rows`)."""
    if not isinstance(raw, dict):
        raise DatasetError(f"{where}: expected a mapping, got {type(raw).__name__}")
    try:
        case = Case.model_validate(raw)
        if case.reference_sql:
            _check_sql_parses(case.reference_sql)
        fixture_path = _resolve_fixture(case.fixture, case_file)
        located = case.model_copy(update={"fixture_path": fixture_path})
        if case.database is not None and case.database not in fixture_databases(located):
            raise ValueError(
                f"database '{case.database}' is not one of fixture '{case.fixture}''s databases "
                f"({', '.join(fixture_databases(located))}): a folder fixture loads one <database>.sql each"
            )
    except ValidationError as error:
        problems = "; ".join(_problem(issue) for issue in error.errors())
        raise DatasetError(f"{where}: {problems}") from error
    except ValueError as error:
        raise DatasetError(f"{where}: {error}") from error
    return case.model_copy(update={"fixture_path": fixture_path, "source_file": case_file})


def load_cases(source: str | Path | None = None, scenario: Scenario | None = None) -> list[Case]:
    """Load every case from a file or a folder of `*.yaml`/`*.yml` files; optionally one scenario's.

    `source` defaults to `EVAL_DATASET`, then to the bundled cases.
    """
    chosen = source or host().dataset_path
    root = Path(chosen)
    if root.is_dir():
        files = sorted([*root.glob("*.yaml"), *root.glob("*.yml")])
        if not files:
            raise DatasetError(f"{root}: no *.yaml case files in this folder")
    elif root.is_file():
        files = [root]
    else:
        raise DatasetError(f"{root}: no such dataset file or folder (EVAL_DATASET?)")
    cases: list[Case] = []
    seen: dict[str, Path] = {}
    for file in files:
        for case in load_file(file):
            if case.id in seen:
                raise DatasetError(f"{file}: case '{case.id}': duplicate id (also in {seen[case.id]})")
            seen[case.id] = file
            cases.append(case)
    if scenario is not None:
        cases = [case for case in cases if case.scenario == scenario]
    return cases


def dataset_hash(cases: Iterable[Case]) -> str:
    """A content hash of a set of cases and the fixtures they load (first 16 hex): what a run measured."""
    digest = hashlib.sha256()
    fixtures: dict[str, Path | None] = {}
    for case in sorted(cases, key=lambda case: case.id):
        digest.update(f"case {case.id} {case.content_hash()}\n".encode())
        fixtures[case.fixture] = case.fixture_path
    for name, path in sorted(fixtures.items()):
        scripts = sorted(path.glob("*.sql")) if path is not None and path.is_dir() else [path]
        for script in scripts:
            content = script.read_bytes() if script is not None and script.is_file() else b""
            part = name if script is None or script == path else f"{name}/{script.name}"
            digest.update(f"fixture {part} {hashlib.sha256(content).hexdigest()}\n".encode())
    return digest.hexdigest()[:16]
