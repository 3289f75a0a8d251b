"""Benchmark: harvesters sharing one Redis frontier: pages/min, and what a page costs harvesters, Redis and server.

    .venv/bin/python -m bench.scaling [--harvesters 1 2 4] [--seconds 45] [--warmup 8] [--repeats 1] [--wait 0]
                                      [--latency 0.05] [--seed 1 --hosts 1000 --pages 100000] [--buckets N] [--redis URL]
                                      [--cluster-nodes 3 6] [--results bench/results] [--full]
                                      [--profile 5] [--compare-sqlite]
    .venv/bin/python -m bench.scaling --report-only bench/results/scaling.json    # summarise stored runs again

Each run starts ``scrapy harvest JOB -n N`` (N ``scrapy crawl focused``
processes, one Redis frontier) on the virtual web for ``--seconds``
(CLOSESPIDER_TIMEOUT). Its steady window begins ``--warmup`` seconds after
the first request and after every harvester has opened its spider (start-up
left out), and ends a tenth of ``--seconds`` before the first harvester's
timeout. At both ends the bench samples, all at once: each harvester's CPU
(user + system, /proc/<pid>/stat), Redis's CPU (``INFO`` used_cpu_user +
used_cpu_sys), the commands Redis ran (total_commands_processed: commands
that Lua scripts run inside Redis count too) and the script calls among them
(``INFO commandstats``: EVAL, EVALSHA), the round trips the harvesters made
(counted in each harvester by bench/roundtrips.py: one per command or
pipeline written to Redis), and the server's CPU (``control.test/stats``);
then each harvester's peak RSS (VmHWM). Pages are the server's logged page
requests that arrived in the window. The round trips are also counted by
caller (the frontier method and the function that sent them), and the
commands Redis ran by name.

Where the commands inside Redis go: for ``--profile`` seconds after the
window (the crawl runs on for them) the bench reads Redis's MONITOR, which
lists every command a client sent and, after a script call, each command the
script ran; each script call is named by its SHA1 (the scripts of
``frontier/lua/``), so the report gives, per page, the calls of each script
and the commands run inside it, by name. MONITOR costs Redis CPU, which is
why it watches after the window and not in it.

``--compare-sqlite`` first runs one harvester on the SQLite frontier
(``scrapy crawl focused``, the same job, web and window) in each repeat, so
one command gives a harvester's CPU per page on both frontiers. Politeness over the whole run, from the
server's log: the most requests to one host in flight at once (must be 1;
the server holds each answer ``--latency`` seconds so that two would show),
and with ``--wait`` > 0 the most requests to one host in any WaitIntervalHost
window (must be 1).

Redis is a private ``redis-server`` the bench starts on a free port, so its
CPU and command counts are this crawl's alone; ``--redis URL`` uses a
running server instead (its figures then include every other client's).
Each harvester count runs ``--repeats`` times (interleaved: 1 2 4 1 2 4);
the report gives the mean and the spread (min-max, standard deviation), a
projection of how many harvesters one Redis core and an N-node cluster carry
from the per-page costs, and Combine's speed-ups beside ours. Writes
``<results>/scaling.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import redis

from bench.children import ends_with_bench
from bench.politeness import most_in_window
from bench.report import RESULTS, environment, write_report
from bench.roundtrips import callers_between, count_at, read_callers, read_samples
from bench.virtualweb.harness import PROJECT, ServedWeb, command_line, load_average, page_fetches
from bench.virtualweb.job import write_job
from bench.virtualweb.server import CONTROL_HOST
from bench.virtualweb.web import VirtualWeb
from combine_scrapy.frontier.redis import RedisFrontier
from combine_scrapy.frontier.redis.connection import RedisConnection
from combine_scrapy.spiders.focused import FocusedSpider

#: Combine's speed-up for 1, 2, 5, 10, 15 and 20 harvesters (the Combine study, 3.3.2, Table 3.1).
COMBINE_SPEEDUP = {1: 1.0, 2: 2.0, 5: 4.8, 10: 8.2, 15: 9.8, 20: 11.0}
#: What one Combine harvester fetched, URLs a minute (slowest, fastest).
COMBINE_URLS_PER_MINUTE = (50, 200)
#: The window ends this share of ``--seconds`` before the first harvester's CLOSESPIDER_TIMEOUT.
END_MARGIN = 0.1
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
#: Commands named in a run's breakdown of what Redis ran (the most called).
BUSIEST_COMMANDS = 8
#: The figures of a run given as mean and spread over its repeats.
FIGURES = (
    "pages_per_minute", "harvester_cpu_ms_per_page", "harvester_cpu_share", "redis_cpu_ms_per_page",
    "redis_cpu_share", "redis_round_trips_per_page", "redis_commands_per_page", "redis_script_calls_per_page",
    "server_cpu_ms_per_page", "server_cpu_share", "peak_rss_mb", "frontier_hosts_at_window_end",
)


# ---- sampling ------------------------------------------------------------------


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime: fields 14 and 15


def peak_rss(pid: int) -> int:
    """A process's peak resident set so far (VmHWM), bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


def redis_counters(server: redis.Redis) -> dict:
    """Redis's CPU seconds, commands run (Lua's inner ones included), script calls and calls by command name,
    from one ``INFO all``."""
    info = server.info("all")
    return {
        "calls": {name.removeprefix("cmdstat_"): stat["calls"] for name, stat in info.items()
                  if name.startswith("cmdstat_")},
        "usec": {name.removeprefix("cmdstat_"): stat["usec"] for name, stat in info.items()
                 if name.startswith("cmdstat_")},
        "cpu": info["used_cpu_user"] + info["used_cpu_sys"],
        "commands": info["total_commands_processed"],
        "script_calls": sum(stat["calls"] for name, stat in info.items()
                            if name in ("cmdstat_eval", "cmdstat_evalsha", "cmdstat_eval_ro", "cmdstat_evalsha_ro")),
    }


