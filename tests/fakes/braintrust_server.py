"""A recording stand-in for Braintrust's HTTP API: a real server on 127.0.0.1 the real SDK talks to.

Written from what braintrust 0.48.1 calls (`logger.py`, `api/auth.py`, `api/_generated/*`,
`framework.py`, `cli/eval.py`): API-key login on the app URL, which names the API URL (this same
server); `GET /version` (its `logs3_payload_max_bytes` turns on the overflow path); project and
experiment registration (`POST /v1/project`, `POST /v1/experiment` with `ensure_new`, `base_exp_id`,
`repo_info`, `metadata`); experiment listing (`GET /v1/experiment`, filtered and paginated) and
updates (`PATCH /v1/experiment/{id}`, object fields deep-merged);
`POST /logs3` with rows inline or, for payloads over the limit, a reference to a payload uploaded
through a signed URL (`POST /logs3/overflow`, then `PUT` to that URL); summaries
(`GET /v1/experiment/{id}/summarize`, compared with the stored base experiment, else the
project's previous one, as the real backend does); and the AI gateway's chat completions
(a forced `select_choice` answer, for the factuality judge, `judge_chooser(body)` or `judge_choice`),
with the gateway's response cache as braintrust-proxy's `packages/proxy/src/proxy.ts` keeps it: on
by default (`x-bt-use-cache: auto`) for a request at `temperature: 0` or with a `seed`, keyed by the
path, the body as sent and the key; `never` turns it off, `always` on whatever the temperature;
`Cache-Control: no-cache` does not read it and `no-store` does not write it; an answer from it
carries `x-bt-cached: HIT` (`gateway_cache_hits` counts them). Datasets (registration, rows, fetches
by version) are `tests/fakes/braintrust_datasets.py`'s.

    with FakeBraintrust() as braintrust:
        env.update(braintrust.env())     # BRAINTRUST_API_KEY, BRAINTRUST_APP_URL, gateway URL
        ...                              # run `braintrust eval` (without --no-send-logs)
        braintrust.experiments           # registered experiments, oldest first
        braintrust.root_rows(exp_id)     # one merged row per trial, with its scores
        braintrust.bytes_uploaded(exp_id)
        braintrust.compared_with(exp_id) # what its score summaries were compared with

`refuse_logs=503` answers every log upload with that status (for lost-upload tests).
"""

from __future__ import annotations

import itertools
import json
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any

import httpx

from tests.fakes.braintrust_datasets import Datasets
from tests.fakes.jsonserver import JsonServer, Request, Response

API_KEY = "bt-fake-key-0123456789abcdef"
ORG_NAME = "fake-org"
OVERFLOW_TYPE = "logs3_overflow"


@dataclass
class Upload:
    """One accepted `logs3` request: its rows and the bytes it took on the wire (overflow included)."""

    rows: list[dict[str, Any]]
    size: int
    overflow: bool


@dataclass
class _State:
    projects: dict[str, dict[str, Any]] = field(default_factory=dict)
    experiments: list[dict[str, Any]] = field(default_factory=list)
    uploads: list[Upload] = field(default_factory=list)
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)  # merged rows by (object, id)
    blobs: dict[str, bytes] = field(default_factory=dict)  # overflow payloads by key
    datasets: Datasets = field(default_factory=Datasets)
    refused_rows: int = 0
    # (experiment id, the experiment its scores were compared with, or None) per score summary asked for
    comparisons: list[tuple[str, str | None]] = field(default_factory=list)
    gateway_cache: dict[tuple[str, bytes, str], dict[str, Any]] = field(default_factory=dict)
    gateway_cache_hits: int = 0


def _merge(target: dict[str, Any], update: dict[str, Any]) -> None:
    """Deep merge as Braintrust merges `_is_merge` rows: nested objects merge, other values replace."""
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = value


