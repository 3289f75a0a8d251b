"""Hostile conditions around a crawl: each ends in one clear line (or a safe crawl) and nothing stored is lost.

| fault | what the crawl does |
| --- | --- |
| frontier.sqlite garbage | error naming the file as damaged, exit 1 |
| records.sqlite garbage | the same |
| harvest_log.sqlite garbage | stops at once naming the file, exit 1 |
| frontier.sqlite read-only | error naming the file as not writable, exit 1 |
| records.sqlite read-only | the same |
| data directory cannot be made | error naming the directory, exit 1 |
| MariaDB down at start | waited for (`MySQL unreachable ... waited N s of P`), then `error: cannot reach MySQL`, the summary, exit 1 |
| MariaDB down at start, SIGTERM or SIGINT while waiting | the wait ends at once, summary printed, exit 1 |
| MariaDB wrong credentials | `error: cannot reach MySQL: ... Access denied`, exit 1 at once |
| MariaDB gone mid-crawl (a cut proxy) | waited for, `MySQL reachable again`, the crawl goes on |
| MariaDB gone mid-crawl, SIGTERM while waiting | exit within 5 s, summary, not running; the next crawl stores every page once |
| SIGTERM or SIGINT while a 200,000-line seeds.txt is checked | exit within 5 s with the summary |
| Redis down at start | `Redis unreachable for N s ...`, exit 1 |
| Redis down, SIGTERM or SIGINT while waiting | the wait ends at once, summary printed, exit 1 |
| Redis wrong password | `Redis refused the user name or password`, exit 1 at once |
| REDIS_URL malformed | `error: bad REDIS_URL ...`, exit 2 |
| a MySQL table dropped mid-crawl | stops naming the missing table, exit 1, other tables intact |
| records.sqlite locked by another process | waits for the lock, then crawls everything |
| two crawls of one SQLite job at once | both finish; every page stored once |
| SIGTERM twice (forced stop) | the next crawl stores every page once |
| a stale pid file | `status` and `stop` ignore and remove it, signal nothing |
| Redis DB holding another job's keys | the crawl leaves them alone |
| disk full, frontier vanished from Redis | in tests/test_faults.py |
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import threading
import time
import uuid
from pathlib import Path

import MySQLdb
import pytest
import redis
from conftest import PROJECT, SCRAPY, JobDir, free_port
from crawling import crawl_command
from harvesters import (
    TOPIC,
    delete_job_keys,
    expected_urls,
    harvester_command,
    hosts_web,
    page_fetches,
    redis_counts,
    start,
    stored_urls,
    wait_for,
)
from tcpproxy import TcpProxy
from test_store import MYSQL_URL, drop_mysql_tables, mysql_admin

from combine_scrapy.frontier.redis import RedisFrontier
from combine_scrapy.operations.sampleweb import LoopbackWeb
from combine_scrapy.records.store.mysql import table_prefix

pytestmark = pytest.mark.crawl

REDIS_URL = "redis://127.0.0.1:6379/0"
HOSTS = [f"127.0.0.{n}" for n in range(91, 94)]


@pytest.fixture(scope="module")
def web():
    port = free_port(HOSTS[0])
    sites = hosts_web(HOSTS, port, 6)
    with LoopbackWeb(sites, port=port) as served:
        served.sites_expected = expected_urls(sites)
        yield served


@pytest.fixture(scope="module")
def crawled(tmp_path_factory, web):
    """One finished crawl of the loopback web, whose data directory each case copies and spoils."""
    job_dir = JobDir(topics=tmp_path_factory.mktemp("topics"), data=tmp_path_factory.mktemp("data"))
    job_dir.write("WaitIntervalHost = 0.01\nAllowPrivateAddresses = 1\n", TOPIC, [web.url(HOSTS[0])])
    job_dir.crawl()
    return job_dir


def copy_of(crawled: JobDir, tmp_path) -> JobDir:
    job_dir = JobDir(topics=crawled.topics, data=tmp_path / "data", name=crawled.name)
    shutil.copytree(crawled.data, job_dir.data)
    return job_dir


def record_count(job_dir: JobDir) -> int:
    records = job_dir.records()
    try:
        assert records.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return records.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    finally:
        records.close()


def garbage(path):
    path.write_bytes(b"this is not an SQLite database " * 200)
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


@pytest.fixture
def read_only():
    """Bind-mount a file read-only over itself (root ignores file modes); unmounted afterwards."""
    mounted = []

    def make(path):
        for command in (["mount", "--bind", str(path), str(path)], ["mount", "-o", "remount,bind,ro", str(path)]):
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                pytest.skip(f"cannot bind-mount {path} read-only (needs root): {result.stderr.strip()}")
            if command[1] == "--bind":
                mounted.append(path)

    yield make
    for path in mounted:
        subprocess.run(["umount", str(path)], check=False)


@pytest.mark.parametrize("name", ["frontier.sqlite", "records.sqlite"])
def test_a_damaged_database_file_is_one_line_naming_it(crawled, tmp_path, name):
    job_dir = copy_of(crawled, tmp_path)
    garbage(job_dir.data / job_dir.name / name)
    result = job_dir.run_crawl()
    assert result.returncode == 1
    assert f"error: {job_dir.data / job_dir.name / name} is damaged (file is not a database)" in result.stderr
    assert "Traceback" not in result.stderr
    if name == "frontier.sqlite":
        assert record_count(job_dir) == record_count(crawled)


def test_a_damaged_harvest_log_stops_the_crawl_naming_it(crawled, tmp_path):
    job_dir = copy_of(crawled, tmp_path)
    garbage(job_dir.data / job_dir.name / "harvest_log.sqlite")
    result = job_dir.run_crawl()
    assert result.returncode == 1, result.stderr[-3000:]
    assert "stopping the crawl: " in result.stderr and "harvest_log.sqlite is damaged" in result.stderr
    assert record_count(job_dir) == record_count(crawled)


@pytest.mark.parametrize("name", ["frontier.sqlite", "records.sqlite"])
def test_a_read_only_database_file_is_one_line_naming_it(crawled, tmp_path, read_only, name):
    job_dir = copy_of(crawled, tmp_path)
    frontier = job_dir.frontier()
    with frontier:  # work to do, so the crawl writes
        frontier.execute("UPDATE urls SET marked = 1, lock_until = 0")
    frontier.close()
    read_only(job_dir.data / job_dir.name / name)
    result = job_dir.run_crawl()
    assert result.returncode == 1, result.stderr[-3000:]
    assert str(job_dir.data / job_dir.name / name) in result.stderr
    assert "cannot be written" in result.stderr or "cannot open" in result.stderr, result.stderr[-3000:]
    assert record_count(job_dir) == record_count(crawled)


def test_a_data_directory_that_cannot_be_made_is_one_line(crawled, tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the data directory should be")
    job_dir = JobDir(topics=crawled.topics, data=blocker, name=crawled.name)
    result = job_dir.run_crawl()
    assert result.returncode == 1
    assert f"error: cannot create the data directory {blocker / job_dir.name}" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.services
@pytest.mark.parametrize("url, says", [
    ("mysql://root:wrong@127.0.0.1:1/test", "error: cannot reach MySQL: MySQL at mysql://root:***@127.0.0.1:1/test"),
    ("mysql://nobody:wrong@127.0.0.1:3306/test", "Access denied"),
])
def test_mariadb_down_or_refusing_at_start_is_one_line(crawled, tmp_path, url, says):
    """Down: waited for COMBINE_OUTAGE_PATIENCE (before: one line at once, while Redis was waited for 600 s);
    refusing the user or password: one line at once."""
    job_dir = JobDir(topics=crawled.topics, data=tmp_path / "data", name=crawled.name)
    result = job_dir.run_crawl("-s", f"MYSQL_URL={url}", "-s", "COMBINE_OUTAGE_PATIENCE=2")
    assert result.returncode == 1
    assert says in result.stderr and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "wrong" not in result.stderr + result.stdout  # the password is not printed
    if ":1/" in url:
        assert re.search(r"MySQL unreachable \(.*\): waited 0 s of 2, retry 1 in 0.25 s \(Ctrl-C stops\)", result.stderr)
        assert "== combine-scrapy: job t finished (records_unreachable) ==" in result.stdout


#: A MariaDB user with a password, which no log line, summary or message may show.
OUTAGE_USER, OUTAGE_PASSWORD = "combine_outage", "outage-pw-7c1d"


@pytest.fixture(scope="module")
def mysql_user():
    """The user's URL (``{port}`` to fill in); the user is dropped afterwards, so the shared server keeps none."""
    with mysql_admin() as db:
        cursor = db.cursor()
        cursor.execute(f"CREATE USER IF NOT EXISTS '{OUTAGE_USER}'@'%' IDENTIFIED BY '{OUTAGE_PASSWORD}'")
        cursor.execute(f"GRANT ALL PRIVILEGES ON test.* TO '{OUTAGE_USER}'@'%'")
    yield f"mysql://{OUTAGE_USER}:{OUTAGE_PASSWORD}@127.0.0.1:{{port}}/test"
    with mysql_admin() as db:
        db.cursor().execute(f"DROP USER IF EXISTS '{OUTAGE_USER}'@'%'")