def sample(pids: list[int], server: redis.Redis | None, served: ServedWeb) -> dict:
    """Everything the window's figures are deltas of, read as close together as possible (no Redis figures
    for a harvester on the SQLite frontier)."""
    moment = time.monotonic()
    return {
        "t": moment,
        "harvesters": [process_cpu(pid) for pid in pids],
        "redis": redis_counters(server) if server is not None else None,
        "server_cpu": served.stats()["cpu_seconds"],
    }


def script_names(client: redis.Redis) -> dict[str, str]:
    """The frontier's Lua scripts by the SHA1 a script call names them by."""
    connection = RedisConnection(client, "names")
    return {script.sha: name for name, script in connection.scripts.items()} | {
        connection.marker._open_script.sha: "open"}


def monitor_profile(redis_url: str, seconds: float) -> dict:
    """What Redis ran in ``seconds`` from now, from MONITOR: the calls of each script and the commands each ran
    inside it (a script's commands follow its call in MONITOR's stream), and the commands sent directly;
    ``t`` is when the watch began (time.monotonic).

    The lines are read until one stamped (by Redis) after the watch's end, so a reader slower than Redis
    still counts every command of the watch. Meanwhile Redis's SLOWLOG, set to log every command, gives the
    time each top-level command took (a script's with the commands it ran), summed by script. In Redis 7.0 MONITOR lists a script call before the commands
    it ran; a script call reloaded after a NOSCRIPT (SCRIPT LOAD, then EVALSHA again) is counted as two calls.
    """
    scripts: dict[str, dict] = {}
    direct: Counter[str] = Counter()
    client = redis.Redis.from_url(redis_url, socket_timeout=5)
    names = script_names(client)
    current: dict | None = None
    slowlog = {name: client.config_get(name)[name] for name in ("slowlog-log-slower-than", "slowlog-max-len")}
    client.config_set("slowlog-max-len", 1_000_000)
    client.config_set("slowlog-log-slower-than", 0)
    client.slowlog_reset()
    started, wall_end = time.monotonic(), time.time() + seconds
    try:
        with client.monitor() as monitor:
            while time.monotonic() - started < seconds + 120:
                try:
                    line = monitor.next_command()
                except redis.TimeoutError:  # nothing for seconds: the crawl has stopped
                    break
                if line["time"] > wall_end:
                    break
                words = line["command"].split(" ", 2)
                name = words[0].upper()
                if line["client_type"] == "lua":
                    if current is not None:
                        current["inner"][name] += 1
                    continue
                if name in ("EVALSHA", "EVALSHA_RO") and len(words) > 1:
                    script = names.get(words[1], words[1][:8])
                    current = scripts.setdefault(script, {"calls": 0, "inner": Counter()})
                    current["calls"] += 1
                else:
                    current = None
                    direct[name] += 1
        logged = client.slowlog_get(1_000_000)
    finally:
        for name, value in slowlog.items():
            client.config_set(name, value)
        client.close()
    us: Counter[str] = Counter()
    for entry in logged:
        if wall_end - seconds <= entry["start_time"] <= wall_end:
            words = entry["command"].split(b" ", 2)
            name = words[0].decode().upper()
            if name in ("EVALSHA", "EVALSHA_RO") and len(words) > 1:
                name = names.get(words[1].decode(), words[1].decode()[:8])
            us[name] += entry["duration"]
    return {"t": started, "seconds": seconds, "scripts": scripts, "direct": direct, "us": us}


