"""Benchmark: how harvesters sharing one Redis frontier get in each other's way.

    .venv/bin/python -m bench.contention [--harvesters 1 4 8] [--hosts 300 --per-host 10] [--concurrency 8]
                                         [--strategy BreadthFirstTime] [--redis redis://127.0.0.1:6379/0]

Each harvester is a thread with its own RedisFrontier (its own connections),
driven as the Scrapy scheduler drives it: take a round when its ready queue is
empty, claim its URLs in order as fetch slots free (``--concurrency`` fetches
in flight, each a few milliseconds), complete each fetch. Every Redis command
a harvester sends is counted. Reported per harvester count: failed claims /
claims (a claim the scheduler made that another harvester had won), Redis
round trips per fetched page (rounds, claims, completions, looks for the next
due URL), and whether every URL was fetched exactly once. Writes
bench/results/contention.{json,md}.
"""

from __future__ import annotations

import argparse
import random
import threading
import time
import uuid
from collections import Counter, deque

import redis

from bench.report import environment, write_report
from combine_scrapy.frontier.redis import RedisFrontier
from combine_scrapy.frontier.strategy import strategy_named

LEASE = 60.0


class CountingFrontier(RedisFrontier):
    """A RedisFrontier that counts the round trips it makes to Redis."""

    round_trips = 0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        send = self.server.execute_command

        def counted(*command, **options):
            self.round_trips += 1
            return send(*command, **options)

        self.server.execute_command = counted


def harvester(url: str, job: str, strategy: str, lease_ahead: bool, concurrency: int, fetched: Counter, lock: threading.Lock,
              totals: Counter, deadline: float) -> None:
    """One harvester: the scheduler's loop, with ``concurrency`` fetches in flight (each a few ms)."""
    frontier = CountingFrontier.from_settings({"REDIS_URL": url}, job, lease_ahead=lease_ahead)
    crawl = strategy_named(strategy)
    ready: deque = deque()
    in_flight: list[tuple[float, object]] = []
    claims = failed = pages = idle = 0
    rng = random.Random()
    while time.monotonic() < deadline:
        now = time.time()
        for done in [item for item in in_flight if item[0] <= now]:
            in_flight.remove(done)
            entry = done[1]
            frontier.complete(entry.url, entry.host, now=now, url_lock_until=now + 1e6, host_lock_until=now,
                              status=200)
            pages += 1
            with lock:
                fetched[entry.url] += 1
        if len(in_flight) >= concurrency:
            time.sleep(0.001)
            continue
        if not ready:
            limit = None if crawl.full_round else concurrency
            ready.extend(frontier.ready(now, strategy, limit, hold=LEASE if crawl.holds_places else 0.0))
        handed = False
        while ready:
            entry = ready.popleft()
            claims += 1
            if frontier.claim(entry, now, LEASE):
                in_flight.append((now + rng.uniform(0.002, 0.006), entry))
                handed = True
                break
            failed += 1
        if not handed:
            due = frontier.next_due(now)
            if due is None and not in_flight:
                idle += 1
                if idle > 50:
                    break
            time.sleep(0.002)
        else:
            idle = 0
    frontier.close()
    with lock:
        totals.update(claims=claims, failed=failed, pages=pages, round_trips=frontier.round_trips,
                      lost_races=frontier.lost_races)


def run(url: str, harvesters: int, hosts: int, per_host: int, concurrency: int, strategy: str,
        lease_ahead: bool = True) -> dict:
    job = f"bench-contention-{uuid.uuid4().hex[:8]}"
    seeder = RedisFrontier.from_url(url, job)
    urls = [f"http://h{host}.test/p{page}" for host in range(hosts) for page in range(per_host)]
    for start in range(0, len(urls), 1000):
        seeder.mark([(u, u.split("/")[2], 0.0) for u in urls[start:start + 1000]])
    fetched: Counter = Counter()
    totals: Counter = Counter()
    lock = threading.Lock()
    deadline = time.monotonic() + 120
    started = time.monotonic()
    threads = [
        threading.Thread(target=harvester, args=(url, job, strategy, lease_ahead, concurrency, fetched, lock, totals, deadline))
        for _ in range(harvesters)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.monotonic() - started
    server = redis.Redis.from_url(url)
    memory_keys = list(server.scan_iter(match=f"combine:{{{job}}}:*", count=1000))
    if memory_keys:
        server.delete(*memory_keys)
    seeder.close()
    return {
        "harvesters": harvesters,
        "pages": totals["pages"],
        "claims": totals["claims"],
        "failed_claims": totals["failed"],
        "failed_claim_share": round(totals["failed"] / max(totals["claims"], 1), 3),
        "urls_skipped_in_take_script": totals["lost_races"],
        "round_trips_per_page": round(totals["round_trips"] / max(totals["pages"], 1), 2),
        "fetched_once": len(fetched) == len(urls) and max(fetched.values()) == 1,
        "urls_fetched_twice": sum(1 for count in fetched.values() if count > 1),
        "urls_not_fetched": len(urls) - len(fetched),
        "seconds": round(seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--harvesters", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--per-host", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--strategy", default="BreadthFirstTime")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    args = parser.parse_args()
    modes = {}
    for lease_ahead in (False, True):
        runs = modes["lease_ahead" if lease_ahead else "claim_by_claim"] = []
        for count in args.harvesters:
            runs.append(run(args.redis, count, args.hosts, args.per_host, args.concurrency, args.strategy, lease_ahead))
            print(lease_ahead, runs[-1])
    result = {
        **environment("python -m bench.contention " + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in (
            ("hosts", args.hosts), ("per_host", args.per_host), ("concurrency", args.concurrency),
            ("strategy", args.strategy)))),
        "hosts": args.hosts, "urls_per_host": args.per_host, "concurrency": args.concurrency,
        "strategy": args.strategy, "modes": modes,
    }

    def table(runs: list[dict]) -> list[str]:
        return [
            "| harvesters | pages | failed claims / claims | URLs skipped in the take script | round trips per page "
            "| every URL fetched once |",
            "| --- | --- | --- | --- | --- | --- |",
            *(f"| {r['harvesters']} | {r['pages']:,} | {r['failed_claim_share']:.1%} | "
              f"{r['urls_skipped_in_take_script']:,} | {r['round_trips_per_page']} | "
              f"{'yes' if r['fetched_once'] else 'NO'} |" for r in runs),
        ]

    write_report("contention", result, "Contention: harvesters sharing one Redis frontier", [
        f"{args.hosts} hosts x {args.per_host} URLs, WaitIntervalHost 0, strategy {args.strategy}; each harvester a "
        f"thread driven as the scheduler drives the frontier, {args.concurrency} fetches of 2-6 ms in flight.",
        "Round trips: every Redis command a harvester sent (rounds, claims, completions, next-due looks), per page.",
        "",
        "Rounds leased as handed out (what a harvester does: ROUND_LEASE URLs of a full round at a time, claims "
        "then cost nothing; URLs of a round another harvester leased first are skipped inside the take script, "
        "without a round trip, and counted):",
        "",
        *table(modes["lease_ahead"]),
        "",
        "Claimed URL by URL (RedisFrontier without lease_ahead, as harvesters did before):",
        "",
        *table(modes["claim_by_claim"]),
    ])


if __name__ == "__main__":
    main()
