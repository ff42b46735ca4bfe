"""What a Neon-like server's migration answers say, in whatever form the answer takes.

Why one reader: versions of Neon's server answer `prepare_database_migration` differently (0.6.5
in XML, `<migration_id>` and `<temporary_branch><id>`; HEAD as a plain list, `- migrationId: ...`;
localneon and others in JSON or prose; a structured-content server as JSON, which the MCP client
turns into text). A careful agent reads the id wherever it is; nobody should be judged because one
version's layout was expected. A leaf module: plain text in, ids out.
"""

from __future__ import annotations

import json
import re
from typing import Any

from harness.servers.roles import AnswerReader

BRANCH_ID = re.compile(r"\bbr-[A-Za-z0-9-]+")
ID_VALUE = r"[A-Za-z0-9][A-Za-z0-9_-]*"
KEYS = {
    "migrationId": ("migrationId", "migration_id", "migrationid"),
    "temporaryBranchId": ("temporaryBranchId", "temporary_branch_id", "branchId", "branch_id"),
    "parentBranchId": ("parentBranchId", "parent_branch_id", "parentId", "parent_id"),
}
# Labels as prose, lists and XML write them: "Migration ID: x", "- migrationId: x", "<migration_id>x".
LABELS = {
    "migrationId": (r"migration[ _-]?id",),
    "temporaryBranchId": (r"temporary[ _-]?branch[ _-]?id", r"temporary branch[^\n]*?\bid", r"temporary branch"),
    "parentBranchId": (r"parent[ _-]?branch[ _-]?id", r"parent branch[^\n]*?\bid", r"parent[ _-]?id", r"parent"),
}
VALUE_PATTERN = {"migrationId": ID_VALUE, "temporaryBranchId": BRANCH_ID.pattern, "parentBranchId": BRANCH_ID.pattern}


def json_objects(text: str) -> list[Any]:
    """Every JSON object embedded in `text`, outermost first."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    index = text.find("{")
    while index != -1:
        try:
            value, end = decoder.raw_decode(text, index)
            found.append(value)
            index = text.find("{", end)
        except json.JSONDecodeError:
            index = text.find("{", index + 1)
    return found


def find_key(data: Any, names: tuple[str, ...]) -> str | None:
    """The first string (or number) value under one of `names`, at any depth."""
    if isinstance(data, dict):
        for key, value in data.items():
            if key in names and isinstance(value, str | int) and not isinstance(value, bool):
                return str(value)
        for value in data.values():
            found = find_key(value, names)
            if found:
                return found
    if isinstance(data, list):
        for value in data:
            found = find_key(value, names)
            if found:
                return found
    return None


def _xml(text: str) -> dict[str, str | None]:
    """`<migration_id>x</migration_id>`, `<temporary_branch>...<id>br-x</id>`, `<parent_id>br-y</parent_id>`."""
    found: dict[str, str | None] = {name: None for name in KEYS}
    for name, names in KEYS.items():
        tags = "|".join(re.escape(tag) for tag in names)
        match = re.search(rf"<({tags})>\s*({ID_VALUE})\s*</\1>", text, re.IGNORECASE)
        found[name] = match.group(2) if match else None
    for name, block in (("temporaryBranchId", "temporary_branch"), ("parentBranchId", "parent_branch")):
        match = re.search(rf"<{block}>(.*?)</{block}>", text, re.IGNORECASE | re.DOTALL)
        inner = match and re.search(r"<id>\s*(" + BRANCH_ID.pattern + r")\s*</id>", match.group(1))
        found[name] = found[name] or (inner.group(1) if inner else None)
    return found


def _labelled(text: str, labels: tuple[str, ...], value: str) -> str | None:
    for label in labels:
        pattern = r"(?<![A-Za-z])" + label + r"[^A-Za-z0-9\n]{0,6}[`\"'*]*(" + value + r")"
        match = re.search(pattern, text, re.IGNORECASE)
        if match:
            return match.group(1)
    return None


def migration_details(text: str) -> dict[str, str | None]:
    """Migration id, temporary and parent branch ids from a prepare answer (None where it names none)."""
    parsed = _xml(text)
    for obj in json_objects(text):
        for name, names in KEYS.items():
            parsed[name] = parsed[name] or find_key(obj, names)
    for name, labels in LABELS.items():
        parsed[name] = parsed[name] or _labelled(text, labels, VALUE_PATTERN[name])
    ids = BRANCH_ID.findall(text)
    if not parsed["temporaryBranchId"] and ids:
        parsed["temporaryBranchId"] = ids[0]
    if not parsed["parentBranchId"]:
        others = [i for i in ids if i != parsed["temporaryBranchId"]]
        parsed["parentBranchId"] = others[0] if others else None
    return parsed


def _branch_objects(data: Any) -> list[dict[str, Any]]:
    """Every object at any depth that reads as a branch: an `id` shaped like one and a `name`."""
    found: list[dict[str, Any]] = []
    if isinstance(data, dict):
        branch_id, name = data.get("id"), data.get("name")
        if isinstance(branch_id, str) and BRANCH_ID.fullmatch(branch_id) and isinstance(name, str):
            found.append(data)
        for value in data.values():
            found += _branch_objects(value)
    if isinstance(data, list):
        for value in data:
            found += _branch_objects(value)
    return found


def branch_ids_by_name(text: str) -> dict[str, str]:
    """Branch name -> id, from an answer that lists branches as JSON objects: Neon's describe_project
    (0.6.5 and HEAD: a sentence, then the API's branch objects as a JSON array) and the twin's (one
    JSON object whose `branches` are such objects). Names are unique within a project."""
    return {obj["name"]: obj["id"] for data in json_objects(text) for obj in _branch_objects(data)}


TUNING_ID = re.compile(r"tuning[ _-]?id\W{0,4}([A-Za-z0-9][A-Za-z0-9_-]*)", re.IGNORECASE)


def _value_under(data: Any, key: str) -> Any:
    """The first value under `key` at any depth (an object, a list, a string), or None."""
    if isinstance(data, dict):
        if key in data:
            return data[key]
        data = list(data.values())
    if isinstance(data, list):
        for value in data:
            found = _value_under(value, key)
            if found is not None:
                return found
    return None


def tuning_details(text: str) -> dict[str, str | None]:
    """Tuning id and temporary branch id from prepare_query_tuning's answer: the twin's lines
    (`tuningId: ...`, `temporaryBranchId: br-...`) or Neon's JSON (`tuningId`, `temporaryBranch.id`)."""
    tuning: str | None = None
    temp: str | None = None
    for data in json_objects(text):
        found = _value_under(data, "tuningId")
        tuning = tuning or (str(found) if found is not None else None)
        branch = _value_under(data, "temporaryBranch")
        if isinstance(branch, dict) and branch.get("id"):
            temp = temp or str(branch["id"])
    if tuning is None and (match := TUNING_ID.search(text)):
        tuning = match.group(1)
    if temp is None:
        temp = migration_details(text)["temporaryBranchId"]
    return {"tuningId": tuning, "temporaryBranchId": temp}


# How the control agents read Neon's answers (the family hands it to each trial: `TrialContext.answers`).
READER = AnswerReader(staged=migration_details, tuning=tuning_details, ids_by_name=branch_ids_by_name)