class PrivateRedis:
    """A ``redis-server`` of the bench's own on a free loopback port, no persistence; stopped on exit."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.url = ""
        self._process: subprocess.Popen | None = None

    def __enter__(self) -> PrivateRedis:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed: install it or give --redis URL")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self._process = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.directory)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=ends_with_bench(),
        )
        self.url = f"redis://127.0.0.1:{port}/0"
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start on port {port}") from None
                time.sleep(0.05)
        client.close()
        return self

    def __exit__(self, *exc) -> None:
        self._process.terminate()
        self._process.wait(timeout=30)


# ---- one run -------------------------------------------------------------------


def wait_until(condition, timeout: float, what: str, process: subprocess.Popen):
    """Poll ``condition`` every 0.1 s until it gives something true; fail if the harvest ended or it took too long."""
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        if process.poll() is not None:
            raise RuntimeError(f"scrapy harvest ended (exit {process.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} took longer than {timeout:g} s")
        time.sleep(0.1)
    return found


def harvester_pids(output: Path, harvesters: int) -> list[int] | None:
    """The pids ``scrapy harvest`` printed ("harvester i started, pid P"), once all are there."""
    pids = [int(line.split(", pid ")[1].split(",")[0]) for line in output.read_text().splitlines()
            if " started, pid " in line]
    return pids if len(pids) == harvesters else None


def harvest_command(name: str, harvesters: int, seconds: float, topics: Path, data: Path, redis_url: str | None,
                    round_trips: Path, buckets: int | None = None) -> list[str]:
    """``scrapy harvest`` with the round-trip counter added to the focused crawl's extensions (and
    COMBINE_REDIS_BUCKETS set to ``buckets``, if given); without a ``redis_url``, one ``scrapy crawl focused``
    on the SQLite frontier with the same settings."""
    extensions = {**FocusedSpider.components["EXTENSIONS"], "bench.roundtrips.RedisRoundTrips": 900}
    crawler = (["harvest", name, "-n", str(harvesters), "-s", f"REDIS_URL={redis_url}",
                *(["-s", f"COMBINE_REDIS_BUCKETS={buckets}"] if buckets else [])] if redis_url
               else ["crawl", "focused", "-a", f"job={name}"])
    return [
        sys.executable, "-m", "scrapy", *crawler,
        "-s", f"COMBINE_TOPICS_DIR={topics}", "-s", f"COMBINE_DATA_DIR={data}",
        "-s", f"CLOSESPIDER_TIMEOUT={seconds:g}", "-s", "COMBINE_PROGRESS_INTERVAL=0", "-s", "LOG_LEVEL=WARNING",
        "-s", f"EXTENSIONS={json.dumps(extensions)}", "-s", f"SCALING_ROUND_TRIPS_DIR={round_trips}",
    ]


def run(served: ServedWeb, redis_url: str | None, harvesters: int, args: argparse.Namespace, directory: Path) -> dict:
    """One crawl by ``harvesters`` processes, measured over its steady window; without a ``redis_url``, one
    harvester on the SQLite frontier (no Redis figures)."""
    name = f"scaling{harvesters}-{uuid.uuid4().hex[:6]}" if redis_url else f"scalingsqlite-{uuid.uuid4().hex[:6]}"
    profile = args.profile if redis_url else 0.0
    topics, data, round_trips = directory / "topics", directory / "data", directory / name / "roundtrips"
    write_job(served.web, topics / name, served.port, args.wait,
              variables={"CrawlStrategy": args.strategy} if args.strategy else None)
    output = directory / name / "harvest.out"
    output.parent.mkdir(parents=True, exist_ok=True)
    command = harvest_command(name, harvesters, args.seconds + profile, topics, data, redis_url, round_trips,
                              args.buckets)
    env = {**os.environ, "http_proxy": served.proxy, "no_proxy": "", "PYTHONPATH": str(PROJECT)}
    server = redis.Redis.from_url(redis_url) if redis_url else None
    since = served.stats()["requests"]
    load_before = load_average()
    started = time.monotonic()
    with output.open("w") as out:
        process = subprocess.Popen(command, cwd=PROJECT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   preexec_fn=ends_with_bench())
    try:
        pids = (wait_until(lambda: harvester_pids(output, harvesters), 60, "the harvesters started", process)
                if redis_url else [process.pid])
        first = wait_until(lambda: served.log(since)[:1], 120, "the first request", process)[0]["t"]
        wait_until(lambda: round_trips.is_dir() and len(list(round_trips.glob("*.txt"))) == harvesters, 120,
                   "every harvester opened its spider", process)
        window_start = max(first, time.monotonic()) + args.warmup
        window_end = first + args.seconds * (1 - END_MARGIN)
        if window_end - window_start < 1:
            raise RuntimeError(
                f"no steady window: the harvesters took {window_start - args.warmup - started:.0f} s to start; "
                f"give more --seconds (now {args.seconds:g}) or less --warmup (now {args.warmup:g})")
        time.sleep(max(0.0, window_start - time.monotonic()))
        before = sample(pids, server, served)
        time.sleep(max(0.0, window_end - time.monotonic()))
        after = sample(pids, server, served)
        rss = [peak_rss(pid) for pid in pids]
        frontier_hosts = (sum(server.zcard(key) for key in server.scan_iter(match=f"combine:{{{name}:b*}}:hostq"))
                          if server is not None else None)
        profiled = None
        if profile > 0 and redis_url:
            profile_since = served.stats()["requests"]
            profiled = monitor_profile(redis_url, profile)
            profiled["pages"] = sum(
                1 for entry in page_fetches([entry for entry in served.log(profile_since) if entry["host"] != CONTROL_HOST])
                if profiled["t"] <= entry["t"] < profiled["t"] + profile)
        process.wait(timeout=args.seconds + profile + 180)
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=60)
        if server is not None:
            RedisFrontier(server, name).delete_all()  # this job's keys only
            server.close()
    wall = time.monotonic() - started
    if process.returncode != 0:
        raise RuntimeError(f"harvest -n {harvesters} failed (exit {process.returncode}):\n{output.read_text()[-3000:]}")
    entries = [entry for entry in served.log(since) if entry["host"] != CONTROL_HOST]
    paths = sorted(round_trips.glob("*.txt"))
    trips = [read_samples(path) for path in paths]
    callers = sum((callers_between(read_callers(path), before["t"], after["t"]) for path in paths), Counter())
    measured = measured_run(harvesters, entries, before, after, rss, trips, args.wait)
    pages = measured["window_pages"]
    return measured | {
        "frontier": "redis" if redis_url else "sqlite",
        "redis_round_trips_per_page_by_caller": {
            caller: round(count / pages, 3) for caller, count in callers.most_common()} if pages and redis_url else {},
        "redis_profile": profile_per_page(profiled) if profiled else None,
        "frontier_hosts_at_window_end": frontier_hosts,
        "wall_seconds": round(wall, 1),
        "load_average_before": load_before,
        "load_average_after": load_average(),
    }


def measured_run(harvesters: int, entries: list[dict], before: dict, after: dict, rss: list[int],
                 trips: list[list[tuple[float, int]]], wait: float) -> dict:
    """A run's figures: the deltas between the window's two samples, per page and as shares of a CPU."""
    seconds = after["t"] - before["t"]
    pages = page_fetches(entries)
    counted = sum(1 for entry in pages if before["t"] <= entry["t"] < after["t"])
    per_page = 1000 / counted if counted else float("nan")  # ms per page from seconds
    harvester_cpu = [b - a for a, b in zip(before["harvesters"], after["harvesters"])]
    server_cpu = after["server_cpu"] - before["server_cpu"]
    round_trips = sum(count_at(samples, after["t"]) - count_at(samples, before["t"]) for samples in trips)
    if before["redis"] is None:  # a harvester on the SQLite frontier
        before = {**before, "redis": {"cpu": 0.0, "commands": 1, "script_calls": 0, "calls": {}}}
        after = {**after, "redis": before["redis"]}
    redis_cpu = after["redis"]["cpu"] - before["redis"]["cpu"]
    commands = after["redis"]["commands"] - before["redis"]["commands"] - 1  # less the bench's own INFO
    script_calls = after["redis"]["script_calls"] - before["redis"]["script_calls"]
    calls = {name: count - before["redis"]["calls"].get(name, 0) for name, count in after["redis"]["calls"].items()}
    busiest = sorted((name for name in calls if calls[name] > 0), key=calls.get, reverse=True)[:BUSIEST_COMMANDS]
    usec = {name: count - before["redis"].get("usec", {}).get(name, 0)
            for name, count in after["redis"].get("usec", {}).items()}
    return {
        "harvesters": harvesters,
        "pages": len(pages),
        "window_seconds": round(seconds, 1),
        "window_pages": counted,
        "pages_per_minute": round(counted * 60 / seconds),
        "harvester_cpu_seconds": [round(cpu, 2) for cpu in harvester_cpu],
        "harvester_cpu_ms_per_page": round(sum(harvester_cpu) * per_page, 2),
        "harvester_cpu_share": round(sum(harvester_cpu) / seconds / harvesters, 3),
        "redis_cpu_ms_per_page": round(redis_cpu * per_page, 4),
        "redis_cpu_share": round(redis_cpu / seconds, 3),
        "redis_round_trips_per_page": round(round_trips / counted, 2) if counted else None,
        "redis_commands_per_page": round(commands / counted, 2) if counted else None,
        "redis_script_calls_per_page": round(script_calls / counted, 2) if counted else None,
        "redis_commands_per_page_by_name": {name: round(calls[name] / counted, 2) for name in busiest} if counted else {},
        # the time Redis spent running commands a page (a script's includes the commands it ran); the rest
        # of its CPU is reading, parsing and answering requests, and its event loop
        "redis_command_us_per_page": {name: round(usec[name] / counted, 1)
                                      for name in sorted(usec, key=usec.get, reverse=True)[:BUSIEST_COMMANDS]
                                      if usec[name] > 0} if counted else {},
        "redis_cpu_us_per_round_trip": round(redis_cpu * 1e6 / round_trips, 1) if round_trips else None,
        "server_cpu_ms_per_page": round(server_cpu * per_page, 2),
        "server_cpu_share": round(server_cpu / seconds, 3),
        "peak_rss_mb": round(max(rss) / 2**20),
        "peak_rss_mb_each": [round(value / 2**20) for value in rss],
        "most_requests_to_one_host_in_flight": max((entry["in_flight"] for entry in entries), default=0),
        "most_requests_to_one_host_per_wait_interval": most_requests_in_a_window(entries, wait),
    }


def profile_per_page(profiled: dict) -> dict:
    """A MONITOR profile per page of the pages served while it watched: each script's calls and the commands
    run inside it (by name), the commands sent directly, busiest first."""
    pages = profiled["pages"]
    if not pages:
        return {"seconds": profiled["seconds"], "pages": 0}

    def per_page(counts: Counter[str]) -> dict[str, float]:
        return {name: round(count / pages, 2) for name, count in counts.most_common()}

    scripts = sorted(profiled["scripts"].items(), key=lambda item: -sum(item[1]["inner"].values()) - item[1]["calls"])
    return {
        "seconds": profiled["seconds"],
        "pages": pages,
        "commands_per_page": round((sum(profiled["direct"].values()) + sum(
            script["calls"] + sum(script["inner"].values()) for _, script in scripts)) / pages, 2),
        "scripts": {
            name: {"calls_per_page": round(script["calls"] / pages, 2),
                   "inner_per_page": round(sum(script["inner"].values()) / pages, 2),
                   "inner_per_call": round(sum(script["inner"].values()) / script["calls"], 1),
                   "inner": per_page(script["inner"])}
            for name, script in scripts
        },
        "direct": per_page(profiled["direct"]),
        "us_per_page": per_page(profiled.get("us", Counter())),
    }


def most_requests_in_a_window(entries: list[dict], window: float) -> int | None:
    """The largest number of requests to one host within any ``window`` seconds (None without a window)."""
    if window <= 0:
        return None
    by_host: dict[str, list[float]] = {}
    for entry in entries:
        by_host.setdefault(entry["host"], []).append(entry["t"])
    return max((most_in_window(sorted(times), window) for times in by_host.values()), default=0)


# ---- summary and projection ----------------------------------------------------------


def spread(values: list[float]) -> dict:
    """Mean, min, max and standard deviation (0 for one value) of a figure over repeats."""
    return {
        "mean": round(statistics.fmean(values), 4),
        "min": min(values),
        "max": max(values),
        "stdev": round(statistics.stdev(values), 4) if len(values) > 1 else 0.0,
    }


def summarise(runs: list[dict]) -> list[dict]:
    """Per harvester count (in order of first appearance): each figure's spread over its repeats, the worst
    politeness, and the speed-up of the mean rate against the smallest count's rate per harvester."""
    runs = [run for run in runs if run.get("frontier", "redis") == "redis"]
    if not runs:
        return []
    counts = list(dict.fromkeys(run["harvesters"] for run in runs))
    summary = []
    for count in counts:
        repeats = [run for run in runs if run["harvesters"] == count]
        windows = [run["most_requests_to_one_host_per_wait_interval"] for run in repeats]
        summary.append({
            "harvesters": count,
            "repeats": len(repeats),
            **{figure: spread([run[figure] for run in repeats if run[figure] is not None]) for figure in FIGURES},
            "most_requests_to_one_host_in_flight": max(run["most_requests_to_one_host_in_flight"] for run in repeats),
            "most_requests_to_one_host_per_wait_interval": None if None in windows else max(windows),
        })
    for entry in summary:
        repeats = [run for run in runs if run["harvesters"] == entry["harvesters"]]
        entry["redis_round_trips_per_page_by_caller"] = mean_of_maps(
            [run.get("redis_round_trips_per_page_by_caller") or {} for run in repeats])
        entry["redis_commands_per_page_by_name"] = mean_of_maps(
            [run.get("redis_commands_per_page_by_name") or {} for run in repeats])
        entry["redis_command_us_per_page"] = mean_of_maps(
            [run.get("redis_command_us_per_page") or {} for run in repeats])
        entry["redis_profile"] = next((run["redis_profile"] for run in repeats if run.get("redis_profile")), None)
    base = min(summary, key=lambda entry: entry["harvesters"])
    per_harvester = base["pages_per_minute"]["mean"] / base["harvesters"]
    for entry in summary:
        entry["speedup"] = round(entry["pages_per_minute"]["mean"] / per_harvester, 2) if per_harvester else None
    return summary


