"""A server's tool surface as the watch keeps it, what changed between two, and which cases that touches.

Pure functions, no server and no run (`tuning.watch` does those): the watch (`make watch`) lists the
server's tools now, compares them with the surface it kept last (`diff_surfaces`), and runs only the
cases that involve a tool whose description changed (`involved_cases`), old words against new.

A kept surface is a snapshot document in the shape `python -m localneon.snapshot` writes
(`{"snapshot": {...}, "tools": [{"name", "description", "input_schema", "annotations"}]}`), so the local
twin can wear one (`LOCALNEON_SURFACE=<file>`): that is how a stand-in for a server's change is made.

Which cases involve a tool, in the family's terms (`ToolRoles`), and why:

1. the case names it: a required or forbidden tool, a reference call's tool, either side of a
   `tool_order` pair. The case's checks judge that tool's use, so its words can move the verdict;
2. it is a sibling of a tool the case names, in one of the family's role groups: the SQL tools
   (`run_sql` and the transaction form), the staging pair (prepare and complete), the tuning pair.
   Siblings are offered for the same call, and a model chooses between them by their words;
3. it runs SQL, and the case's right path goes through a staging or tuning tool (required, in its
   reference calls or its tool order: a migration or tuning case): there the wrong path is the SQL
   tool run straight on main, which the trajectory check fails whether or not the case names it
   (Neon's own rewrites of these tools were made for that choice). A read case that only forbids the
   staging pair does not bring the SQL tools in by this rule.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from harness.cases import Case
from harness.servers.roles import ToolRoles

ChangeKind = Literal["added", "removed", "description", "notice", "schema", "annotations"]
# The kinds a pair of description-variant files can carry, old words against new (`make ab`'s arms);
# the others are reported, and an A/B of them would need each arm to wear its own surface.
DESCRIBED: tuple[ChangeKind, ...] = ("description",)
NOTICE_OPEN, NOTICE_CLOSE = "<notice>", "</notice>"
CONTEXT_WORDS = 6  # words shown either side of a changed stretch
REWRITTEN = 0.5  # below this similarity of the words, both texts are shown whole
SHOWN_VALUE = 200  # characters of a changed schema object or list shown (a string is shown whole)


@dataclass(frozen=True)
class SurfaceTool:
    """One tool as the server lists it: what the model reads and calls it by."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    annotations: Mapping[str, Any]

    def entry(self) -> dict[str, Any]:
        """The tool as a snapshot document stores it."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": json.loads(json.dumps(self.input_schema)),
            "annotations": dict(self.annotations),
        }


@dataclass(frozen=True)
class ToolChange:
    """One change to one tool, and the lines that say exactly what changed."""

    tool: str
    kind: ChangeKind
    lines: tuple[str, ...] = ()

    def describe(self) -> list[str]:
        head = {
            "added": "tool added",
            "removed": "tool removed",
            "description": "description changed",
            "notice": "the notice block the server appends changed",
            "schema": "input schema changed",
            "annotations": "annotations changed",
        }[self.kind]
        return [f"{self.tool}: {head}", *(f"    {line}" for line in self.lines)]


class SurfaceDocumentError(ValueError):
    """A kept surface that cannot be read; the message says what is wrong."""


def surface_from_document(data: Any, origin: str) -> dict[str, SurfaceTool]:
    """The tools of a snapshot document, by name; SurfaceDocumentError naming `origin` otherwise."""
    entries = data.get("tools") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise SurfaceDocumentError(f"{origin}: expected a JSON object with a 'tools' list (a snapshot document)")
    tools: dict[str, SurfaceTool] = {}
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise SurfaceDocumentError(f"{origin}: tools[{index}] has no string 'name'")
        schema, annotations = entry.get("input_schema") or {}, entry.get("annotations") or {}
        if not isinstance(schema, dict) or not isinstance(annotations, dict):
            raise SurfaceDocumentError(
                f"{origin}: tools[{index}] ({entry['name']}): schema and annotations are objects"
            )
        tools[entry["name"]] = SurfaceTool(entry["name"], str(entry.get("description") or ""), schema, annotations)
    return tools


def surface_document(tools: Iterable[SurfaceTool], about: Mapping[str, Any]) -> dict[str, Any]:
    """A snapshot document of `tools` (in the server's order), `about` saying where and when."""
    listed = [tool.entry() for tool in tools]
    return {"snapshot": {**about, "tool_count": len(listed)}, "tools": listed}


def surface_hash(tools: Mapping[str, SurfaceTool]) -> str:
    """A short hash of the tools alone (not where or when they were taken): equal surfaces, equal hash."""
    canonical = json.dumps([tools[name].entry() for name in sorted(tools)], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


def own_words(description: str) -> str:
    """A description without the notice block a server appends for the session (the twin's and Neon's
    `<notice>`: the grant and the project it is scoped to), as a description variant states a tool."""
    head, sep, tail = description.rpartition(f"\n\n{NOTICE_OPEN}\n")
    return head if sep and tail.rstrip().endswith(NOTICE_CLOSE) else description


def diff_surfaces(old: Mapping[str, SurfaceTool], new: Mapping[str, SurfaceTool]) -> list[ToolChange]:
    """Every change from `old` to `new`, tool by tool (removed and added by name; a rename is both)."""
    changes: list[ToolChange] = []
    for name in sorted(set(old) - set(new)):
        changes.append(ToolChange(name, "removed", (f"was: {_flat(own_words(old[name].description))}",)))
    for name in sorted(set(new) - set(old)):
        changes.append(ToolChange(name, "added", (f"now: {_flat(own_words(new[name].description))}",)))
    for name in sorted(set(old) & set(new)):
        before, after = old[name], new[name]
        words = own_words(before.description), own_words(after.description)
        if words[0] != words[1]:
            changes.append(ToolChange(name, "description", tuple(word_diff(*words))))
        notices = before.description[len(words[0]) :], after.description[len(words[1]) :]
        if notices[0] != notices[1]:
            changes.append(ToolChange(name, "notice", tuple(word_diff(*notices))))
        if json.dumps(before.input_schema, sort_keys=True) != json.dumps(after.input_schema, sort_keys=True):
            changes.append(ToolChange(name, "schema", tuple(json_diff(before.input_schema, after.input_schema))))
        if dict(before.annotations) != dict(after.annotations):
            changes.append(ToolChange(name, "annotations", tuple(json_diff(before.annotations, after.annotations))))
    return changes


def word_diff(before: str, after: str) -> list[str]:
    """What changed between two texts, word by word: each changed stretch with a few words of context,
    `… staged on a [-temporary-]{+throw-away+} branch …`; a text mostly rewritten is given whole, as
    `was:` and `now:`; whitespace alone is said as such."""
    old_words, new_words = before.split(), after.split()
    if old_words == new_words:
        return ["whitespace only (the words are the same)"]
    matcher = difflib.SequenceMatcher(None, old_words, new_words, autojunk=False)
    if matcher.ratio() < REWRITTEN:
        return [f"was: {' '.join(old_words)}", f"now: {' '.join(new_words)}"]
    lines = []
    for group in matcher.get_grouped_opcodes(CONTEXT_WORDS):
        parts = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                parts.append(" ".join(old_words[i1:i2]))
                continue
            removed = f"[-{' '.join(old_words[i1:i2])}-]" if i2 > i1 else ""
            added = f"{{+{' '.join(new_words[j1:j2])}+}}" if j2 > j1 else ""
            parts.append(removed + added)
        first, last = group[0], group[-1]
        lead = "… " if first[1] > 0 else ""
        trail = " …" if last[2] < len(old_words) else ""
        lines.append(lead + " ".join(part for part in parts if part) + trail)
    return lines


def json_diff(before: Any, after: Any, path: str = "") -> list[str]:
    """Each path where two JSON values differ: `properties.sql.type: 'string' -> 'integer'`, a key
    added or removed, a list changed as a whole."""
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        lines: list[str] = []
        for key in sorted(set(before) | set(after), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in after:
                lines.append(f"{where}: removed (was {_value(before[key])})")
            elif key not in before:
                lines.append(f"{where}: added ({_value(after[key])})")
            else:
                lines.extend(json_diff(before[key], after[key], where))
        return lines
    if before == after and type(before) is type(after):
        return []
    return [f"{path or '(whole)'}: {_value(before)} -> {_value(after)}"]


def _value(value: Any) -> str:
    """A JSON value as a line: a string whole (a parameter's description is words the model reads), an
    object or a list cut at `SHOWN_VALUE` characters (its own paths are compared one by one)."""
    text = _flat(json.dumps(value, sort_keys=True, ensure_ascii=False))
    if isinstance(value, str) or len(text) <= SHOWN_VALUE:
        return text
    return text[: SHOWN_VALUE - 1] + "…"


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def described_changes(changes: Sequence[ToolChange]) -> list[str]:
    """The tools whose own words changed: what a pair of description variants can A/B."""
    return sorted({change.tool for change in changes if change.kind in DESCRIBED})


def variant_pair(
    old: Mapping[str, SurfaceTool], new: Mapping[str, SurfaceTool], tools: Iterable[str]
) -> tuple[dict[str, str], dict[str, str]]:
    """The two arms' description variants for `tools`: each tool's own words as kept (A) and now (B).
    Every other tool reads as the server lists it in both arms; the notice block is left out of both,
    as every description variant leaves it (it names the session's project, written per trial)."""
    chosen = sorted(tools)
    return (
        {name: own_words(old[name].description) for name in chosen},
        {name: own_words(new[name].description) for name in chosen},
    )


def named_tools(case: Case) -> set[str]:
    """The tools a case names: required, forbidden, in its reference calls, in its tool order (rule 1)."""
    named = {*case.required_tools, *case.forbidden_tools, *(call.tool for call in case.reference_calls)}
    return named | {tool for pair in case.tool_order for tool in pair}


def positive_tools(case: Case) -> set[str]:
    """The tools a case's right path uses: required, in its reference calls or its tool order."""
    used = {*case.required_tools, *(call.tool for call in case.reference_calls)}
    return used | {tool for pair in case.tool_order for tool in pair}


def involved_tools(case: Case, roles: ToolRoles) -> set[str]:
    """Every tool whose words can move this case's verdict, by the module's three rules."""
    named = named_tools(case)
    sql = {*roles.run_sql, *roles.run_sql_batch}
    groups = (sql, {*roles.stage, *roles.apply}, {*roles.tune, *roles.tune_apply})
    involved = set(named)
    for group in groups:
        if named & group:
            involved |= group  # rule 2: siblings chosen between by their words
    if positive_tools(case) & {*roles.stage, *roles.apply, *roles.tune, *roles.tune_apply}:
        involved |= sql  # rule 3: the SQL tool is the wrong path of a staged change
    return involved


def involved_cases(cases: Iterable[Case], tools: Iterable[str], roles: ToolRoles) -> list[Case]:
    """The cases that involve any of `tools`, in the order given."""
    changed = set(tools)
    return [case for case in cases if involved_tools(case, roles) & changed]