def start_crawl(command: list[str], tmp_path: Path, name: str) -> tuple[subprocess.Popen, Path, Path]:
    """The crawl's process, its log (stderr) and its output (stdout: the summary)."""
    log, out = tmp_path / f"{name}.log", tmp_path / f"{name}.out"
    with log.open("w") as stderr, out.open("w") as stdout:
        return subprocess.Popen(command, cwd=PROJECT, stdout=stdout, stderr=stderr), log, out


def stopped_within(process: subprocess.Popen, signum: signal.Signals, seconds: float) -> float:
    """Send ``signum``; how long the process took to end (it is killed after ``seconds`` * 6)."""
    signalled = time.monotonic()
    process.send_signal(signum)
    try:
        process.wait(timeout=seconds * 6)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    return time.monotonic() - signalled


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_the_wait_for_an_unreachable_mysql_at_start_with_the_summary(crawled, tmp_path, signum):
    """Before: one line at once, whatever the outage; now the harvester waits (600 s by default) as for Redis."""
    job_dir = JobDir(topics=crawled.topics, data=tmp_path / "data", name=crawled.name)
    url = f"mysql://{OUTAGE_USER}:{OUTAGE_PASSWORD}@127.0.0.1:{free_port('127.0.0.1')}/test"  # nothing listens
    process, log, out = start_crawl(harvester_command(job_dir, None, f"MYSQL_URL={url}"), tmp_path, "crawl")
    try:
        wait_for(lambda: "MySQL unreachable" in log.read_text(), 60, "the wait for MySQL")
        took = stopped_within(process, signum, 5)
    finally:
        process.kill()
        process.wait()
    text, summary = log.read_text(), out.read_text()
    assert took < 5 and process.returncode == 1, text[-3000:]
    assert re.search(r"waited \d+ s of 600, retry 1 in [\d.]+ s \(Ctrl-C stops\)", text)
    assert f"unreachable, and {signum.name} came while waiting for it" in text
    assert "== combine-scrapy: job t finished (records_unreachable) ==" in summary
    assert OUTAGE_PASSWORD not in text + summary and "Traceback" not in text
    assert not list((job_dir.data / job_dir.name).rglob("*.pid"))   # not listed as running