def mean_of_maps(maps: list[dict[str, float]]) -> dict[str, float]:
    """Per key, the mean over ``maps`` (a key missing from one counts 0), largest first."""
    keys = {key for found in maps for key in found}
    means = {key: round(sum(found.get(key, 0) for found in maps) / len(maps), 3) for key in keys} if maps else {}
    return dict(sorted(means.items(), key=lambda item: -item[1]))


def sqlite_summary(runs: list[dict]) -> dict | None:
    """The SQLite runs (``--compare-sqlite``): a harvester's pages/min and CPU per page, mean and spread."""
    sqlite = [run for run in runs if run.get("frontier") == "sqlite"]
    if not sqlite:
        return None
    return {figure: spread([run[figure] for run in sqlite]) for figure in ("pages_per_minute", "harvester_cpu_ms_per_page")}


def project(summary: list[dict], nodes: list[int]) -> dict:
    """How many harvesters one Redis core, and a cluster of ``nodes`` Redis nodes, carry at the measured costs.

    Redis runs commands on one thread, so a node's capacity is one core: pages per second = 1 / (Redis CPU
    per page). The costs are those of the largest harvester count measured (its contention included). A
    harvester's rate is the smallest count's pages/min per harvester as measured, or, with a core of its own
    and a web that keeps it busy, 1 / (its CPU per page). A cluster of N nodes carries N times one node when
    the frontier's keys are spread evenly over the nodes by host.
    """
    largest = max(summary, key=lambda entry: entry["harvesters"])
    smallest = min(summary, key=lambda entry: entry["harvesters"])
    redis_seconds = largest["redis_cpu_ms_per_page"]["mean"] / 1000
    pages_per_second = 1 / redis_seconds if redis_seconds > 0 else float("inf")
    harvester_rate = smallest["pages_per_minute"]["mean"] / smallest["harvesters"] / 60
    cpu_bound_rate = 1000 / smallest["harvester_cpu_ms_per_page"]["mean"]
    round_trips = largest["redis_round_trips_per_page"]["mean"]
    per_node = {
        "measured": pages_per_second / harvester_rate,
        "cpu_bound": pages_per_second / cpu_bound_rate,
        **{f"combine_{rate}_per_minute": pages_per_second / (rate / 60) for rate in COMBINE_URLS_PER_MINUTE},
    }

    def speedup(harvesters: int, capacity: float) -> float:
        return round(min(harvesters, capacity), 1)

    return {
        "costs_from_harvesters": largest["harvesters"],
        "redis_cpu_ms_per_page": largest["redis_cpu_ms_per_page"]["mean"],
        "redis_round_trips_per_page": round_trips,
        "pages_per_second_per_redis_core": round(pages_per_second),
        "round_trips_per_second_per_redis_core": round(pages_per_second * round_trips),
        "harvester_pages_per_minute": round(harvester_rate * 60),
        "harvester_cpu_bound_pages_per_minute": round(cpu_bound_rate * 60),
        "harvesters_per_redis_node": {name: round(value) for name, value in per_node.items()},
        "cluster": {
            nodes_count: {name: round(value * nodes_count) for name, value in per_node.items()} for nodes_count in nodes
        },
        "speedup": [
            {
                "harvesters": harvesters,
                "combine": combine,
                "one_node": speedup(harvesters, per_node["measured"]),
                **{f"cluster_{n}": speedup(harvesters, per_node["measured"] * n) for n in nodes},
            }
            for harvesters, combine in COMBINE_SPEEDUP.items()
        ],
    }


