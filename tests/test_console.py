"""`scrapy serve`: the console page driven in headless Chromium during a real crawl, the JSON API and its
token, and `scrapy pause` / `scrapy resume` on the SQLite and the Redis frontier."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from conftest import PROJECT, JobDir, free_port
from console_helpers import chain_web, serve, write_job
from crawling import crawl_command
from harvesters import delete_job_keys, wait_for
from PIL import Image
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from test_commands import scrapy

from combine_scrapy.frontier.redis import RedisFrontier
from combine_scrapy.operations.console.app import host_name
from combine_scrapy.operations.sampleweb import LoopbackWeb

pytestmark = pytest.mark.crawl

REDIS_URL = "redis://127.0.0.1:6379/0"
HOSTS = ["127.0.0.2", "127.0.0.3"]
#: Where the browser test also saves its screenshot of the console (the README's docs/console.png), when set.
SCREENSHOT_COPY = os.environ.get("COMBINE_CONSOLE_SCREENSHOT")


def call(url: str, method: str = "GET", body: dict | None = None, token: str | None = None) -> tuple[int, dict, dict]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, method=method, headers=headers,
                                     data=None if body is None else json.dumps(body).encode())
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read()), dict(response.headers)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read()), dict(e.headers)


def start_harvester(job_dir: JobDir, log: Path, *settings: str) -> subprocess.Popen:
    return subprocess.Popen(
        crawl_command(job_dir, *settings), cwd=PROJECT, stdout=log.open("w"), stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
    )


@pytest.fixture
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,1400", "--no-first-run", "--disable-extensions"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def number(driver, element_id: str) -> int:
    text = driver.find_element(By.ID, element_id).text
    return int(text) if text.isdigit() else -1


def colour_pixels(image: Image.Image, rgb: tuple[int, int, int], tolerance: int = 30) -> int:
    return sum(
        count for count, pixel in image.convert("RGB").getcolors(maxcolors=1 << 24)
        if all(abs(a - b) <= tolerance for a, b in zip(pixel, rgb))
    )


def test_console_follows_a_crawl_searches_it_and_pauses_resumes_and_stops_it(job_dir, browser, tmp_path):
    port = free_port()
    with LoopbackWeb(chain_web(HOSTS, port, pages=150), port=port) as web:  # outlasts the test until "stop"
        write_job(job_dir, [web.url(host) for host in HOSTS], wait=0.4)
        harvester = start_harvester(job_dir, tmp_path / "harvester.log")
        served = serve(job_dir)
        try:
            browser.get(served.url + "/")
            first = wait_for(lambda: number(browser, "fetched") > 0 and number(browser, "fetched"), timeout=30, what="pages fetched")
            wait_for(lambda: number(browser, "fetched") > first, timeout=30, what="the counter to move without a reload")
            wait_for(lambda: browser.find_element(By.ID, "state").text == "running", timeout=30, what="the harvester shown running")
            # the harvester's row names a URL of the web (in flight, or its last fetch, which may be on either host)
            wait_for(lambda: any(f"//{host}:" in browser.find_element(By.ID, "harvesters").text for host in HOSTS),
                     timeout=30, what="what it fetches")
            assert browser.find_elements(By.CSS_SELECTOR, "#plot-relevant polyline.series")
            assert browser.find_elements(By.CSS_SELECTOR, "#plot-rate polyline.series")

            browser.get(served.url + "/search")
            browser.find_element(By.ID, "q").send_keys("marker127002x1")
            browser.find_element(By.CSS_SELECTOR, "form.search button").click()
            result = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#results a.title"), timeout=30, what="a search result")
            assert result[0].text == "Carnivorous plants 127.0.0.2 page 1"
            assert "marker127002x1" in browser.find_element(By.CSS_SELECTOR, "#results mark").text
            result[0].click()
            wait_for(lambda: browser.find_elements(By.ID, "urls"), timeout=30, what="the record page")
            assert browser.find_element(By.ID, "urls").text.split("\n") == [web.url("127.0.0.2", "/p1.html")]
            assert "CP.Nepenthes" in browser.find_element(By.ID, "classes").text or \
                "CP.Drosera" in browser.find_element(By.ID, "classes").text
            assert web.url("127.0.0.2", "/p2.html") in browser.find_element(By.ID, "links-out").text

            browser.get(served.url + "/")
            browser.find_element(By.ID, "token").send_keys(served.token)
            browser.find_element(By.ID, "pause").click()
            wait_for(lambda: browser.find_element(By.ID, "state").text == "paused", timeout=30, what="the page to show paused")
            wait_for(lambda: "paused" in browser.find_element(By.ID, "harvesters").text, timeout=30, what="the harvester paused")
            time.sleep(1.0)  # the fetches already in flight finish
            before = len(web.hits)
            time.sleep(3.0)
            assert len(web.hits) == before, "a paused harvester fetched"
            assert harvester.poll() is None, "a paused harvester must wait, not end"

            browser.find_element(By.ID, "resume").click()
            wait_for(lambda: len(web.hits) > before, timeout=15, what="fetches after resume")
            wait_for(lambda: browser.find_element(By.ID, "state").text == "running", timeout=30, what="the page to show running")

            wait_for(lambda: number(browser, "fetched") >= 30, timeout=30, what="pages for the plots")
            time.sleep(2.5)  # one more poll: the tables and plots filled
            shot = tmp_path / "console.png"
            browser.save_screenshot(str(shot))
            if SCREENSHOT_COPY:
                shutil.copy(shot, SCREENSHOT_COPY)

            browser.find_element(By.ID, "stop").click()  # the token is still in the field
            assert harvester.wait(timeout=30) == 0
            assert "finished (shutdown)" in (tmp_path / "harvester.log").read_text()
        finally:
            if harvester.poll() is None:
                harvester.kill()
            served.stop()

    image = Image.open(shot)
    assert image.size[0] >= 1200 and image.size[1] >= 1000
    assert colour_pixels(image, (214, 39, 40)) > 200, "no relevant-pages curve drawn"
    assert colour_pixels(image, (31, 119, 180)) > 200, "no harvest-rate curve drawn"
    assert len(image.convert("L").getcolors(maxcolors=1 << 16)) > 50, "a blank screenshot"


def test_api_answers_and_actions_need_the_token(job_dir):
    port = free_port()
    with LoopbackWeb(chain_web(HOSTS, port, pages=3), port=port) as web:
        write_job(job_dir, [web.url(host) for host in HOSTS], wait=0.05)
        job_dir.crawl()
    served = serve(job_dir)
    try:
        with urllib.request.urlopen(served.url + "/", timeout=30) as response:
            page = response.read().decode()
            assert "default-src 'self'" in response.headers["Content-Security-Policy"]
        assert "http://" not in page and "https://" not in page  # nothing loaded from elsewhere
        status, endpoints, _ = call(served.url + "/api")
        assert status == 200 and "GET /api/status" in endpoints["endpoints"]

        status, body, _ = call(served.url + "/api/status")
        with job_dir.records() as db:
            stored = db.execute("SELECT COUNT(*) FROM records").fetchone()[0]
        pages = 2 * (1 + 3 + 1)  # each host: its home page, 3 pages, 1 off-topic page
        assert status == 200 and body["records"] == stored and body["fetched"] == pages and body["paused"] is False
        assert body["relevant"] == pages - 2 and body["curve"][-1][1:] == [pages, pages - 2]
        assert set(body["frontier"]) == {"urls", "marked_ready", "marked_locked", "done", "hosts"}  # console.js reads them
        assert body["frontier"]["hosts"] == len(HOSTS) and body["frontier"]["done"] == pages
        _, hosts, _ = call(served.url + "/api/hosts")
        assert {row["host"] for row in hosts} == {f"{host}:{port}" for host in HOSTS}

        _, hits, _ = call(served.url + "/api/search?q=sundews&class=CP.Drosera&host=127.0.0.3")
        assert hits and all("CP.Drosera" in hit["classes"] and "127.0.0.3" in hit["url"] for hit in hits)
        _, everything, _ = call(served.url + "/api/search?q=sundews")
        assert len(everything) > len(hits)
        assert call(served.url + "/api/search?q=sundews&since=someday")[0] == 400
        _, newest, _ = call(served.url + "/api/search?class=CP&limit=2")
        assert len(newest) == 2
        _, record, _ = call(served.url + f"/api/records/{hits[0]['key']}")
        assert record["urls"] == hits[0]["urls"] and record["links_in"]
        assert call(served.url + "/api/records/NOPE")[0] == 404
        _, listed, _ = call(served.url + "/api/records?limit=100")
        assert len(listed) == stored

        status, body, headers = call(served.url + "/api/pause", "POST")
        assert status == 401 and headers["WWW-Authenticate"] == "Bearer"
        assert call(served.url + "/api/pause", "POST", token="wrong-token")[0] == 401
        assert call(served.url + "/api/pause", "POST", token=served.token)[1] == {"paused": True}
        with job_dir.frontier() as db:
            assert db.execute("SELECT value FROM control WHERE name = 'paused'").fetchone() == ("1",)
        resumed = scrapy(job_dir, "resume", "t")
        assert resumed.stdout == "job t: resumed; 0 harvesters running here\n"
        assert call(served.url + "/api/status")[1]["paused"] is False

        new_url = web.url(HOSTS[0], "/extra.html")
        status, seeded, _ = call(served.url + "/api/seed", "POST", {"urls": [new_url, "mailto:a@b.example"]}, served.token)
        assert status == 200 and seeded["new"] == 1 and seeded["refused"] == {"scheme": 1}
        assert call(served.url + "/api/seed", "POST", {"urls": "not a list"}, served.token)[0] == 400
        for priority, problem in (("nan", "is not a finite number"), (float("inf"), "is not a finite number"),
                                  (1e308, "is out of range"), (True, "is not a number")):
            status, answer, _ = call(served.url + "/api/seed", "POST", {"urls": [new_url + "?p"], "priority": priority},
                                     served.token)
            assert status == 400 and problem in answer["error"], (priority, answer)
        assert call(served.url + "/api/stop", "POST", {}, served.token)[1] == {"stopping": []}
        for host, status in (("rebound.example", 421), ("evil.example:80", 421), ("localhost:1", 200)):
            try:
                with urllib.request.urlopen(urllib.request.Request(served.url + "/api/status", headers={"Host": host}),
                                            timeout=30) as response:
                    answered = response.status
            except urllib.error.HTTPError as e:
                answered = e.code
            assert answered == status, host
    finally:
        served.stop()


@pytest.mark.services
def test_pause_and_resume_reach_every_harvester_through_the_redis_frontier(job_dir, tmp_path):
    job_dir.name = f"pause{uuid.uuid4().hex[:8]}"
    settings = ["-s", f"REDIS_URL={REDIS_URL}"]
    frontier = RedisFrontier.from_url(REDIS_URL, job_dir.name)
    port = free_port()
    try:
        with LoopbackWeb(chain_web(HOSTS, port, pages=2), port=port) as web:
            write_job(job_dir, [web.url(host) for host in HOSTS], wait=0.05)
            paused = scrapy(job_dir, "pause", job_dir.name, *settings)
            assert paused.stdout == f"job {job_dir.name}: paused; 0 harvesters running here\n", paused.stderr
            assert frontier.paused()
            assert scrapy(job_dir, "pause", job_dir.name, *settings).stdout.startswith(
                f"job {job_dir.name}: paused (it already was)")
            harvesters = [start_harvester(job_dir, tmp_path / f"h{i}.log", *settings) for i in range(2)]
            try:
                wait_for(lambda: all("paused: no new URL is taken" in (tmp_path / f"h{i}.log").read_text()
                                     for i in range(2)), timeout=60, what="both harvesters to see the pause")
                time.sleep(2)
                assert web.hits == [] and all(h.poll() is None for h in harvesters)
                assert scrapy(job_dir, "resume", job_dir.name, *settings).stdout.startswith(f"job {job_dir.name}: resumed")
                assert not frontier.paused()
                for harvester in harvesters:
                    assert harvester.wait(timeout=60) == 0
            finally:
                for harvester in harvesters:
                    if harvester.poll() is None:
                        harvester.kill()
            pages = {(hit.host, hit.path) for hit in web.hits if hit.path != "/robots.txt"}
            assert pages == {(host, path) for host in HOSTS for path in ("/", "/p0.html", "/off0.html", "/p1.html")}
    finally:
        delete_job_keys(REDIS_URL, job_dir.name)
        frontier.close()


@pytest.mark.parametrize("header, name", [
    ("127.0.0.1:8080", "127.0.0.1"), ("[::1]:8080", "::1"), ("[::1]", "::1"), ("LocalHost", "localhost"),
    ("example.org.:80", "example.org"), ("evil.example", "evil.example"),
])
def test_the_name_in_a_host_header(header, name):
    assert host_name(header) == name
