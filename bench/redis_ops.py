"""The Redis frontier's operations in isolation: Redis's CPU and commands for one mark, one completion, one look.

A crawl's figures a page (``bench.scaling``) mix the operations and swing with the machine's load; this
measures each alone on a private ``redis-server`` (or ``--redis``), the bench its only client. The frontier
is ``--hosts`` hosts of the virtual web's names (``h0042.web.test``) with ``--urls`` queued URLs each, under a
job named as ``bench.scaling`` names its jobs. Then:

- mark, ``--repeat`` times: a page's ``--links`` links, three in four to the page's own host, a fifth of them
  already known;
- look, until ``--repeat`` URLs are completed: BestFirst's ``ready`` of 32 (``top_heads``, ``head_rows``, ``take_heads``),
  leasing what it hands out, half a second after the last look;
- complete: the completion of each URL the look before leased (claimed, then completed);
- page, ``--repeat`` times: a completion as a crawl sends it, with its page's links (as mark's, from the page's
  host), after looks as above (not measured);
- rescore, ``--repeat`` / 100 times: the link model's re-scoring, new priorities (random) for every queued URL of
  ``--rescore-hosts`` hosts drawn at random (at most ``--hosts``), with ``set_priorities``; its figures are also given a host.

For each it reports Redis's CPU (user + system of the ``redis-server`` process, from /proc; for looks and
completions, measured in turn, it includes two INFO readings a look), the time Redis
spent in the scripts (INFO commandstats usec of EVALSHA) and, of that, in the commands they ran, and the
commands executed inside Redis (commandstats calls, scripts' inner commands included, the script calls
themselves left out), each a call.

    python -m bench.redis_ops [--repeat 2000] [--redis URL] [--results DIR]

Writes bench/results/redis_ops.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import redis

from bench.report import RESULTS, environment, write_report
from bench.scaling import PrivateRedis
from bench.virtualweb.harness import load_average
from combine_scrapy.frontier import Marking
from combine_scrapy.frontier.redis import RedisFrontier
from combine_scrapy.frontier.redis.connection import queued_url

OPERATIONS = ("mark", "look", "complete", "page", "rescore")
SCRIPT_CALLS = {"evalsha", "eval", "evalsha_ro", "eval_ro", "script|load", "script", "info", "config|resetstat"}


def host_name(number: int) -> str:
    return f"h{number:04d}.web.test"


class Meter:
    """Redis's CPU, command time and inner commands, summed over the stretches of calls of one operation."""

    def __init__(self, server: redis.Redis) -> None:
        self.server = server
        self.pid = int(server.info("server")["process_id"])
        self.tick = os.sysconf("SC_CLK_TCK")
        self.cpu = self.usec = self.inner_usec = 0.0
        self.calls = 0
        self.commands: Counter[str] = Counter()

    def _now(self) -> tuple[float, dict]:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / self.tick, self.server.info("commandstats")

    def __enter__(self) -> Meter:
        self._cpu, self._stats = self._now()
        return self

    def __exit__(self, *exc: object) -> None:
        cpu, stats = self._now()
        self.cpu += cpu - self._cpu
        for key, value in stats.items():
            name, before = key.removeprefix("cmdstat_"), self._stats.get(key, {"calls": 0, "usec": 0})
            if name in ("evalsha", "eval"):
                self.usec += value["usec"] - before["usec"]
            elif name not in SCRIPT_CALLS:
                self.commands[name] += value["calls"] - before["calls"]
                self.inner_usec += value["usec"] - before["usec"]

    def figures(self) -> dict:
        """Each a call of the operation."""
        calls = max(self.calls, 1)
        return {"calls": self.calls, "cpu_us": round(self.cpu * 1e6 / calls, 1), "script_us": round(self.usec / calls, 1),
                "commands_us": round(self.inner_usec / calls, 1),
                "commands": round(sum(self.commands.values()) / calls, 1),
                "by_name": {name: round(count / calls, 1) for name, count in self.commands.most_common() if count}}


def page_links(rng: random.Random, host: int, hosts: int, links: int, known: list[list[str]], counter: list[int]) -> list[tuple[str, str, float]]:
    """A page's links: three in four to its own host, a fifth already known, random priorities."""
    entries = []
    for _ in range(links):
        target = host if rng.random() < 0.75 else rng.randrange(hosts)
        name = host_name(target)
        if known[target] and rng.random() < 0.2:
            url = rng.choice(known[target])
        else:
            counter[0] += 1
            url = f"http://{name}/{rng.choice(('a', 'doc', 'topics'))}/page{counter[0]}.html"
            known[target].append(url)
        entries.append((url, name, rng.random()))
    return entries


