"""Benchmark: does a crawl lose or duplicate anything when its harvesters are SIGKILLed, or its disk fills?

    .venv/bin/python -m bench.killcampaign --backend sqlite --kills 20 [--seed 1] [--pages 1000]
    .venv/bin/python -m bench.killcampaign --backend redis --kills 20 [--redis URL] [--mysql URL]
    .venv/bin/python -m bench.killcampaign --disk-full          (root: mounts a 2 MiB tmpfs)
    .venv/bin/python -m bench.killcampaign --parent-kill        (Redis and MariaDB, as --backend redis)

A loopback web of ``--pages`` pages on 10 hosts (each page its own text, so
each is one record) is crawled; at random moments (a seeded RNG) a harvester
gets SIGKILL and a new one is started in its place. ``sqlite``: one ``scrapy
crawl`` process on the embedded frontier and records. ``redis``: ``scrapy
harvest JOB -n 3`` on a Redis frontier with the records in MariaDB/MySQL, one
of its harvesters killed at a time. ``--disk-full``: the SQLite job's data
directory on a 2 MiB tmpfs; the crawl must stop by itself with a clear message
and a non-zero exit, the records must pass ``PRAGMA integrity_check``, and
after the disk is grown the crawl is run again and must finish.
``--parent-kill``: ``scrapy harvest JOB -n 2`` itself gets SIGKILL while its
harvesters crawl; no harvester may outlive it (each must stop, as after a
SIGTERM, with its summary), and the crawl is then finished by a new one.

At the end: pages expected against pages stored, duplicates (a URL on two
records, a record beyond one a page), pages lost, and the fetch counts of the
server's request log against the harvest log (what ``scrapy status`` shows).
Writes bench/results/killcampaign.{json,md} (``--results DIR``: DIR's); each
run adds or replaces its own section (sqlite, redis, disk_full, parent_kill).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

from bench.children import ends_with_bench
from bench.report import RESULTS, environment, write_report
from combine_scrapy.operations.harvestlog import HarvestLog, log_path
from combine_scrapy.operations.sampleweb import LoopbackWeb, Page
from combine_scrapy.records.store import open_store

PROJECT = Path(__file__).resolve().parent.parent
HOSTS = [f"127.0.0.{n}" for n in range(121, 131)]
TOPIC = "100: carnivorous plants=CP\n"
SECTIONS = ("sqlite", "redis", "disk_full", "parent_kill")
#: Seconds the harvesters of a killed `scrapy harvest` are given to stop before they count as survivors.
ORPHAN_GRACE = 30


def free_port(host: str) -> int:
    import socket

    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def loopback_web(port: int, pages: int, words: int, seed: int) -> dict[str, dict[str, Page]]:
    """``pages`` pages on HOSTS: each home page links its host's pages and the other home pages; every page has
    its own random text of ``words`` words, so every page is one record."""
    rng = random.Random(seed)
    vocabulary = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(5000)]
    per_host = pages // len(HOSTS) - 1
    sites = {}
    for host in HOSTS:
        paths = [f"/p{i}.html" for i in range(per_host)]
        others = "".join(f'<a href="http://{other}:{port}/">{other}</a> ' for other in HOSTS if other != host)
        own = "".join(f'<a href="{path}">page {path}</a> ' for path in paths)
        text = " ".join(rng.choice(vocabulary) for _ in range(words))
        site = {"/": Page(f"<html><head><title>Carnivorous plants at {host}</title></head><body>{text} {own}{others}</body></html>")}
        for path in paths:
            text = " ".join(rng.choice(vocabulary) for _ in range(words))
            site[path] = Page(f"<html><head><title>Carnivorous plants {host}{path}</title></head><body>{text}</body></html>")
        sites[host] = site
    return sites


class Campaign:
    """One job on the loopback web: its files, its commands, and what it stored."""

    def __init__(self, directory: Path, web: LoopbackWeb, wait: float, settings: dict[str, str]):
        self.name = f"kill-{uuid.uuid4().hex[:8]}"
        self.topics, self.data = directory / "topics", directory / "data"
        self.logs = directory / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.web = web
        self.settings = {
            "COMBINE_TOPICS_DIR": str(self.topics), "COMBINE_DATA_DIR": str(self.data), "COMBINE_LEASE_SECONDS": "2",
            "COMBINE_IDLE_HORIZON": "30", "COMBINE_PROGRESS_INTERVAL": "0", **settings,
        }
        job = self.topics / self.name
        job.mkdir(parents=True)
        # AllowPrivateAddresses: the loopback web is on hosts the job does not name but its seed
        (job / "combine.cfg").write_text(f"WaitIntervalHost = {wait}\nsaveHTML = 0\nnearDuplicates = 0\nAllowPrivateAddresses = 1\n")
        (job / "topicdefinition.txt").write_text(TOPIC)
        (job / "seeds.txt").write_text(web.url(HOSTS[0]) + "\n")
        self.started = 0

    def command(self, *words: str) -> list[str]:
        return [sys.executable, "-m", "scrapy", *words, *(a for k, v in self.settings.items() for a in ("-s", f"{k}={v}"))]

    def start(self, *words: str) -> subprocess.Popen:
        self.started += 1
        log = (self.logs / f"{self.started:03d}-{words[0]}.log").open("w")
        return subprocess.Popen(
            self.command(*words), cwd=PROJECT, env={**os.environ, "PYTHONPATH": str(PROJECT)},
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, preexec_fn=ends_with_bench(),
        )

    def crawl(self) -> subprocess.Popen:
        return self.start("crawl", "focused", "-a", f"job={self.name}")

    def outcome(self, sites: dict) -> dict:
        """Pages expected, stored, lost and duplicated; fetches served against fetches logged."""
        expected = {self.web.url(host, path) for host, site in sites.items() for path in site}
        store = open_store(self.name, self.data, self.settings.get("MYSQL_URL"), create=False)
        try:
            url_keys = list(store.url_keys())
            records = store.count()
        finally:
            store.close()
        urls = Counter(url for url, _ in url_keys)
        stored = expected & set(urls)
        served = Counter(hit.host + hit.path for hit in self.web.hits if hit.path != "/robots.txt")
        log = HarvestLog(log_path(self.data, self.name))
        try:
            logged = log.totals(time.time(), 60).fetched
        finally:
            log.close()
        return {
            "pages_expected": len(expected),
            "pages_stored": len(stored),
            "pages_lost": len(expected - stored),
            "duplicates": sum(count - 1 for count in urls.values()) + records - len({key for _, key in url_keys}),
            "records": records,
            "fetches_served": sum(served.values()),
            "pages_fetched_twice_or_more": sum(count > 1 for count in served.values()),
            "fetches_logged": logged,
        }


def wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def kill_campaign(backend: str, kills: int, pages: int, seed: int, redis_url: str, mysql_url: str) -> dict:
    """Crawl with ``kills`` SIGKILLs at random moments, each victim replaced at once; then let the crawl finish."""
    rng = random.Random(seed)
    port = free_port(HOSTS[0])
    sites = loopback_web(port, pages, 30, seed)
    settings = {"REDIS_URL": redis_url, "MYSQL_URL": mysql_url} if backend == "redis" else {}
    with LoopbackWeb(sites, port=port) as web, tempfile.TemporaryDirectory() as directory:
        campaign = Campaign(Path(directory), web, 0.5, settings)
        started = time.monotonic()
        try:
            if backend == "redis":
                harvest = campaign.start("harvest", campaign.name, "-n", "3", "--log-dir", str(campaign.logs))
                processes = [harvest]
                def running():
                    return [p for p in [*children(harvest.pid), *(x.pid for x in processes[1:])] if _alive(p)]
                wait_for(lambda: len(running()) == 3 or harvest.poll() is not None, 60)
            else:
                processes = [campaign.crawl()]
                def running():
                    return [processes[-1].pid] if processes[-1].poll() is None else []
            done = 0
            while done < kills:
                seen = len(web.hits)
                if not wait_for(lambda: len(web.hits) > seen + 2 or not running(), 60) or not running():
                    break  # the crawl ended before every kill was made
                time.sleep(rng.uniform(0.1, 1.5))
                victims = running()
                if not victims:
                    break
                os.kill(rng.choice(victims), signal.SIGKILL)
                done += 1
                time.sleep(0.2)
                processes.append(campaign.crawl())
            for process in processes:
                process.wait(timeout=600)
            for pid in children(processes[0].pid):
                wait_for(lambda: not _alive(pid), 600)
            seconds = time.monotonic() - started
            statuses = [process.returncode for process in processes]
            result = {
                "backend": backend,
                "harvesters": "scrapy harvest -n 3, Redis frontier, MariaDB records" if backend == "redis"
                else "one scrapy crawl, SQLite frontier and records",
                "kills": done,
                "seed": seed,
                "seconds": round(seconds, 1),
                "last_exit_status": statuses[-1],
                "other_exit_statuses": dict(Counter(str(status) for status in statuses[:-1])),
                **campaign.outcome(sites),
            }
            if backend == "redis":
                from combine_scrapy.frontier.redis import RedisFrontier

                frontier = RedisFrontier.from_url(redis_url, campaign.name)
                counts = frontier.counts(time.time())
                result["frontier_still_marked"] = counts.marked
                frontier.close()
            else:
                frontier = sqlite3.connect(campaign.data / campaign.name / "frontier.sqlite")
                result["frontier_still_marked"] = frontier.execute("SELECT COUNT(*) FROM urls WHERE marked = 1").fetchone()[0]
                frontier.close()
            return result
        finally:
            for process in processes:
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGKILL)
            if backend == "redis":
                _drop_job(campaign.name, redis_url, mysql_url)


def parent_kill(pages: int, seed: int, redis_url: str, mysql_url: str) -> dict:
    """SIGKILL ``scrapy harvest -n 2`` mid-crawl: its harvesters must stop too; a new harvester then finishes."""
    port = free_port(HOSTS[0])
    sites = loopback_web(port, pages, 30, seed)
    with LoopbackWeb(sites, port=port) as web, tempfile.TemporaryDirectory() as directory:
        campaign = Campaign(Path(directory), web, 0.5, {"REDIS_URL": redis_url, "MYSQL_URL": mysql_url})
        processes: list[subprocess.Popen] = []
        harvesters: list[int] = []
        try:
            harvest = campaign.start("harvest", campaign.name, "-n", "2", "--log-dir", str(campaign.logs))
            processes.append(harvest)
            wait_for(lambda: len(children(harvest.pid)) == 2 or harvest.poll() is not None, 60)
            harvesters = children(harvest.pid)
            wait_for(lambda: len(web.hits) > 20, 60)
            os.kill(harvest.pid, signal.SIGKILL)
            killed = time.monotonic()
            harvest.wait(timeout=60)
            gone = wait_for(lambda: not any(_alive(pid) for pid in harvesters), ORPHAN_GRACE)
            seconds_to_stop = round(time.monotonic() - killed, 1)
            survivors = [pid for pid in harvesters if _alive(pid)]
            summaries = sum("== combine-scrapy: job" in out.read_text(errors="replace")
                            for out in campaign.logs.glob("harvester-*.out"))
            processes.append(campaign.crawl())
            processes[-1].wait(timeout=600)
            return {
                "harvesters": "scrapy harvest -n 2, Redis frontier, MariaDB records; the harvest process SIGKILLed",
                "harvesters_running_at_the_kill": len(harvesters),
                "survivors_after_grace": len(survivors),
                "grace_seconds": ORPHAN_GRACE,
                "seconds_until_all_stopped": seconds_to_stop if gone else None,
                "summaries_written": summaries,
                "last_exit_status": processes[-1].returncode,
                **campaign.outcome(sites),
            }
        finally:
            for pid in harvesters:
                if _alive(pid):
                    os.kill(pid, signal.SIGKILL)
            for process in processes:
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGKILL)
            _drop_job(campaign.name, redis_url, mysql_url)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _drop_job(job: str, redis_url: str, mysql_url: str) -> None:
    """Remove this campaign's Redis keys and MySQL tables (only those: the servers are shared)."""
    import MySQLdb

    from combine_scrapy.frontier.redis import RedisFrontier
    from combine_scrapy.records.store.mysql import connection_arguments, table_prefix

    frontier = RedisFrontier.from_url(redis_url, job)
    frontier.delete_all()
    frontier.close()
    db = MySQLdb.connect(**connection_arguments(mysql_url))
    cursor = db.cursor()
    prefix = table_prefix(job)
    cursor.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE %s",
        (prefix.replace("_", "\\_") + "%",),
    )
    tables = [row[0] for row in cursor.fetchall()]
    if tables:
        cursor.execute("SET FOREIGN_KEY_CHECKS = 0")
        cursor.execute("DROP TABLE " + ", ".join(f"`{table}`" for table in tables))
    db.close()


