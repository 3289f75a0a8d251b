"""Benchmark: how harvesters sharing one Redis frontier get in each other's way.

    .venv/bin/python -m bench.contention [--harvesters 1 4 8] [--hosts 1000 --per-host 4] [--concurrency 8]
                                         [--strategies BreadthFirstTime BestFirst] [--redis redis://127.0.0.1:6379/0]
                                         [--cluster redis://127.0.0.1:<port>]

Each harvester is a thread with its own RedisFrontier (its own connections),
driven as the Scrapy scheduler drives it: take a round when its ready queue is
empty, claim its URLs in order as fetch slots free (``--concurrency`` fetches
in flight, each a few milliseconds), complete each fetch. Every Redis command
a harvester sends is counted. Reported per harvester count: failed claims /
claims (a claim the scheduler made that another harvester had won), Redis
round trips per fetched page (rounds, claims, completions, looks for the next
due URL), and whether every URL was fetched exactly once. A pipeline counts
one round trip per Redis node it reaches. With ``--cluster`` (any node of a
Redis Cluster, e.g. one ``python tests/rediscluster.py`` started) the same
runs are made on the cluster too. Claimed URL by URL (harvesters before
rounds were leased) is measured for the first strategy on the single Redis.
Writes bench/results/contention.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import random
import threading
import time
import uuid
from collections import Counter, deque

from redis.cluster import RedisCluster

from bench.report import environment, write_report
from combine_scrapy.frontier.redis import RedisFrontier
from combine_scrapy.frontier.strategy import strategy_named

LEASE = 60.0


CLUSTER_PARAMS = {"redis_cls": "redis.cluster.RedisCluster"}


class CountingFrontier(RedisFrontier):
    """A RedisFrontier that counts the round trips it makes to Redis: a command, or a pipeline per node."""

    round_trips = 0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        server = self.server
        send, open_pipeline = server.execute_command, server.pipeline

        def counted(*command, **options):
            self.round_trips += 1
            return send(*command, **options)

        def counted_pipeline(*args, **kwargs):
            pipe = open_pipeline(*args, **kwargs)
            queue, execute = pipe.execute_command, pipe.execute
            keys: list = []

            def queued(*command, **options):
                keys.append(command[3] if command[0] == "EVALSHA" else command[1])
                return queue(*command, **options)

            def executed(*args, **kwargs):
                if keys:
                    self.round_trips += (len({server.get_node_from_key(key).name for key in keys})
                                         if isinstance(server, RedisCluster) else 1)
                keys.clear()
                return execute(*args, **kwargs)

            pipe.execute_command, pipe.execute = queued, executed
            return pipe

        server.execute_command, server.pipeline = counted, counted_pipeline


def harvester(settings: dict, job: str, strategy: str, lease_ahead: bool, concurrency: int, fetched: Counter,
              lock: threading.Lock, totals: Counter, deadline: float) -> None:
    """One harvester: the scheduler's loop, with ``concurrency`` fetches in flight (each a few ms)."""
    frontier = CountingFrontier.from_settings(settings, job, lease_ahead=lease_ahead)
    crawl = strategy_named(strategy)
    ready: deque = deque()
    in_flight: list[tuple[float, object]] = []
    claims = failed = pages = idle = 0
    held_until = None
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
            round_ = frontier.ready(now, strategy, limit, hold=LEASE if crawl.holds_places else 0.0)
            held_until = round_.held_until
            ready.extend(round_)
        handed = False
        while ready:
            entry = ready.popleft()
            claims += 1
            if frontier.claim(entry, now, LEASE):
                in_flight.append((now + rng.uniform(0.002, 0.006), entry))
                handed = True
                break
            failed += 1
        if not handed:  # as the scheduler: a held round says when to look again, else the frontier does
            due = held_until if held_until is not None else frontier.next_due(now)
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


