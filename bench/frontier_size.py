"""Benchmark: bytes per queued URL in each frontier backend, and marking speed.

    .venv/bin/python -m bench.frontier_size --urls 100000 [--redis redis://127.0.0.1:6379/0]

Marks ``--urls`` URLs of the virtual web (1,000 hosts) and reports the
backend's growth per URL: the SQLite file (after a checkpoint), or Redis's
``used_memory``. Writes bench/results/frontier_size.{json,md}.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path

from bench.report import environment, write_report
from bench.virtualweb.web import VirtualWeb
from combine_scrapy.frontier.sqlite import SqliteFrontier
from combine_scrapy.urls import host_of

BATCH = 1000


def _entries(count: int) -> list[tuple[str, str, float]]:
    web = VirtualWeb(seed=1)
    urls = [web.url(page) for page in range(count)]
    return [(url, host_of(url), 0.0) for url in urls]


def _mark_all(frontier, entries) -> float:
    started = time.perf_counter()
    for start in range(0, len(entries), BATCH):
        frontier.mark(entries[start : start + BATCH])
    return time.perf_counter() - started


def measure_sqlite(entries) -> dict:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "frontier.sqlite"
        frontier = SqliteFrontier(path)
        empty = path.stat().st_size
        seconds = _mark_all(frontier, entries)
        frontier._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = path.stat().st_size - empty
        frontier.close()
    return {"bytes_per_url": round(size / len(entries), 1), "urls_marked_per_second": round(len(entries) / seconds)}


def measure_redis(entries, url: str) -> dict:
    from combine_scrapy.frontier.redis import RedisFrontier

    job = f"bench-{uuid.uuid4().hex[:8]}"
    frontier = RedisFrontier.from_url(url, job)
    server = frontier.server
    before = server.info("memory")["used_memory"]
    seconds = _mark_all(frontier, entries)
    after = server.info("memory")["used_memory"]
    frontier.delete_all()
    frontier.close()
    return {"bytes_per_url": round((after - before) / len(entries), 1), "urls_marked_per_second": round(len(entries) / seconds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=100_000)
    parser.add_argument("--redis", help="also measure the Redis frontier at this URL")
    args = parser.parse_args()
    entries = _entries(args.urls)
    backends = {"sqlite": measure_sqlite(entries)}
    if args.redis:
        backends["redis"] = measure_redis(entries, args.redis)
    result = {
        **environment(f"python -m bench.frontier_size --urls {args.urls}" + (f" --redis {args.redis}" if args.redis else "")),
        "urls": len(entries),
        "backends": backends,
    }
    write_report("frontier_size", result, "Frontier size", [
        f"{len(entries):,} URLs of the virtual web marked in batches of {BATCH}.",
        "",
        "| backend | bytes per queued URL | URLs marked per second |",
        "| --- | --- | --- |",
        *(f"| {name} | {b['bytes_per_url']} | {b['urls_marked_per_second']:,} |" for name, b in backends.items()),
    ])


if __name__ == "__main__":
    main()