def disk_full(pages: int, seed: int) -> dict:
    """Crawl onto a 2 MiB disk: the crawl must stop by itself, loudly, records intact; then grow the disk and resume."""
    port = free_port(HOSTS[0])
    sites = loopback_web(port, pages, 1500, seed)  # about 10 KB of text a page: the disk fills after ~150 pages
    with LoopbackWeb(sites, port=port) as web, tempfile.TemporaryDirectory() as directory:
        mount_point = Path(directory) / "disk"
        mount_point.mkdir()
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount_point)], capture_output=True, text=True)
        if mounted.returncode != 0:
            raise SystemExit(f"error: --disk-full mounts a 2 MiB tmpfs and needs root: {mounted.stderr.strip()}")
        try:
            campaign = Campaign(Path(directory), web, 0.01, {"COMBINE_DATA_DIR": str(mount_point)})
            campaign.data = mount_point
            started = time.monotonic()
            full = campaign.crawl()
            full.wait(timeout=600)
            stopped_after = time.monotonic() - started
            log = next(campaign.logs.glob("001-*.log")).read_text()
            message = next((line.split("CRITICAL: ", 1)[1] for line in log.splitlines() if "CRITICAL: stopping the crawl" in line), None)
            records = sqlite3.connect(mount_point / campaign.name / "records.sqlite")
            integrity = records.execute("PRAGMA integrity_check").fetchone()[0]
            stored_when_full = records.execute("SELECT COUNT(*) FROM records").fetchone()[0]
            records.close()
            subprocess.run(["mount", "-o", "remount,size=256m", str(mount_point)], check=True)
            resumed = campaign.crawl()
            resumed.wait(timeout=600)
            return {
                "backend": "sqlite on a 2 MiB tmpfs",
                "first_exit_status": full.returncode,
                "seconds_to_stop": round(stopped_after, 1),
                "message": message,
                "integrity_check": integrity,
                "records_when_full": stored_when_full,
                "resumed_exit_status": resumed.returncode,
                "seconds": round(time.monotonic() - started, 1),
                **campaign.outcome(sites),
            }
        finally:
            subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _markdown(sections: dict) -> list[str]:
    lines = []
    for name in SECTIONS:
        run = sections.get(name)
        if not run:
            continue
        lines += ["", f"## {name}", "", f"`{run['command']}`, {run['date']}.", ""]
        if name == "parent_kill":
            lines += [
                f"{run['harvesters']}: {run['harvesters_running_at_the_kill']} harvesters running at the kill, "
                f"**{run['survivors_after_grace']} still running {run['grace_seconds']} s later**; all stopped after "
                f"{run['seconds_until_all_stopped']} s, {run['summaries_written']} of them with their summary. "
                f"A new harvester then finished the crawl (exit status {run['last_exit_status']}).",
                "",
            ]
        elif name == "disk_full":
            lines += [
                f"The crawl stopped by itself after {run['seconds_to_stop']} s with exit status "
                f"{run['first_exit_status']} and the line `{run['message']}`; the records file passed "
                f"`PRAGMA integrity_check` ({run['integrity_check']}) with {run['records_when_full']} records. "
                f"After the disk was grown the crawl ran again and ended with status {run['resumed_exit_status']}.",
                "",
            ]
        else:
            lines += [f"{run['harvesters']}: {run['kills']} SIGKILLs at random moments (seed {run['seed']}), each "
                      f"victim replaced at once; {run['seconds']} s in all, the last harvester's exit status "
                      f"{run['last_exit_status']}, {run['frontier_still_marked']} URLs still marked at the end.", ""]
        lines += [
            "| pages expected | stored | lost | duplicates | records | fetches served | pages fetched twice or more | fetches in the harvest log |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
            f"| {run['pages_expected']} | {run['pages_stored']} | {run['pages_lost']} | {run['duplicates']} | "
            f"{run['records']} | {run['fetches_served']} | {run['pages_fetched_twice_or_more']} | {run['fetches_logged']} |",
        ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("sqlite", "redis"), default="sqlite")
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--pages", type=int, default=1000, help="pages in the loopback web (default 1000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--mysql", default="mysql://root@127.0.0.1:3306/test")
    parser.add_argument("--disk-full", action="store_true", help="the disk-full run instead of the kills (needs root)")
    parser.add_argument("--parent-kill", action="store_true", help="SIGKILL scrapy harvest -n 2 instead of harvesters")
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="directory of killcampaign.{json,md} (a run adds or replaces its section there)")
    args = parser.parse_args()
    if args.disk_full:
        name, run = "disk_full", disk_full(min(args.pages, 500), args.seed)
    elif args.parent_kill:
        name, run = "parent_kill", parent_kill(min(args.pages, 300), args.seed, args.redis, args.mysql)
    else:
        name, run = args.backend, kill_campaign(args.backend, args.kills, args.pages, args.seed, args.redis, args.mysql)
    run = {**environment(("python -m bench.killcampaign " + " ".join(sys.argv[1:])).strip()), **run}
    previous = args.results / "killcampaign.json"
    sections = json.loads(previous.read_text()).get("sections", {}) if previous.exists() else {}
    sections[name] = run
    result = {**run, "sections": sections}
    write_report("killcampaign", result, "Kill campaign: SIGKILLed harvesters and a full disk", [
        "",
        "A loopback web of 10 hosts (each page its own text: one record a page) crawled while harvesters are "
        "killed (SIGKILL) at random moments and started again, or while the data directory's disk fills. "
        "Duplicates: a URL on two records, or a record beyond one a page. Fetches served: the web server's "
        "page requests (robots.txt left out); fetches in the harvest log: what `scrapy status` counts. A fetch "
        "in flight when its harvester died is served but never completed: it is fetched again, so the log can "
        "only be short of the server by the fetches in flight at the kills.",
        *_markdown(sections),
    ], args.results)


if __name__ == "__main__":
    main()
