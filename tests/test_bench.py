"""The crawl benchmarks (bench/): each command at a tiny size writes its results, and their pure parts count right."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from conftest import PROJECT

from bench.focus import relevance_curve
from bench.politeness import close_pairs, host_figures, most_in_window
from bench.profile import OTHER, group_seconds
from bench.profiled import ThreadProfile
from bench.roundtrips import callers_between, count_at
from bench.scaling import measured_run, profile_per_page, project, sqlite_summary, summarise
from bench.virtualweb import VirtualWeb
from bench.virtualweb.harness import page_fetches, steady_rate

SMALL_WEB = ["--hosts", "40", "--pages", "4000", "--seed", "2"]
#: Each benchmark at a size that takes seconds; they run side by side.
COMMANDS = {
    "throughput": ["--seconds", "3"],
    "focus": ["--fetches", "15", "--wait", "0.05", "--strategies", "BreadthFirst,BestFirst", "--timeout", "20"],
    "cost": ["--responses", "25", "--timeout", "20"],
    "politeness": ["--seconds", "3", "--wait", "0.5"],
    "profile": ["--seconds", "2"],
    "scaling": ["--harvesters", "2", "--seconds", "8", "--warmup", "1", "--repeats", "2"],
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Run every benchmark command at once into one results directory; its path."""
    directory = tmp_path_factory.mktemp("results")
    processes = {
        name: subprocess.Popen(
            [sys.executable, "-m", f"bench.{name}", *arguments, *SMALL_WEB, "--results", str(directory)],
            cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": str(PROJECT)},
        )
        for name, arguments in COMMANDS.items()
    }
    failures = {}
    for name, process in processes.items():
        _, stderr = process.communicate(timeout=120)
        if process.returncode != 0:
            failures[name] = stderr[-3000:]
    assert not failures, failures
    return directory


def read(directory, name: str) -> dict:
    assert (directory / f"{name}.md").read_text().startswith("# ")
    result = json.loads((directory / f"{name}.json").read_text())
    assert {"date", "command", "cpus", "python"} <= set(result)
    return result


@pytest.mark.crawl
def test_throughput_compares_the_harvester_with_plain_scrapy(results):
    result = read(results, "throughput")
    for crawler in ("focused", "plain"):
        run = result["rounds"][0][crawler]
        assert run["pages"] > 0 and run["pages_per_minute"] > 0 and run["max_rss_mb"] > 10
        assert run["cpu_ms_per_page"] > 0
    assert result["ratio"] > 0 and result["cpu_ratio"] > 0
    assert result["combine_urls_per_minute"] == [50, 200]
    assert "plain Scrapy" in (results / "throughput.md").read_text()