def mysql_urls(prefix: str) -> list[str]:
    """The URLs on the job's records in MariaDB (none while its tables are not made yet)."""
    with mysql_admin() as db:
        cursor = db.cursor()
        try:
            cursor.execute(f"SELECT url FROM `{prefix}record_urls`")
        except MySQLdb.ProgrammingError:  # no such table yet
            return []
        return [url for (url,) in cursor.fetchall()]


@pytest.mark.services
def test_mysql_going_away_mid_crawl_is_waited_out_and_sigterm_ends_the_wait(tmp_path, mysql_user):
    """MariaDB behind a proxy the test cuts: the first outage is waited out and the crawl goes on; SIGTERM
    during the second ends the crawl within 5 s with the summary. Nothing stored is lost, the next crawl
    stores every page once, and the password is in no log line. Before: a write waited 60 s with the
    reactor blocked and SIGTERM unheard, then the item failed and the crawl went on without its records."""
    hosts = [f"127.0.0.{n}" for n in range(104, 107)]
    port = free_port(hosts[0])
    sites = hosts_web(hosts, port, 40)
    for site in sites.values():
        for page in site.values():
            page.delay = 0.2  # the crawl lasts long enough for two outages
    job_dir = JobDir(topics=tmp_path / "topics", data=tmp_path / "data", name=f"outage{uuid.uuid4().hex[:8]}")
    prefix = table_prefix(job_dir.name)
    try:
        with LoopbackWeb(sites, port=port) as served, TcpProxy(("127.0.0.1", 3306)) as proxy:
            job_dir.write("WaitIntervalHost = 0.05\nAllowPrivateAddresses = 1\n", TOPIC, [served.url(hosts[0])])
            command = harvester_command(job_dir, None, f"MYSQL_URL={mysql_user.format(port=proxy.port)}",
                                        "COMBINE_LEASE_SECONDS=1")
            first, log, out = start_crawl(command, tmp_path, "first")
            wait_for(lambda: len(mysql_urls(prefix)) >= 5 or first.poll() is not None, 60, "5 records")
            proxy.cut()
            wait_for(lambda: "MySQL unreachable" in log.read_text() or first.poll() is not None, 60, "the wait")
            time.sleep(2)
            proxy.restore()
            wait_for(lambda: "MySQL reachable again" in log.read_text() or first.poll() is not None, 60, "reconnecting")
            stored = len(mysql_urls(prefix))
            wait_for(lambda: len(mysql_urls(prefix)) > stored or first.poll() is not None, 60, "the crawl to go on")
            waits = log.read_text().count("retry 1 in")  # before the cut: the crawl may log its wait at once
            proxy.cut()
            wait_for(lambda: log.read_text().count("retry 1 in") > waits or first.poll() is not None, 60, "a 2nd wait")
            took = stopped_within(first, signal.SIGTERM, 5)
            text, summary = log.read_text(), out.read_text()
            assert took < 5 and first.returncode == 1, text[-3000:]
            assert "unreachable, and SIGTERM came while waiting for it" in text, text[-3000:]
            assert "== combine-scrapy: job " in summary and "finished (records_unreachable) ==" in summary
            assert not list((job_dir.data / job_dir.name).rglob("*.pid"))
            status = job_dir.scrapy("status", job_dir.name, "-s", f"MYSQL_URL={MYSQL_URL}")
            assert "harvesters:      0 running here" in status.stdout, status.stdout + status.stderr
            proxy.restore()
            kept = mysql_urls(prefix)
            second, second_log, _ = start_crawl(command, tmp_path, "second")
            second.wait(timeout=120)
            fetched = page_fetches(list(served.hits))
        assert second.returncode == 0, second_log.read_text()[-3000:]
        assert OUTAGE_PASSWORD not in text + summary + second_log.read_text()
        assert "Traceback" not in second_log.read_text()
        urls = mysql_urls(prefix)
        assert set(kept) <= set(urls)                                   # nothing stored was lost
        assert len(urls) == len(set(urls)) == len(expected_urls(sites))  # every page stored once
        assert set(fetched) == expected_urls(sites)
    finally:
        drop_mysql_tables(prefix)