def measure(url: str, args: argparse.Namespace) -> dict:
    server = redis.Redis.from_url(url)
    job = f"scaling1-{uuid.uuid4().hex[:6]}"   # named as bench.scaling names its jobs: keys as long
    frontier = RedisFrontier.from_url(url, job, lease_ahead=True)
    frontier.delete_all()
    rng = random.Random(1)
    known: list[list[str]] = [[] for _ in range(args.hosts)]
    counter = [0]
    for host in range(args.hosts):
        name = host_name(host)
        for start in range(0, args.urls, args.links):
            seeds = [f"http://{name}/seed/{k}.html" for k in range(start, min(start + args.links, args.urls))]
            known[host].extend(seeds)
            frontier.mark([(seed, name, rng.random()) for seed in seeds])
    frontier.check_marker()   # opening a frontier first places its hosts' heads: not a look's cost
    pages = [page_links(rng, rng.randrange(args.hosts), args.hosts, args.links, known, counter) for _ in range(args.repeat)]
    marks, looks, completions = Meter(server), Meter(server), Meter(server)
    with marks:
        for links in pages:
            frontier.mark(links, distance=1)
    marks.calls = len(pages)

    # Looks and completions in turn, as a crawl makes them: each look's URLs are fetched before the next look.
    lease, now = 60.0, time.time()
    while completions.calls < args.repeat:
        with looks:
            round_ = frontier.ready(now, "BestFirst", 32, hold=lease)
        looks.calls += 1
        with completions:
            for entry in round_:
                frontier.claim(entry, now, lease)
                frontier.complete(entry.url, entry.host, now=now, url_lock_until=now, host_lock_until=now, status=200,
                                  relevant=rng.random() < 0.3)
        completions.calls += len(round_)
        now += 0.5
    with_links = Meter(server)
    while with_links.calls < args.repeat:
        round_ = frontier.ready(now, "BestFirst", 32, hold=lease)
        links = [Marking(page_links(rng, int(entry.host[1:5]), args.hosts, args.links, known, counter), distance=1)
                 for entry in round_]
        with with_links:
            for entry, found in zip(round_, links):
                frontier.claim(entry, now, lease)
                frontier.complete(entry.url, entry.host, now=now, url_lock_until=now, host_lock_until=now, status=200,
                                  relevant=rng.random() < 0.3, links=found)
        with_links.calls += len(round_)
        now += 0.5
    rescores, rescored_hosts = Meter(server), min(args.rescore_hosts, args.hosts)
    for _ in range(max(1, args.repeat // 100)):
        chosen = rng.sample(range(args.hosts), rescored_hosts)
        queued = [frontier.server.zrange(frontier.connection.prefix_of(host_name(host)) + "q:" + host_name(host), 0, -1)
                  for host in chosen]
        priorities = {url: rng.random() for host, members in zip(chosen, queued) for url in
                      (queued_url(host_name(host), member) for member in members)}
        with rescores:
            frontier.set_priorities(priorities)
        rescores.calls += 1
    results = {"mark": marks.figures(), "look": looks.figures(), "complete": completions.figures(),
               "page": with_links.figures(), "rescore": rescores.figures()}
    results["look"]["urls_a_look"] = round(completions.calls / looks.calls, 1)
    results["rescore"]["hosts_a_call"] = rescored_hosts
    results["rescore"]["commands_a_host"] = round(results["rescore"]["commands"] / rescored_hosts, 2)
    frontier.delete_all()
    frontier.close()
    server.close()
    return results


def report_lines(results: dict) -> list[str]:
    """The figures as a table, then the busiest commands of each operation."""
    lines = ["", "| operation (one call) | Redis CPU µs | script µs | of which its commands µs | commands inside Redis |",
             "| --- | --- | --- | --- | --- |"]
    for name in OPERATIONS:
        found = results[name]
        lines.append(f"| {name} | {found['cpu_us']:,.0f} | {found['script_us']:,.0f} | {found['commands_us']:,.0f} "
                     f"| {found['commands']:,.1f} |")
    rescore = results["rescore"]
    lines += ["", f"A look leased {results['look']['urls_a_look']} URLs; a re-scoring wrote the queued URLs of "
              f"{rescore['hosts_a_call']} hosts, {rescore['commands_a_host']} commands a host. Commands a call by name:", ""]
    for name in OPERATIONS:
        busiest = ", ".join(f"{command.upper()} {count:g}" for command, count in list(results[name]["by_name"].items())[:8])
        lines.append(f"- {name}: {busiest}")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis", help="a running Redis to use (default: a private redis-server on a free port)")
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--urls", type=int, default=50, help="queued URLs a host at the start")
    parser.add_argument("--links", type=int, default=30, help="links a page")
    parser.add_argument("--rescore-hosts", type=int, default=300, help="hosts whose queued URLs a re-scoring writes")
    parser.add_argument("--repeat", type=int, default=2000, help="marks, and completions, measured")
    parser.add_argument("--results", type=Path, default=RESULTS, help="directory for redis_ops.json and .md")
    args = parser.parse_args(argv)
    load = load_average()
    if args.redis:
        results = measure(args.redis, args)
    else:
        with tempfile.TemporaryDirectory() as directory, PrivateRedis(Path(directory)) as private:
            results = measure(private.url, args)
    command = (f"python -m bench.redis_ops --hosts {args.hosts} --urls {args.urls} --links {args.links} "
               f"--rescore-hosts {args.rescore_hosts} --repeat {args.repeat}" + (f" --redis {args.redis}" if args.redis else ""))
    result = {**environment(command), "load_average": [load, load_average()], **results}
    write_report("redis_ops", result, "The Redis frontier's operations in isolation", [
        "", f"{args.hosts:,} hosts of {args.urls} queued URLs, pages of {args.links} links; Redis "
        + (f"at {args.redis}" if args.redis else "a private redis-server, the bench its only client")
        + f"; load average (1 min) {result['load_average'][0][0]:.2f} before, {result['load_average'][1][0]:.2f} after.",
        *report_lines(results),
    ], args.results)


if __name__ == "__main__":
    main(sys.argv[1:])