@pytest.mark.crawl
def test_focus_judges_each_strategy_by_the_ground_truth_and_plots_it(results):
    result = read(results, "focus")
    assert set(result["strategies"]) == {"BreadthFirst", "BestFirst"}
    assert result["strategies"]["BestFirst"]["variables"] == {"CrawlStrategy": "BestFirst", "LinkStrategy": "RW"}
    for figures in result["strategies"].values():
        assert 0 < figures["fetched"] <= 15
        assert 0 < figures["relevant"] <= figures["fetched"]
        for after in figures["after"].values():
            assert 0 <= after["harvest_rate"] <= 1 and 0 <= after["recall"] <= 1
    assert (results / "focus.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.crawl
def test_cost_reports_peak_memory_and_bytes_per_url(results):
    result = read(results, "cost")
    assert result["focused"]["max_rss_mb"] > 10 and result["plain"]["max_rss_mb"] > 10
    assert result["focused"]["frontier_bytes_per_url"] > 0
    assert result["queued_url_bytes"]["sqlite"] > 0


@pytest.mark.crawl
def test_politeness_counts_requests_per_host_window(results):
    result = read(results, "politeness")
    for key in ("by_host_name", "by_server"):
        figures = result[key]
        assert figures["hosts"] > 0 and figures["requests"] >= figures["hosts"]
        assert figures["max_requests_in_window"] >= 1
    assert isinstance(result["too_soon"], list)


@pytest.mark.crawl
def test_profile_groups_the_harvesters_time(results):
    result = read(results, "profile")
    assert result["pages"] > 0
    assert {"Twisted/Scrapy engine", "parsing", "topic scoring"} <= set(result["groups"])
    assert abs(sum(group["share"] for group in result["groups"].values()) - 1) < 0.02
    assert result["top_own"] and result["top_cumulative"]


@pytest.mark.crawl
@pytest.mark.services
def test_scaling_measures_each_parts_cpu_and_redis_costs_per_page_with_repeats(results):
    result = read(results, "scaling")
    assert [run["harvesters"] for run in result["runs"]] == [2, 2]
    for run in result["runs"]:
        assert run["window_pages"] > 0 and run["window_seconds"] > 0
        assert len(run["harvester_cpu_seconds"]) == 2 and all(cpu > 0 for cpu in run["harvester_cpu_seconds"])
        assert run["harvester_cpu_ms_per_page"] > 1 and run["server_cpu_ms_per_page"] > 0
        assert run["redis_cpu_ms_per_page"] > 0 and run["peak_rss_mb"] > 10
        assert run["redis_round_trips_per_page"] > 0 and run["redis_script_calls_per_page"] > 0
        assert run["redis_commands_per_page"] >= run["redis_script_calls_per_page"]
        assert run["frontier_hosts_at_window_end"] > 0 and run["redis_commands_per_page_by_name"]
        assert run["most_requests_to_one_host_in_flight"] == 1  # the crawler's politeness at wait 0
        assert run["most_requests_to_one_host_per_wait_interval"] is None
    (summary,) = result["summary"]
    assert summary["repeats"] == 2
    pages = summary["pages_per_minute"]
    assert pages["min"] <= pages["mean"] <= pages["max"] and pages["stdev"] >= 0
    projection = result["projection"]
    assert projection["pages_per_second_per_redis_core"] > 0
    assert projection["cluster"]["3"]["measured"] >= projection["harvesters_per_redis_node"]["measured"]
    report = (results / "scaling.md").read_text()
    assert "Redis round trips/page" in report and "## Projection" in report


@pytest.mark.services
def test_redis_ops_measures_a_mark_a_look_a_completion_a_page_and_a_rescoring_alone(tmp_path):
    from bench.redis_ops import main

    main(["--redis", "redis://127.0.0.1:6379/0", "--hosts", "20", "--urls", "10", "--links", "10", "--repeat", "30",
          "--results", str(tmp_path)])
    result = read(tmp_path, "redis_ops")
    assert result["mark"]["calls"] == 30 and result["complete"]["calls"] >= 30 and result["look"]["calls"] >= 1
    assert result["page"]["calls"] >= 30 and result["page"]["commands"] > result["complete"]["commands"]
    for operation in ("mark", "look", "complete", "page", "rescore"):
        found = result[operation]
        assert found["commands"] > 0 and found["script_us"] >= found["commands_us"] > 0
    assert result["mark"]["by_name"]["zadd"] > 0 and result["look"]["urls_a_look"] > 1
    assert result["rescore"]["hosts_a_call"] == 20 and result["rescore"]["by_name"]["hset"] >= 20   # every host written
    assert "| mark |" in (tmp_path / "redis_ops.md").read_text()


# ---- the pure parts -----------------------------------------------------------


def test_a_scaling_run_is_the_deltas_of_its_window_per_page():
    before = {"t": 100.0, "harvesters": [10.0, 20.0], "server_cpu": 3.0, "redis": {
        "cpu": 5.0, "commands": 1000, "script_calls": 100, "calls": {"evalsha": 100, "hget": 900}}}
    after = {"t": 110.0, "harvesters": [14.0, 23.0], "server_cpu": 4.0, "redis": {
        "cpu": 5.5, "commands": 3001, "script_calls": 300, "calls": {"evalsha": 300, "hget": 2600, "info": 1}}}
    entries = [{"t": t, "host": host, "path": "/", "status": 200, "in_flight": 1}
               for t, host in [(99.0, "a"), (100.0, "a"), (105.0, "b"), (109.9, "a"), (110.0, "b")]]
    entries.append({"t": 104.0, "host": "b", "path": "/robots.txt", "status": 200, "in_flight": 2})
    trips = [[(95.0, 0), (105.0, 100), (115.0, 200)], [(100.0, 0), (110.0, 40)]]
    run = measured_run(2, entries, before, after, [100 * 2**20, 120 * 2**20], trips, wait=0.0)
    assert run["window_pages"] == 3 and run["pages_per_minute"] == 18  # 100.0, 105.0, 109.9; not 110.0
    assert run["harvester_cpu_seconds"] == [4.0, 3.0] and run["harvester_cpu_share"] == 0.35
    assert run["harvester_cpu_ms_per_page"] == pytest.approx(7000 / 3, abs=0.01)
    assert run["redis_cpu_ms_per_page"] == pytest.approx(500 / 3, abs=0.001)
    assert run["redis_commands_per_page"] == 666.67  # less the bench's own INFO
    assert run["redis_round_trips_per_page"] == pytest.approx((100 + 40) / 3, abs=0.01)
    assert run["server_cpu_ms_per_page"] == pytest.approx(1000 / 3, abs=0.01)
    assert run["redis_commands_per_page_by_name"] == {"hget": 566.67, "evalsha": 66.67, "info": 0.33}
    assert run["peak_rss_mb"] == 120 and run["most_requests_to_one_host_in_flight"] == 2
    assert measured_run(2, entries, before, after, [2**20], trips, wait=2.0)[
        "most_requests_to_one_host_per_wait_interval"] == 2  # a at 99.0 and 100.0


def test_round_trips_are_interpolated_between_samples():
    samples = [(1.0, 10), (2.0, 30), (4.0, 30)]
    assert [count_at(samples, t) for t in (0.0, 1.5, 3.0, 9.0)] == [10, 20, 30, 30]


def test_summary_spread_and_projection_of_harvesters_per_redis_node():
    def run(harvesters, pages_per_minute, redis_ms):
        return {"harvesters": harvesters, "pages_per_minute": pages_per_minute, "redis_cpu_ms_per_page": redis_ms,
                "redis_round_trips_per_page": 2.0, "most_requests_to_one_host_in_flight": 1,
                "most_requests_to_one_host_per_wait_interval": None,
                **{name: 1.0 for name in ("harvester_cpu_ms_per_page", "harvester_cpu_share", "redis_cpu_share",
                                          "redis_commands_per_page", "redis_script_calls_per_page",
                                          "server_cpu_ms_per_page", "server_cpu_share", "peak_rss_mb",
                                          "frontier_hosts_at_window_end")}}

    summary = summarise([run(1, 600, 0.5), run(2, 1000, 1.0), run(1, 600, 0.5), run(2, 1400, 1.0)])
    assert [entry["harvesters"] for entry in summary] == [1, 2]
    assert summary[1]["pages_per_minute"] == {"mean": 1200, "min": 1000, "max": 1400, "stdev": pytest.approx(282.8427)}
    assert summary[1]["speedup"] == 2.0
    projection = project(summary, [3])
    # 1 ms of Redis CPU a page (the largest count's): 1,000 pages/s a core; 10 pages/s a harvester: 100 harvesters
    assert projection["pages_per_second_per_redis_core"] == 1000
    assert projection["round_trips_per_second_per_redis_core"] == 2000
    assert projection["harvesters_per_redis_node"] == {"measured": 100, "cpu_bound": 1, "combine_50_per_minute": 1200,
                                                       "combine_200_per_minute": 300}  # 1 ms of CPU a page: 1,000/s
    assert projection["cluster"][3]["measured"] == 300
    assert projection["speedup"][-1] == {"harvesters": 20, "combine": 11.0, "one_node": 20, "cluster_3": 20}




def test_round_trips_by_caller_are_the_difference_of_the_samples_around_the_window():
    samples = [(0.0, {"queue.mark": 1}), (1.0, {"queue.mark": 4, "queue.complete": 2}), (2.0, {"queue.mark": 9})]
    assert callers_between(samples, 0.5, 1.5) == {"queue.mark": 3, "queue.complete": 2}   # samples at 0 and 1
    assert callers_between(samples, 0.0, 2.0) == {"queue.mark": 8}   # a caller gone from the last sample counts 0


def test_the_monitor_profile_is_per_page_and_the_sqlite_runs_stay_out_of_the_redis_summary():
    from collections import Counter

    profiled = {"seconds": 5, "pages": 10, "direct": Counter({"GET": 5}), "us": Counter({"mark": 300}),
                "scripts": {"mark": {"calls": 10, "inner": Counter({"HMGET": 30, "ZADD": 40})},
                            "complete": {"calls": 10, "inner": Counter({"HSET": 20})}}}
    found = profile_per_page(profiled)
    assert list(found["scripts"]) == ["mark", "complete"]   # most commands first
    assert found["scripts"]["mark"] == {"calls_per_page": 1.0, "inner_per_page": 7.0, "inner_per_call": 7.0,
                                        "inner": {"ZADD": 4.0, "HMGET": 3.0}}
    assert found["commands_per_page"] == (5 + 10 + 70 + 10 + 20) / 10
    assert found["us_per_page"] == {"mark": 30.0}
    sqlite = {"frontier": "sqlite", "harvesters": 1, "pages_per_minute": 600, "harvester_cpu_ms_per_page": 8.0}
    assert sqlite_summary([sqlite])["harvester_cpu_ms_per_page"]["mean"] == 8.0
    assert summarise([sqlite]) == []


def test_most_in_window_counts_a_half_open_sliding_window():
    assert most_in_window([], 1.0) == 0
    assert most_in_window([0.0, 1.0, 2.0], 1.0) == 1  # exactly one interval apart is allowed
    assert most_in_window([0.0, 0.99, 5.0], 1.0) == 2
    assert most_in_window([0.0, 0.5, 0.9, 1.2, 1.4], 1.0) == 4


def test_host_figures_and_close_pairs_name_what_came_too_soon():
    entries = [
        {"t": 0.0, "host": "a.test", "path": "/robots.txt", "status": 301},
        {"t": 0.01, "host": "a.test", "path": "/static/robots.txt", "status": 200},
        {"t": 0.5, "host": "b.test", "path": "/", "status": 200},
        {"t": 2.5, "host": "a.test", "path": "/", "status": 200},
    ]
    figures = host_figures({"a.test": [0.0, 0.01, 2.5], "b.test": [0.5]}, 2.0)
    assert figures["max_requests_in_window"] == 2 and figures["gaps_under_wait"] == 1
    assert figures["hosts_requested_twice_or_more"] == 1 and figures["smallest_gap_seconds"] == 0.01
    pairs = close_pairs(entries, 2.0, lambda host: host)
    assert pairs == [{"host": "a.test", "gap_seconds": 0.01, "first": "/robots.txt (301)",
                      "then": "/static/robots.txt (200)"}]


def test_relevance_curve_counts_each_on_topic_page_once_under_any_name():
    web = VirtualWeb(2, 40, 4000)
    relevant = [url for url in web.relevant_urls() if url.count("/") > 3][:2]
    off_topic = next(web.url(page) for page in range(web.pages) if web.page_of(web.url(page)) == page
                     and not web.is_relevant(web.url(page)))

    def entry(url: str, status: int = 200) -> dict:
        host, _, path = url[len("http://"):].partition("/")
        return {"host": host, "path": "/" + path, "status": status, "t": 0.0}

    entries = [
        entry(relevant[0]),
        entry(relevant[0] + ";jsessionid=ABC"),  # the same page again
        entry(off_topic),
        entry(relevant[1], status=304),  # no page in the answer
        entry(relevant[1]),
    ]
    assert relevance_curve(web, entries) == [1, 1, 1, 1, 2]


def test_page_fetches_and_steady_rate_leave_out_robots_and_the_warm_up():
    entries = [{"t": float(t), "host": "a.test", "path": path, "status": 200}
               for t, path in enumerate(["/robots.txt", "/", "/static/robots.txt", "/1", "/2", "/3", "/4"])]
    pages = page_fetches(entries)
    assert [entry["path"] for entry in pages] == ["/", "/1", "/2", "/3", "/4"]
    rate, counted, seconds = steady_rate(pages, 0.5)  # pages at 1, 3..6 s: counted from 3.5 s, at 4, 5, 6 s
    assert (counted, seconds) == (3, 2.5) and rate == pytest.approx(72.0)


def test_group_seconds_charges_library_code_to_its_callers_group():
    topic = ("/x/combine_scrapy/topic/matching.py", 10, "classify")
    engine = ("/x/site-packages/scrapy/core/engine.py", 5, "_next")
    regex = ("~", 0, "<method 'sub' of 're.Pattern' objects>")
    idle = ("~", 0, "<method 'poll' of 'select.epoll' objects>")
    orphan = ("/usr/lib/python3.11/json/decoder.py", 1, "decode")
    stats = {  # function: (primitive calls, calls, own, cumulative, {caller: (.., .., own, cumulative)})
        topic: (1, 1, 1.0, 4.0, {engine: (1, 1, 1.0, 4.0)}),
        engine: (1, 1, 2.0, 9.0, {}),
        regex: (4, 4, 3.0, 3.0, {topic: (3, 3, 2.0, 2.0), engine: (1, 1, 1.0, 1.0)}),
        idle: (1, 1, 50.0, 50.0, {engine: (1, 1, 50.0, 50.0)}),
        orphan: (1, 1, 0.5, 0.5, {}),
    }
    seconds = group_seconds(stats)
    assert seconds["topic scoring"] == pytest.approx(3.0)
    assert seconds["Twisted/Scrapy engine"] == pytest.approx(3.0)
    assert seconds[OTHER] == pytest.approx(0.5)


def test_a_threads_profile_is_scaled_to_the_cpu_it_used():
    parse = ("/x/combine_scrapy/document/parse.py", 1, "parse_document")
    wait = ("~", 0, "<method 'get' of '_queue.SimpleQueue' objects>")
    stats = {parse: (2, 2, 3.0, 4.0, {wait: (2, 2, 3.0, 4.0)}), wait: (1, 1, 90.0, 90.0, {})}
    scaled = ThreadProfile(stats, cpu_seconds=1.5).stats  # 3 s of wall clock, half of it waiting for the GIL
    assert scaled[parse][2:4] == (1.5, 2.0) and scaled[parse][4][wait] == (2, 2, 1.5, 2.0)
    assert ThreadProfile(stats, cpu_seconds=None).stats[parse][2] == 3.0  # no reading: left as measured


@pytest.mark.crawl
def test_a_killed_benchmark_leaves_no_crawler_behind(tmp_path):
    """A bench stopped by SIGKILL (a timeout, an impatient user) took its crawler child with it."""
    pid_file = tmp_path / "child.pid"
    child = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    bench = subprocess.Popen([sys.executable, "-c", (
        "import sys; from bench.virtualweb.harness import run_crawl; "
        f"run_crawl([sys.executable, '-c', {child!r}], proxy='http://127.0.0.1:9', timeout=120)"
    )], cwd=PROJECT, env={**os.environ, "PYTHONPATH": str(PROJECT)})
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline, "the bench's child did not start"
            time.sleep(0.05)
        crawler = int(pid_file.read_text())
    finally:
        bench.kill()
        bench.wait(timeout=30)
    deadline = time.monotonic() + 5
    while alive(crawler):
        assert time.monotonic() < deadline, "the crawler outlived its benchmark"
        time.sleep(0.05)


def alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