def test_a_signal_while_a_big_seeds_file_is_checked_ends_the_crawl_with_the_summary(tmp_path):
    """200,000 seeds take seconds to check against the URL rules when the job loads, before Scrapy stands (its
    handlers stand once the reactor runs). Before: SIGTERM there ended the process at once without a word (status
    -15), SIGINT with a traceback; and the spider loaded the job a second time."""
    port = free_port("127.0.0.2")
    job_dir = JobDir(topics=tmp_path / "topics", data=tmp_path / "data")
    job_dir.write("WaitIntervalHost = 1000\nAllowPrivateAddresses = 1\n", TOPIC,
                  [f"http://127.0.0.2:{port}/s{n}.html" for n in range(200_000)])
    for signum in (signal.SIGTERM, signal.SIGINT):
        process, log, out = start_crawl(crawl_command(job_dir), tmp_path, signum.name)
        wait_for(lambda: "Scrapy" in log.read_text() and "started" in log.read_text(), 60, "the command to start")
        time.sleep(1)
        assert process.poll() is None   # still checking the seeds
        took = stopped_within(process, signum, 5)
        summary = out.read_text()
        # status 0, not killed (after 30 s); the summary below says the signal came during the check, since the
        # handler that writes it stands only then. How soon the process ends follows the machine's load.
        assert process.returncode == 0, f"ended {took:.1f} s after {signum.name}: " + log.read_text()[-3000:]
        assert "== combine-scrapy: job t finished (shutdown) ==" in summary
        assert f"stopped: {signum.name} came while the job was loading, before the crawl started" in summary
        assert "Traceback" not in log.read_text()