# ---- report ---------------------------------------------------------------------------


def figure(entry: dict, name: str, digits: int = 1) -> str:
    """``mean (min-max)`` of a summarised figure."""
    value = entry[name]
    if value["min"] == value["max"]:
        return f"{value['mean']:,.{digits}f}"
    return f"{value['mean']:,.{digits}f} ({value['min']:,.{digits}f}-{value['max']:,.{digits}f})"


def report(result: dict) -> list[str]:
    summary, projection, cpus = result["summary"], result["projection"], result["cpus"]
    wait = result["wait_interval_host"]
    loads = [run["load_average_before"][0] for run in result["runs"]] + [run["load_average_after"][0]
                                                                         for run in result["runs"]]
    lines = [
        f"The virtual web (seed {result['seed']}, {result['hosts']:,} hosts, {result['pages_in_web']:,} pages) on "
        f"loopback, every answer held {result['latency']:g} s; WaitIntervalHost {wait:g} s, CrawlStrategy "
        f"{result['crawl_strategy']}; each run "
        f"`scrapy harvest JOB -n N` for {result['seconds_per_run']:g} s (CLOSESPIDER_TIMEOUT), "
        f"{result['repeats']} repeat(s) per N, interleaved. Figures over each run's steady window: from "
        f"{result['warmup']:g} s after every harvester opened its spider to {END_MARGIN:.0%} of the run before the "
        f"end; mean (min-max) over the repeats. Redis: {result['redis']}. The server, Redis and the harvesters "
        f"share the machine's {cpus} CPUs with other work: load average (1 min) {min(loads):.2f}-{max(loads):.2f} "
        f"at the runs' starts and ends.",
        "",
        "| harvesters | pages/min | speed-up | Combine's speed-up | harvester CPU ms/page | CPU a harvester used "
        "| Redis CPU ms/page | Redis round trips/page | Redis commands/page (Lua's included) | script calls/page "
        "| server CPU ms/page | peak RSS MB | most requests to one host in flight |"
        + (" most requests to one host per WaitIntervalHost |" if wait > 0 else ""),
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |" + (" --- |" if wait > 0 else ""),
    ]
    for entry in summary:
        lines.append(
            f"| {entry['harvesters']} | {figure(entry, 'pages_per_minute', 0)} | {entry['speedup']} | "
            f"{COMBINE_SPEEDUP.get(entry['harvesters'], '–')} | {figure(entry, 'harvester_cpu_ms_per_page')} | "
            f"{figure(entry, 'harvester_cpu_share', 2)} | {figure(entry, 'redis_cpu_ms_per_page', 3)} | "
            f"{figure(entry, 'redis_round_trips_per_page', 2)} | {figure(entry, 'redis_commands_per_page', 1)} | "
            f"{figure(entry, 'redis_script_calls_per_page', 2)} | {figure(entry, 'server_cpu_ms_per_page', 2)} | "
            f"{figure(entry, 'peak_rss_mb', 0)} | {entry['most_requests_to_one_host_in_flight']} |"
            + (f" {entry['most_requests_to_one_host_per_wait_interval']} |" if wait > 0 else "")
        )
    polite_flight = all(entry["most_requests_to_one_host_in_flight"] <= 1 for entry in summary)
    polite_window = wait <= 0 or all(entry["most_requests_to_one_host_per_wait_interval"] <= 1 for entry in summary)
    if min(loads) > cpus:
        lines += [
            "",
            f"The machine was oversubscribed in every run (load average above its {cpus} CPUs): a process got "
            f"about {cpus / max(loads):.0%}-{cpus / min(loads):.0%} of a CPU, so pages/min here is bound by the CPU "
            "the runs were given; the CPU-per-page figures (CPU time, not wall time) are the ones to compare.",
        ]
    lines += ["", "What the CPUs did in the window (mean CPUs busy: harvesters together, Redis, the server):", ""]
    for entry in summary:
        busy = [entry["harvester_cpu_share"]["mean"] * entry["harvesters"], entry["redis_cpu_share"]["mean"],
                entry["server_cpu_share"]["mean"]]
        lines.append(
            f"- {entry['harvesters']} harvester(s): {busy[0]:.2f} + {busy[1]:.2f} + {busy[2]:.2f} = {sum(busy):.2f} "
            f"of {cpus} CPUs; each harvester used {entry['harvester_cpu_share']['mean']:.0%} of a CPU; "
            f"{entry['frontier_hosts_at_window_end']['mean']:,.0f} hosts queued in the frontier at the window's end"
        )
    lines += sqlite_lines(result)
    lines += cost_lines(summary)
    lines += [
        "",
        f"Politeness (the server's log, whole runs): most requests to one host in flight at once "
        f"{max(entry['most_requests_to_one_host_in_flight'] for entry in summary)} "
        f"({'never more than one' if polite_flight else 'MORE THAN ONE: impolite'})"
        + (f"; most requests to one host in any {wait:g} s window "
           f"{max(entry['most_requests_to_one_host_per_wait_interval'] for entry in summary)} "
           f"({'never more than one' if polite_window else 'MORE THAN ONE: impolite'})" if wait > 0 else "")
        + ".",
        "",
        *projection_lines(projection),
    ]
    return lines


