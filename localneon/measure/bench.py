"""``python -m localneon.bench``: how long the operations an eval trial depends on take.

Measures, over N runs each: creating a project and loading a fixture through its connection URI,
creating a branch from a loaded main branch, and dumping a branch's schema. Prints median and
p90 in milliseconds. Uses the same cluster as the server (``LOCALNEON_PGDATA`` / ``DATABASE_URL``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import psycopg

from localneon.engine.branching import Neon

INLINE_FIXTURE = """
CREATE TABLE authors (id serial PRIMARY KEY, name text NOT NULL, email text UNIQUE);
CREATE TABLE posts (
    id serial PRIMARY KEY,
    author_id integer NOT NULL REFERENCES authors(id),
    title text NOT NULL,
    content text,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX posts_author_idx ON posts (author_id);
INSERT INTO authors (name, email) SELECT 'author ' || g, 'a' || g || '@example.com' FROM generate_series(1, 50) g;
INSERT INTO posts (author_id, title, content)
SELECT 1 + g % 50, 'post number ' || g, repeat('lorem ipsum ', 20) FROM generate_series(1, 400) g;
"""


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def report(label: str, samples: list[float]) -> None:
    print(
        f"{label:<34} n={len(samples):<3} median={statistics.median(samples):8.1f} ms  "
        f"p90={percentile(samples, 0.9):8.1f} ms"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localneon.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--fixture", type=Path, default=None, help="SQL file to load (default: ~450 inline rows)")
    args = parser.parse_args(argv)
    fixture = args.fixture.read_text() if args.fixture else INLINE_FIXTURE

    started = time.perf_counter()
    neon = Neon.open()
    kind = "embedded" if neon.cluster.embedded else "DATABASE_URL"
    print(f"cluster ready in {(time.perf_counter() - started) * 1000:.0f} ms ({kind})")
    projects: list[str] = []
    create_load: list[float] = []
    branch: list[float] = []
    dump: list[float] = []
    try:
        for _ in range(args.runs):

            def create_and_load() -> None:
                created = neon.create_project("bench")
                projects.append(created.project.id)
                with psycopg.connect(neon.uri(neon.target(created.project.id))) as conn:
                    conn.execute(fixture.encode())

            create_load.append(timed(create_and_load))
        project_id = projects[0]
        for i in range(args.runs):
            branch.append(timed(partial(neon.create_branch, project_id, name=f"bench-{i}")))
        target = neon.target(project_id)
        for _ in range(args.runs):
            dump.append(timed(lambda: neon.schema_dump(target)))
    finally:
        for project_id in projects:
            neon.delete_project(project_id)
    report("create project + load fixture", create_load)
    report("create branch (from loaded main)", branch)
    report("schema dump (pg_dump --schema-only)", dump)
    return 0