@pytest.mark.services
@pytest.mark.parametrize("url, status, says", [
    ("redis://127.0.0.1:1/0", 1, "stopping the crawl: Redis unreachable for "),
    ("redis://nobody:wrong@127.0.0.1:6379/0", 1, "stopping the crawl: Redis refused the user name or password in REDIS_URL"),
    ("redis://127.0.0.1:notaport/0", 2, "error: bad REDIS_URL 'redis://127.0.0.1:notaport/0'"),
])
def test_redis_down_refusing_or_misnamed_at_start_is_one_line(crawled, tmp_path, url, status, says):
    job_dir = JobDir(topics=crawled.topics, data=tmp_path / "data", name=crawled.name)
    started = time.monotonic()
    result = job_dir.run_crawl("-s", f"REDIS_URL={url}", "-s", "COMBINE_OUTAGE_PATIENCE=1")
    assert result.returncode == status, result.stderr[-3000:]
    assert says in result.stderr and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert time.monotonic() - started < 60


@pytest.mark.services
def test_a_mysql_table_dropped_mid_crawl_stops_the_crawl_naming_it(tmp_path):
    hosts = [f"127.0.0.{n}" for n in range(94, 97)]
    port = free_port(hosts[0])
    sites = hosts_web(hosts, port, 30)
    job_dir = JobDir(topics=tmp_path / "topics", data=tmp_path / "data", name=f"drop{uuid.uuid4().hex[:8]}")
    prefix = table_prefix(job_dir.name)
    try:
        with LoopbackWeb(sites, port=port) as served:
            job_dir.write("WaitIntervalHost = 0.1\nAllowPrivateAddresses = 1\n", TOPIC, [served.url(hosts[0])])
            crawl = start(harvester_command(job_dir, None, f"MYSQL_URL={MYSQL_URL}"), tmp_path / "crawl.log")
            wait_for(lambda: len(served.hits) >= 10 or crawl.poll() is not None, 60, "10 fetches")
            with mysql_admin() as db:
                db.cursor().execute(f"DROP TABLE `{prefix}record_urls`")
            crawl.wait(timeout=60)
        log = (tmp_path / "crawl.log").read_text()
        assert crawl.returncode == 1, log[-3000:]
        assert "stopping the crawl: " in log and "a table of the job is missing" in log, log[-3000:]
        with mysql_admin() as db:
            cursor = db.cursor()
            cursor.execute(f"SELECT COUNT(*) FROM `{prefix}records`")
            assert cursor.fetchone()[0] > 0  # what was stored stays
    finally:
        drop_mysql_tables(prefix)


def test_a_records_file_locked_by_another_process_is_waited_for(crawled, tmp_path, web):
    job_dir = JobDir(topics=crawled.topics, data=tmp_path / "data", name=crawled.name)
    (job_dir.data / job_dir.name).mkdir(parents=True)
    locker = sqlite3.connect(job_dir.data / job_dir.name / "records.sqlite", isolation_level=None, check_same_thread=False)
    locker.execute("BEGIN EXCLUSIVE")
    release = threading.Timer(3, lambda: locker.execute("ROLLBACK"))
    release.start()
    try:
        job_dir.crawl()
    finally:
        release.join()
        locker.close()
    urls = stored_urls(job_dir)
    assert len(urls) == len(set(urls)) == len(web.sites_expected)