def sqlite_lines(result: dict) -> list[str]:
    """The SQLite comparison (``--compare-sqlite``): a harvester's CPU per page on each frontier."""
    sqlite = result.get("sqlite") or sqlite_summary(result["runs"])
    one = next((entry for entry in result["summary"] if entry["harvesters"] == 1), None)
    if sqlite is None or one is None:
        return []
    ratio = one["harvester_cpu_ms_per_page"]["mean"] / sqlite["harvester_cpu_ms_per_page"]["mean"]
    return [
        "",
        f"One harvester on the SQLite frontier, same job, web and window (`scrapy crawl focused`, run before the "
        f"Redis runs of each repeat): {figure(sqlite, 'pages_per_minute', 0)} pages/min, "
        f"**{figure(sqlite, 'harvester_cpu_ms_per_page')} harvester CPU ms/page**; one harvester on Redis "
        f"{figure(one, 'harvester_cpu_ms_per_page')}: **{ratio:.2f}x** the SQLite harvester's CPU per page.",
    ]


def cost_lines(summary: list[dict]) -> list[str]:
    """Where a page's Redis work goes: round trips by caller, commands by name and, from the MONITOR profile,
    the calls of each script and the commands they ran inside Redis."""
    lines = ["", "Redis round trips a page by caller (frontier method > the function that sent them), in the window:", ""]
    for entry in summary:
        callers = entry.get("redis_round_trips_per_page_by_caller") or {}
        lines.append(f"- {entry['harvesters']} harvester(s): " + (", ".join(
            f"{caller} {count:.2f}" for caller, count in callers.items() if count >= 0.01) or "not counted"))
    lines += ["", "Commands inside Redis a page by name (INFO commandstats, in the window, the busiest):", ""]
    for entry in summary:
        lines.append(f"- {entry['harvesters']} harvester(s): " + ", ".join(
            f"{name.upper()} {count:.1f}" for name, count in entry["redis_commands_per_page_by_name"].items()))
    lines += ["", "Time Redis spent running commands a page, µs (INFO commandstats usec; a script's includes the "
              "commands it ran), beside its CPU a page; the rest is reading, parsing and answering requests:", ""]
    for entry in summary:
        lines.append(f"- {entry['harvesters']} harvester(s): " + ", ".join(
            f"{name.upper()} {us:,.0f}" for name, us in entry.get("redis_command_us_per_page", {}).items())
            + f"; Redis CPU {entry['redis_cpu_ms_per_page']['mean'] * 1000:,.0f}")
    profiled = [entry for entry in summary if entry.get("redis_profile") and entry["redis_profile"].get("pages")]
    if profiled:
        lines += ["", "Where the commands go (Redis MONITOR after the window, first repeat): per page, each script's "
                  "calls and the commands it ran inside Redis, and the commands sent directly:", ""]
    for entry in profiled:
        found = entry["redis_profile"]
        lines += [
            f"{entry['harvesters']} harvester(s), {found['pages']} pages in {found['seconds']:g} s: "
            f"{found['commands_per_page']:.1f} commands a page (script calls included)",
            "",
            "| script | calls/page | commands inside/page | inside a call | busiest inside (per page) |",
            "| --- | --- | --- | --- | --- |",
            *(f"| {name} | {script['calls_per_page']:.2f} | {script['inner_per_page']:.1f} | "
              f"{script['inner_per_call']:.1f} | "
              + ", ".join(f"{command} {count:.1f}" for command, count in list(script["inner"].items())[:6]) + " |"
              for name, script in found["scripts"].items()),
            f"| (sent directly) | | {sum(found['direct'].values()):.1f} | | "
            + ", ".join(f"{command} {count:.2f}" for command, count in list(found["direct"].items())[:6]) + " |",
            "",
            "Time in Redis a page, µs, by script (SLOWLOG over the same watch, a script's with the commands it ran; "
            "MONITOR slows Redis, so these are above the window's): " + ", ".join(
                f"{name} {us:,.0f}" for name, us in list(found.get("us_per_page", {}).items())[:10]),
            "",
        ]
    return lines