class FakeBraintrust:
    """Braintrust's app, API and gateway on one loopback port; records every request and row."""

    def __init__(
        self,
        refuse_logs: int | None = None,
        logs3_payload_max_bytes: int = 6 * 1024 * 1024,
        judge_choice: str = "C",
        judge_chooser: Callable[[dict[str, Any]], str] | None = None,
    ) -> None:
        self.refuse_logs = refuse_logs
        self.logs3_payload_max_bytes = logs3_payload_max_bytes
        self.judge_choice = judge_choice
        self.judge_chooser = judge_chooser
        self.state = _State()
        self._lock = threading.Lock()
        self._clock = itertools.count()
        self._started = datetime.now(UTC)
        self._server = JsonServer({}, fallback=self._serve, keep_alive=True)

    # --- lifecycle -------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return self._server.url

    @property
    def requests(self) -> list[Request]:
        return self._server.requests

    def env(self) -> dict[str, str]:
        """What points the SDK (login, API, logs) and the judge's gateway route here."""
        return {
            "BRAINTRUST_API_KEY": API_KEY,
            "BRAINTRUST_APP_URL": self.url,
            "BRAINTRUST_AI_GATEWAY_URL": f"{self.url}/v1",
        }

    def __enter__(self) -> FakeBraintrust:
        self._server.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._server.stop()

    # --- what tests read -------------------------------------------------------------------------

    @property
    def experiments(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(experiment) for experiment in self.state.experiments]

    def dataset_rows(self, name: str) -> list[dict[str, Any]]:
        """The live rows of the dataset called `name` (any project), with their `_xact_id`."""
        with self._lock:
            found = [item for item in self.state.datasets.datasets if item["name"] == name]
            return self.state.datasets.rows(found[0]["id"]) if found else []

    def register_experiment(self, name: str, metadata: dict[str, Any], project: str = "neon-mcp-evals") -> str:
        """An earlier experiment, registered through the API as the SDK registers one; its id."""
        headers = {"Authorization": f"Bearer {API_KEY}"}
        with httpx.Client(base_url=self.url, headers=headers) as client:
            project_id = client.post("/v1/project", json={"name": project}).json()["id"]
            body = {"project_id": project_id, "name": name, "metadata": metadata}
            return str(client.post("/v1/experiment", json=body).json()["id"])

    def add_row_in_the_ui(self, name: str, row: dict[str, Any]) -> None:
        """A row as a user adds one in Braintrust's UI: stored in the dataset, without `push`'s mark."""
        with self._lock:
            [dataset] = [item for item in self.state.datasets.datasets if item["name"] == name]
            self.state.datasets.write({**row, "dataset_id": dataset["id"], "created": self._now()})

    def dataset_id(self, name: str) -> str:
        with self._lock:
            return str(next(item["id"] for item in self.state.datasets.datasets if item["name"] == name))

    def dataset_writes(self, name: str) -> int:
        """How many row versions were ever written to the dataset called `name`."""
        with self._lock:
            found = [item for item in self.state.datasets.datasets if item["name"] == name]
            return self.state.datasets.writes(found[0]["id"]) if found else 0

    def rows(self, experiment_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(row) for row in self.state.rows.values() if row.get("experiment_id") == experiment_id]

    def root_rows(self, experiment_id: str) -> list[dict[str, Any]]:
        """One row per trial (the `eval` root span), with every score of its trace gathered in."""
        rows = self.rows(experiment_id)
        roots = {str(row["root_span_id"]): dict(row) for row in rows if not row.get("span_parents")}
        for item in roots.values():
            item["trace_scores"] = {}
        for row in rows:
            found = roots.get(str(row.get("root_span_id")))
            if found is not None:
                found["trace_scores"].update(row.get("scores") or {})
        return list(roots.values())

    def bytes_uploaded(self, experiment_id: str) -> float:
        """Wire bytes of accepted log uploads that carried this experiment's rows.

        A batch may mix experiments: its bytes are shared out in proportion to each row's JSON size.
        """
        total = 0.0
        with self._lock:
            for upload in self.state.uploads:
                sizes = [(row.get("experiment_id"), len(json.dumps(row))) for row in upload.rows]
                everything = sum(size for _, size in sizes) or 1
                mine = sum(size for owner, size in sizes if owner == experiment_id)
                total += upload.size * mine / everything
        return total

    @property
    def uploads(self) -> list[Upload]:
        with self._lock:
            return list(self.state.uploads)

    @property
    def refused_rows(self) -> int:
        with self._lock:
            return self.state.refused_rows

    def compared_with(self, experiment_id: str) -> list[str | None]:
        """The experiments this one's score summaries were compared with (None: none), in order asked."""
        with self._lock:
            return [base for asked, base in self.state.comparisons if asked == experiment_id]

    def paths(self, method: str = "") -> list[str]:
        return [request.path for request in self.requests if not method or request.method == method]

    # --- routes (called under the lock) ----------------------------------------------------------

    def _serve(self, request: Request) -> Response:
        with self._lock:
            return self._route(request)

    def _route(self, request: Request) -> Response:
        if request.path.startswith("/upload/") and request.method == "PUT":
            self.state.blobs[request.path.removeprefix("/upload/")] = request.raw
            return Response(200, {})
        if request.path in ("/v1/chat/completions", "/chat/completions") and request.method == "POST":
            return self._chat(request)
        if request.headers.get("authorization") != f"Bearer {API_KEY}":
            return Response(401, {"error": "Invalid API key"})
        route = f"{request.method} {request.path}"
        if route == "POST /api/apikey/login":
            org = {"id": "org-1", "name": ORG_NAME, "api_url": self.url, "proxy_url": self.url, "git_metadata": None}
            return Response(200, {"org_info": [org]})
        if route == "GET /version":
            return Response(200, {"version": "fake", "logs3_payload_max_bytes": self.logs3_payload_max_bytes})
        if route == "POST /v1/project":
            return self._project(request.body)
        if route == "POST /v1/experiment":
            return self._register(request.body)
        if route == "GET /v1/experiment":
            return self._list(request.query)
        if request.method == "GET" and request.path.startswith("/v1/project/"):
            found = self.state.projects.get(request.path.removeprefix("/v1/project/"))
            return Response(200, found) if found else Response(404, {"error": "no such project"})
        if route == "POST /v1/dataset":
            if request.body["project_id"] not in self.state.projects:
                return Response(404, {"error": "no such project"})
            return Response(*self.state.datasets.create(request.body, self._now()))
        if route == "GET /v1/dataset":
            named = self.state.datasets.named(self._project_ids(request.query), request.query.get("dataset_name"))
            return Response(200, {"objects": named})
        if request.method == "GET" and request.path.startswith("/v1/dataset/"):
            found = self.state.datasets.get(request.path.removeprefix("/v1/dataset/"))
            return Response(200, found) if found else Response(404, {"error": "no such dataset"})
        if request.method == "POST" and request.path.startswith("/v1/dataset/") and request.path.endswith("/fetch"):
            dataset_id = request.path.removeprefix("/v1/dataset/").removesuffix("/fetch")
            return Response(*self.state.datasets.fetch(dataset_id, request.body or {}))
        if route == "POST /logs3/overflow":
            key = uuid.uuid4().hex
            signed = f"{self.url}/upload/{key}"
            return Response(200, {"method": "PUT", "signedUrl": signed, "headers": {}, "key": key})
        if route == "POST /logs3":
            return self._logs3(request.raw)
        if request.method == "GET" and request.path.startswith("/v1/experiment/"):
            experiment_id, _, action = request.path.removeprefix("/v1/experiment/").partition("/")
            if action == "summarize":
                return self._summarize(experiment_id, request.query)
            if not action:
                found = self._experiment(experiment_id)
                return Response(200, found) if found else Response(404, {"error": "no such experiment"})
        if request.method == "PATCH" and request.path.startswith("/v1/experiment/"):
            return self._patch(request.path.removeprefix("/v1/experiment/"), request.body or {})
        return Response(404, {"error": f"no route {route}"})

    def _patch(self, experiment_id: str, body: dict[str, Any]) -> Response:
        """`PATCH /v1/experiment/{id}`: object fields (metadata) deep-merge, other fields replace."""
        found = self._experiment(experiment_id)
        if found is None:
            return Response(404, {"error": "no such experiment"})
        for key, value in body.items():
            if isinstance(value, dict) and isinstance(found.get(key), dict):
                _merge(found[key], value)
            else:
                found[key] = value
        return Response(200, found)

    def _now(self) -> str:
        # Strictly increasing creation times, even within one clock tick.
        return (self._started + timedelta(milliseconds=next(self._clock))).isoformat()

    def _project(self, body: dict[str, Any]) -> Response:
        name = body["name"]
        for project in self.state.projects.values():
            if project["name"] == name:
                return Response(200, project)
        project = {"id": f"proj-{uuid.uuid4().hex[:12]}", "name": name, "org_id": "org-1", "created": self._now()}
        self.state.projects[project["id"]] = project
        return Response(200, project)

    def _experiment(self, experiment_id: str) -> dict[str, Any] | None:
        return next((item for item in self.state.experiments if item["id"] == experiment_id), None)

    def _register(self, body: dict[str, Any]) -> Response:
        project_id = body["project_id"]
        if project_id not in self.state.projects:
            return Response(404, {"error": f"project {project_id} not found"})
        name = body.get("name") or f"experiment-{len(self.state.experiments) + 1}"
        same = [e for e in self.state.experiments if e["project_id"] == project_id and e["name"] == name]
        if same and not body.get("ensure_new"):
            return Response(200, same[0])  # registration without ensure_new continues the existing one
        if same:
            name = f"{name}-{uuid.uuid4().hex[:6]}"
        repo_info = body.get("repo_info") or {}
        experiment = {
            "id": f"exp-{uuid.uuid4().hex[:12]}",
            "project_id": project_id,
            "name": name,
            "description": body.get("description"),
            "created": self._now(),
            "repo_info": repo_info or None,
            "commit": repo_info.get("commit"),
            "base_exp_id": body.get("base_exp_id"),
            "dataset_id": body.get("dataset_id"),
            "public": bool(body.get("public")),
            "metadata": body.get("metadata"),
            "tags": body.get("tags"),
            "user_id": "user-1",
        }
        self.state.experiments.append(experiment)
        return Response(200, experiment)

    def _project_ids(self, query: dict[str, str]) -> set[str]:
        """The projects a listing's `project_id` / `project_name` filter keeps."""
        project_ids = {query["project_id"]} if "project_id" in query else set(self.state.projects)
        if "project_name" in query:
            project_ids = {pid for pid in project_ids if self.state.projects[pid]["name"] == query["project_name"]}
        return project_ids

    def _list(self, query: dict[str, str]) -> Response:
        project_ids = self._project_ids(query)
        found = [e for e in reversed(self.state.experiments) if e["project_id"] in project_ids]  # newest first
        if "experiment_name" in query:
            found = [e for e in found if e["name"] == query["experiment_name"]]
        if "starting_after" in query:
            ids = [e["id"] for e in found]
            cursor = query["starting_after"]
            found = found[ids.index(cursor) + 1 :] if cursor in ids else []
        limit = int(query.get("limit") or 1000)
        return Response(200, {"objects": found[:limit]})

    def _logs3(self, raw: bytes) -> Response:
        body = json.loads(raw)
        rows = body.get("rows")
        overflow = isinstance(rows, dict)
        if overflow:
            if rows.get("type") != OVERFLOW_TYPE or rows.get("key") not in self.state.blobs:
                return Response(400, {"error": "unknown overflow reference"})
            raw = self.state.blobs.pop(rows["key"])
            rows = json.loads(raw)["rows"]
        if self.refuse_logs is not None:
            self.state.refused_rows += len(rows)
            return Response(self.refuse_logs, {"error": "logs refused by the stand-in"})
        self.state.uploads.append(Upload(rows=rows, size=len(raw), overflow=overflow))
        for row in rows:
            if row.get("dataset_id"):
                self.state.datasets.write(row)
                continue
            key = f"{row.get('experiment_id') or row.get('project_id')}/{row['id']}"
            existing = self.state.rows.get(key)
            if existing is not None and row.get("_is_merge"):
                _merge(existing, row)
            else:
                self.state.rows[key] = dict(row)
        return Response(200, {})

    def _trial_scores(self, experiment_id: str) -> list[dict[str, float]]:
        """Per trial (root span), every non-null score in its trace."""
        traces: dict[str, dict[str, float]] = {}
        for row in self.state.rows.values():
            if row.get("experiment_id") != experiment_id:
                continue
            scores = traces.setdefault(str(row.get("root_span_id")), {})
            for name, value in (row.get("scores") or {}).items():
                if isinstance(value, int | float):
                    scores[name] = float(value)
        return list(traces.values())

    def _summarize(self, experiment_id: str, query: dict[str, str]) -> Response:
        experiment = self._experiment(experiment_id)
        if experiment is None:
            return Response(404, {"error": "no such experiment"})
        project = self.state.projects[experiment["project_id"]]
        base_id = query.get("comparison_experiment_id") or experiment.get("base_exp_id")
        if base_id is None:  # the backend's fallback: the project's previous experiment
            earlier = [e for e in self.state.experiments if e["project_id"] == project["id"]]
            earlier = earlier[: earlier.index(experiment)]
            base_id = earlier[-1]["id"] if earlier else None
        base = self._experiment(base_id) if base_id else None
        summary: dict[str, Any] = {
            "project_name": project["name"],
            "experiment_name": experiment["name"],
            "project_url": f"{self.url}/app/{ORG_NAME}/p/{project['name']}",
            "experiment_url": f"{self.url}/app/{ORG_NAME}/p/{project['name']}/experiments/{experiment['name']}",
            "comparison_experiment_name": base["name"] if base else None,
        }
        if query.get("summarize_scores") in ("true", "True", "1"):
            self.state.comparisons.append((experiment_id, base["id"] if base else None))
            summary["scores"] = self._score_summary(experiment_id, base["id"] if base else None)
            summary["metrics"] = {}
        return Response(200, summary)

    def _score_summary(self, experiment_id: str, base_id: str | None) -> dict[str, Any]:
        def means(exp_id: str) -> dict[str, float]:
            trials = self._trial_scores(exp_id)
            names = {name for scores in trials for name in scores}
            return {
                name: sum(values) / len(values)
                for name in names
                if (values := [scores[name] for scores in trials if name in scores])
            }

        current, base = means(experiment_id), (means(base_id) if base_id else {})
        summary: dict[str, Any] = {}
        for name, score in sorted(current.items()):
            item: dict[str, Any] = {"name": name, "score": score, "improvements": 0, "regressions": 0}
            if name in base:
                item["diff"] = score - base[name]
                item["improvements"] = int(score > base[name])
                item["regressions"] = int(score < base[name])
            summary[name] = item
        return summary

    @property
    def gateway_cache_hits(self) -> int:
        with self._lock:
            return self.state.gateway_cache_hits

    def _chat(self, request: Request) -> Response:
        body = request.body if isinstance(request.body, dict) else {}
        mode = request.headers.get("x-bt-use-cache", "").strip().lower() or "auto"
        directives = {part.strip().partition("=")[0] for part in request.headers.get("cache-control", "").split(",")}
        deterministic = body.get("temperature") == 0 or body.get("seed") is not None
        cacheable = mode != "never" and (mode == "always" or deterministic)
        key = (request.path, request.raw, request.headers.get("authorization", ""))
        cached = self.state.gateway_cache.get(key) if cacheable and "no-cache" not in directives else None
        if cached is not None:
            self.state.gateway_cache_hits += 1
            return Response(200, cached, {"x-bt-cached": "HIT"})
        choice = self.judge_chooser(body) if self.judge_chooser else self.judge_choice
        arguments = json.dumps({"reasons": "Compared with the expert answer.", "choice": choice})
        call = {"id": "call-1", "type": "function", "function": {"name": "select_choice", "arguments": arguments}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        answer = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:8]}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "judge"),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        if cacheable and "no-store" not in directives:
            self.state.gateway_cache[key] = answer
        return Response(200, answer, {"x-bt-cached": "MISS"})


def iter_rows(uploads: list[Upload]) -> Iterator[dict[str, Any]]:
    for upload in uploads:
        yield from upload.rows