def test_two_crawls_of_one_sqlite_job_at_once_store_every_page_once(tmp_path):
    hosts = [f"127.0.0.{n}" for n in range(97, 101)]
    port = free_port(hosts[0])
    sites = hosts_web(hosts, port, 10)
    job_dir = JobDir(topics=tmp_path / "topics", data=tmp_path / "data")
    with LoopbackWeb(sites, port=port) as served:
        job_dir.write("WaitIntervalHost = 0.2\nAllowPrivateAddresses = 1\n", TOPIC, [served.url(hosts[0])])
        command = harvester_command(job_dir, None)
        crawls = [start(command, tmp_path / f"crawl{n}.log") for n in range(2)]
        for crawl in crawls:
            crawl.wait(timeout=120)
        fetched = page_fetches(list(served.hits))
    for n, crawl in enumerate(crawls):
        text = (tmp_path / f"crawl{n}.log").read_text()
        assert crawl.returncode == 0 and "Traceback" not in text, text[-3000:]
    assert set(fetched) == expected_urls(sites)
    assert max(fetched.values()) == 1  # the frontier's leases keep the two apart
    urls = stored_urls(job_dir)
    assert len(urls) == len(set(urls)) == len(expected_urls(sites))


def test_a_crawl_stopped_by_two_sigterms_loses_nothing(tmp_path):
    hosts = [f"127.0.0.{n}" for n in range(101, 104)]
    port = free_port(hosts[0])
    sites = hosts_web(hosts, port, 20)
    for site in sites.values():
        for page in site.values():
            page.delay = 0.3  # a fetch is always in flight, so the first SIGTERM has to wait and the second forces
    job_dir = JobDir(topics=tmp_path / "topics", data=tmp_path / "data")
    with LoopbackWeb(sites, port=port) as served:
        job_dir.write("WaitIntervalHost = 0.01\nAllowPrivateAddresses = 1\n", TOPIC, [served.url(hosts[0])])
        command = harvester_command(job_dir, None, "COMBINE_LEASE_SECONDS=1")
        first = start(command, tmp_path / "first.log")
        wait_for(lambda: len(served.hits) >= 15 or first.poll() is not None, 60, "15 fetches")
        first.send_signal(signal.SIGTERM)
        time.sleep(0.05)
        first.send_signal(signal.SIGTERM)  # Scrapy: "forcing unclean shutdown"
        first.wait(timeout=60)
        second = start(command, tmp_path / "second.log")
        second.wait(timeout=120)
        fetched = page_fetches(list(served.hits))
    assert "unclean shutdown" in (tmp_path / "first.log").read_text()
    assert second.returncode == 0, (tmp_path / "second.log").read_text()[-3000:]
    assert set(fetched) == expected_urls(sites)
    urls = stored_urls(job_dir)
    assert len(urls) == len(set(urls)) == len(expected_urls(sites))


def test_a_stale_pid_file_is_removed_and_never_signalled(crawled, tmp_path):
    job_dir = copy_of(crawled, tmp_path)
    sleeper = subprocess.Popen(["sleep", "60"])  # a live process with the pid, but not the harvester that wrote it
    try:
        pids = job_dir.data / job_dir.name / "harvesters"
        pids.mkdir(parents=True, exist_ok=True)
        (pids / f"{sleeper.pid}.pid").write_text(f"{sleeper.pid} 1\n")  # start time 1: long gone
        status = job_dir.scrapy("status", job_dir.name)
        assert "harvesters:      0 running here" in status.stdout, status.stdout + status.stderr
        stop = job_dir.scrapy("stop", job_dir.name)
        assert stop.stdout == f"job {job_dir.name}: no harvester is running\n"
        assert sleeper.poll() is None and not list(pids.glob("*.pid"))
    finally:
        sleeper.kill()