def projection_lines(projection: dict) -> list[str]:
    """The projection section: one Redis node and clusters, and the speed-up beside Combine's."""
    per_node = projection["harvesters_per_redis_node"]
    nodes = list(projection["cluster"])
    low, high = COMBINE_URLS_PER_MINUTE
    return [
        "## Projection: harvesters one Redis node and an N-node cluster carry",
        "",
        f"From the run with {projection['costs_from_harvesters']} harvesters: Redis spent "
        f"{projection['redis_cpu_ms_per_page']:.3f} ms of CPU a page over {projection['redis_round_trips_per_page']:.2f} "
        f"round trips a page. Redis runs commands on one thread, so one node carries at most "
        f"**{projection['pages_per_second_per_redis_core']:,} pages/s** "
        f"({projection['round_trips_per_second_per_redis_core']:,} round trips/s) with its core fully busy; at the "
        f"measured {projection['harvester_pages_per_minute']:,} pages/min a harvester (the smallest harvester count, "
        f"per harvester, on this machine) that is **{per_node['measured']:,} harvesters**; "
        f"{per_node['cpu_bound']:,} at {projection['harvester_cpu_bound_pages_per_minute']:,} pages/min, what a "
        f"harvester with a core of its own fetches when the web keeps it busy (1 / its CPU per page); and "
        f"{per_node[f'combine_{high}_per_minute']:,} to {per_node[f'combine_{low}_per_minute']:,} at Combine's "
        f"{low}-{high} URLs/min. Assumed: each harvester on a machine of its own (no CPU shared with Redis), "
        f"the network between them adds latency but no Redis CPU, and the per-page costs stay as measured as "
        f"the frontier grows. A cluster of N nodes carries N times one node when the frontier's hosts spread "
        f"evenly over its nodes: a job made on a cluster has its hosts in 32 buckets (COMBINE_REDIS_BUCKETS), each "
        f"bucket one hash slot, so up to about ten nodes share them evenly (a job made on a single Redis has 8).",
        "",
        f"| Redis nodes | harvesters at the measured {projection['harvester_pages_per_minute']:,} pages/min | "
        f"at {projection['harvester_cpu_bound_pages_per_minute']:,} pages/min (CPU-bound) | at {high} URLs/min | "
        f"at {low} URLs/min |",
        "| --- | --- | --- | --- | --- |",
        *(f"| {n} | {capacity['measured']:,} | {capacity['cpu_bound']:,} | {capacity[f'combine_{high}_per_minute']:,} | "
          f"{capacity[f'combine_{low}_per_minute']:,} |"
          for n, capacity in [("1", per_node), *projection["cluster"].items()]),
        "",
        "Speed-up of n harvesters (each on its own machine, at the measured rate) until Redis is full, "
        "beside Combine's measured speed-ups:",
        "",
        "| harvesters | Combine's speed-up | projected, one Redis node | "
        + " | ".join(f"projected, {n} nodes" for n in nodes) + " |",
        "| --- | --- | --- | " + " | ".join("---" for _ in nodes) + " |",
        *(f"| {row['harvesters']} | {row['combine']:g} | {row['one_node']:g} | "
          + " | ".join(f"{row[f'cluster_{n}']:g}" for n in nodes) + " |" for row in projection["speedup"]),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--harvesters", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--seconds", type=float, default=45, help="length of each run (default 45)")
    parser.add_argument("--warmup", type=float, default=8.0,
                        help="seconds after every harvester opened its spider before the window (default 8)")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each harvester count (default 1)")
    parser.add_argument("--wait", type=float, default=0.0,
                        help="WaitIntervalHost of the job (default 0: one request in flight a host)")
    parser.add_argument("--latency", type=float, default=0.05,
                        help="seconds the server holds each answer (default 0.05)")
    parser.add_argument("--strategy", help="CrawlStrategy of the job (default: the job's default)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--buckets", type=int,
                        help="COMBINE_REDIS_BUCKETS of the job (default: the setting's default)")
    parser.add_argument("--redis", help="a running Redis to use (default: a private redis-server on a free port)")
    parser.add_argument("--cluster-nodes", type=int, nargs="+", default=[3, 6],
                        help="Redis cluster sizes to project for (default 3 6)")
    parser.add_argument("--results", type=Path, default=RESULTS, help="directory for scaling.json and .md")
    parser.add_argument("--full", action="store_true", help="1, 2, 4 and 8 harvesters, 120 s each, 3 repeats")
    parser.add_argument("--profile", type=float, default=5.0,
                        help="seconds of Redis MONITOR after each window: the commands each script runs (0: none)")
    parser.add_argument("--compare-sqlite", action="store_true",
                        help="also run one harvester on the SQLite frontier in each repeat, for its CPU per page")
    parser.add_argument("--report-only", type=Path, metavar="JSON",
                        help="crawl nothing: summarise the runs stored in a scaling.json again and rewrite the report")
    args = parser.parse_args(argv)
    if args.report_only:
        result = json.loads(args.report_only.read_text())
        result["summary"] = summarise(result["runs"])
        result["sqlite"] = sqlite_summary(result["runs"])
        result["projection"] = project(result["summary"], args.cluster_nodes)
        write_report("scaling", result, "Scaling: harvesters sharing one Redis frontier", ["", *report(result)],
                     args.results)
        return
    if args.full:
        args.harvesters, args.seconds, args.repeats = [1, 2, 4, 8], 120, 3
    if args.repeats < 1 or min(args.harvesters) < 1:
        parser.error("--repeats and --harvesters must be at least 1")
    if args.seconds * (1 - END_MARGIN) - args.warmup < 1:
        parser.error(f"--seconds {args.seconds:g} leaves no window after --warmup {args.warmup:g}")
    web = VirtualWeb(seed=args.seed, hosts=args.hosts, pages=args.pages)
    runs = []
    with tempfile.TemporaryDirectory(prefix="scaling-") as directory, ServedWeb(web, latency=args.latency) as served:
        if args.redis:
            redis_url, redis_note = args.redis, f"{args.redis}, shared: its CPU and commands include other clients'"
            runs = measure(served, redis_url, args, Path(directory))
        else:
            with PrivateRedis(Path(directory)) as private:
                redis_note = "a private redis-server started by the bench, this crawl its only client"
                runs = measure(served, private.url, args, Path(directory))
    summary = summarise(runs)
    result = {
        **environment(command_line("bench.scaling", argv)),
        "seed": args.seed,
        "hosts": args.hosts,
        "pages_in_web": args.pages,
        "seconds_per_run": args.seconds,
        "warmup": args.warmup,
        "repeats": args.repeats,
        "wait_interval_host": args.wait,
        "crawl_strategy": args.strategy or "the job's default",
        "redis_buckets": args.buckets or "the setting's default",
        "latency": args.latency,
        "redis": redis_note,
        "redis_round_trips": "counted in the harvesters (bench/roundtrips.py): one per command or pipeline sent",
        "redis_commands": "INFO total_commands_processed: commands run inside Lua scripts count too",
        "summary": summary,
        "sqlite": sqlite_summary(runs),
        "projection": project(summary, args.cluster_nodes),
        "combine_speedup": COMBINE_SPEEDUP,
        "combine_urls_per_minute": list(COMBINE_URLS_PER_MINUTE),
        "runs": runs,
    }
    write_report("scaling", result, "Scaling: harvesters sharing one Redis frontier", ["", *report(result)],
                 args.results)


def measure(served: ServedWeb, redis_url: str, args: argparse.Namespace, directory: Path) -> list[dict]:
    """Every run, the harvester counts interleaved within each repeat."""
    runs = []
    for repeat in range(args.repeats):
        if args.compare_sqlite:
            runs.append(run(served, None, 1, args, directory) | {"repeat": repeat + 1})
            print(f"SQLite, repeat {repeat + 1}: {runs[-1]['pages_per_minute']:,} pages/min, "
                  f"{runs[-1]['harvester_cpu_ms_per_page']} harvester CPU ms/page", file=sys.stderr)
        for harvesters in args.harvesters:
            runs.append(run(served, redis_url, harvesters, args, directory) | {"repeat": repeat + 1})
            print(f"{harvesters} harvesters, repeat {repeat + 1}: {runs[-1]['pages_per_minute']:,} pages/min, "
                  f"{runs[-1]['harvester_cpu_ms_per_page']} harvester CPU ms/page, "
                  f"{runs[-1]['redis_cpu_ms_per_page']} Redis CPU ms/page", file=sys.stderr)
    return runs


if __name__ == "__main__":
    main()