def run(settings: dict, harvesters: int, hosts: int, per_host: int, concurrency: int, strategy: str,
        lease_ahead: bool = True) -> dict:
    job = f"bench-contention-{uuid.uuid4().hex[:8]}"
    seeder = RedisFrontier.from_settings(settings, job)
    urls = [f"http://h{host}.test/p{page}" for host in range(hosts) for page in range(per_host)]
    for start in range(0, len(urls), 1000):
        seeder.mark([(u, u.split("/")[2], 0.0) for u in urls[start:start + 1000]])
    fetched: Counter = Counter()
    totals: Counter = Counter()
    lock = threading.Lock()
    deadline = time.monotonic() + 120
    started = time.monotonic()
    threads = [
        threading.Thread(target=harvester,
                         args=(settings, job, strategy, lease_ahead, concurrency, fetched, lock, totals, deadline))
        for _ in range(harvesters)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.monotonic() - started
    seeder.delete_all()
    seeder.close()
    return {
        "strategy": strategy,
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
    parser.add_argument("--strategies", nargs="+", default=["BreadthFirstTime", "BestFirst"])
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--cluster", help="also run on the Redis Cluster this node belongs to")
    args = parser.parse_args()
    targets = {"redis": {"REDIS_URL": args.redis}}
    if args.cluster:
        targets["cluster"] = {"REDIS_URL": args.cluster, "REDIS_PARAMS": CLUSTER_PARAMS}
    load_before = os.getloadavg()[0]
    runs: dict[str, list[dict]] = {}
    for target, settings in targets.items():
        for strategy in args.strategies:
            for lease_ahead in (True, False) if target == "redis" and strategy == args.strategies[0] else (True,):
                mode = f"{target}, {'lease_ahead' if lease_ahead else 'claim_by_claim'}"
                for count in args.harvesters:
                    runs.setdefault(mode, []).append(
                        run(settings, count, args.hosts, args.per_host, args.concurrency, strategy, lease_ahead))
                    print(mode, runs[mode][-1])
    result = {
        **environment("python -m bench.contention " + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in (
            ("hosts", args.hosts), ("per_host", args.per_host), ("concurrency", args.concurrency),
            ("strategies", " ".join(args.strategies)))) + (" --cluster <a node of a 3-master cluster>" if args.cluster else "")),
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "hosts": args.hosts, "urls_per_host": args.per_host, "concurrency": args.concurrency, "runs": runs,
    }

    def table(rows: list[dict]) -> list[str]:
        return [
            "| strategy | harvesters | pages | failed claims / claims | URLs skipped in the take script "
            "| round trips per page | every URL fetched once |",
            "| --- | --- | --- | --- | --- | --- | --- |",
            *(f"| {r['strategy']} | {r['harvesters']} | {r['pages']:,} | {r['failed_claim_share']:.1%} | "
              f"{r['urls_skipped_in_take_script']:,} | {r['round_trips_per_page']} | "
              f"{'yes' if r['fetched_once'] else 'NO'} |" for r in rows),
        ]

    titles = {
        "redis, lease_ahead": "One Redis, rounds leased as handed out (what a harvester does):",
        "cluster, lease_ahead": "A Redis Cluster of three masters on this machine, rounds leased as handed out:",
        "redis, claim_by_claim": "One Redis, claimed URL by URL (RedisFrontier without lease_ahead, as harvesters did "
                                 "before rounds were leased):",
    }
    sections = []
    for mode in ("redis, lease_ahead", "cluster, lease_ahead", "redis, claim_by_claim"):
        if mode in runs:
            sections += ["", titles[mode], "", *table(runs[mode])]
    write_report("contention", result, "Contention: harvesters sharing one Redis frontier", [
        f"{args.hosts} hosts x {args.per_host} URLs, WaitIntervalHost 0; each harvester a thread driven as the "
        f"scheduler drives the frontier, {args.concurrency} fetches of 2-6 ms in flight (BestFirst: rounds of the "
        f"best {args.concurrency}). Load average {result['load_average'][0]} at the start, "
        f"{result['load_average'][1]} at the end.",
        "Round trips: every Redis command a harvester sent (rounds, claims, completions, next-due looks), a "
        "pipeline counting one per node it reached, per page. With leased rounds a claim costs nothing; URLs of a "
        "round another harvester leased first are skipped inside the take script and counted. With other "
        "harvesters at work each ranks its own share of the frontier's buckets.",
        *sections,
    ])


if __name__ == "__main__":
    main()