@pytest.mark.services
def test_a_redis_db_holding_another_jobs_keys_is_shared_safely(tmp_path, web):
    other, mine = f"other-{uuid.uuid4().hex[:8]}", f"mine-{uuid.uuid4().hex[:8]}"
    server = redis.Redis.from_url(REDIS_URL)
    job_dir = JobDir(topics=tmp_path / "topics", data=tmp_path / "data", name=mine)
    try:
        theirs = RedisFrontier.from_url(REDIS_URL, other)
        theirs.mark([(f"http://other.test/{n}", "other.test", 0.0) for n in range(7)])
        theirs.close()
        server.set(f"combine:{{{other}}}:frontier", "another job's marker")
        job_dir.write("WaitIntervalHost = 0.01\nAllowPrivateAddresses = 1\n", TOPIC, [web.url(HOSTS[0])])
        job_dir.crawl("-s", f"REDIS_URL={REDIS_URL}")
        assert redis_counts(REDIS_URL, other) == {"urls": 7, "marked": 7, "done": 0}
        assert server.get(f"combine:{{{other}}}:frontier") == b"another job's marker"
        assert redis_counts(REDIS_URL, mine)["done"] == len(web.sites_expected)
    finally:
        delete_job_keys(REDIS_URL, other)
        delete_job_keys(REDIS_URL, mine)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_the_wait_for_an_unreachable_redis_with_the_summary(crawled, tmp_path, signum):
    """The default patience is 600 s; a signal ends the wait at once, and later Redis commands are not waited for."""
    job_dir = JobDir(topics=crawled.topics, data=tmp_path / "data", name=crawled.name)
    port = free_port("127.0.0.1")   # nothing listens there
    log, out = tmp_path / "crawl.log", tmp_path / "crawl.out"
    with log.open("w") as stderr, out.open("w") as stdout:
        process = subprocess.Popen(harvester_command(job_dir, f"redis://127.0.0.1:{port}/0"), cwd=PROJECT,
                                   stdout=stdout, stderr=stderr)
    try:
        wait_for(lambda: "Redis unreachable" in log.read_text(), 60, "the wait for Redis")
        process.send_signal(signum)
        process.wait(timeout=30)
    finally:
        process.kill()
        process.wait()
    text = log.read_text()
    assert process.returncode == 1, text[-3000:]
    assert re.search(r"waited \d+ s of 600, retry 1 in [\d.]+ s \(Ctrl-C stops\)", text)
    assert f"Redis unreachable, and {signum.name} came while waiting for it" in text
    assert text.count("retry 1 in") == 1                      # the closing's Redis commands did not wait again
    assert "== combine-scrapy: job t finished (frontier_unreachable) ==" in out.read_text()
    assert not list((job_dir.data / job_dir.name).rglob("*.pid"))   # not listed as running


@pytest.mark.services
def test_the_harvesters_of_a_sigkilled_harvest_command_stop_too(tmp_path, web):
    """Without a supervisor nothing would report or stop them: the kernel sends each one SIGTERM."""
    job_dir = JobDir(topics=tmp_path / "topics", data=tmp_path / "data", name=f"orphans-{uuid.uuid4().hex[:8]}")
    job_dir.write("WaitIntervalHost = 5\nAllowPrivateAddresses = 1\n", TOPIC, [web.url(host) for host in HOSTS])
    command = [*SCRAPY, "harvest", job_dir.name, "-n", "2", "--log-dir", str(tmp_path / "logs"),
               "-s", f"COMBINE_TOPICS_DIR={job_dir.topics}", "-s", f"COMBINE_DATA_DIR={job_dir.data}",
               "-s", f"REDIS_URL={REDIS_URL}"]
    harvest = subprocess.Popen(command, cwd=PROJECT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    harvesters: list[int] = []
    try:
        harvesters = wait_for(lambda: len(children(harvest.pid)) == 2 and children(harvest.pid), 60, "two harvesters")
        logs = [tmp_path / "logs" / f"harvester-{n}.log" for n in (1, 2)]
        wait_for(lambda: all(log.exists() and "Spider opened" in log.read_text() for log in logs), 60, "both to open")
        harvest.kill()
        harvest.wait()
        wait_for(lambda: not any(alive(pid) for pid in harvesters), 60, "the harvesters to stop")
        assert all("Received SIGTERM" in log.read_text() for log in logs)
    finally:
        for pid in harvesters:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        delete_job_keys(REDIS_URL, job_dir.name)


def children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
