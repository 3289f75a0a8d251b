"""Rendering pages built by their scripts (combine_scrapy/render/): detection, the browser's guard, the job's settings,
then crawls of a loopback site whose topical pages exist only after their scripts run (tests/renderweb.py)."""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from conftest import JobDir
from crawling import PROJECT, crawl_command, crawl_environment
from renderweb import TOPIC, TOPICAL_TITLES, render_site

from combine_scrapy.access.addresses import AddressPolicy
from combine_scrapy.access.urls import UrlRule, UrlRules
from combine_scrapy.job import JobConfigError, load_job
from combine_scrapy.operations.sampleweb import LoopbackWeb, Page
from combine_scrapy.render.detect import (
    FRUITLESS_RENDERS,
    LINKS_IN_SCRIPTS,
    LITTLE_TEXT,
    NOSCRIPT,
    SPA_ROOT,
    HostRenderLedger,
    brought_something,
    page_shape,
    script_built,
)
from combine_scrapy.render.guard import OTHER_PORT, RESOURCE_TYPE, SCHEME, URL_RULES, static_refusal

ARTICLE = (
    "<html><head><title>Sundews</title><script src='/analytics.js'></script></head><body>"
    "<h1>Sundews</h1><p>" + "Sundews are carnivorous plants that catch insects with sticky glands. " * 10 + "</p>"
    "<a href='/pitchers.html'>Pitcher plants</a></body></html>"
)


# --- detection (pure) --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("html, sign", [
    ("<html><body><div id='root'></div><script src='/main.js'></script></body></html>", SPA_ROOT),
    ("<html><body><div id='app'>  </div><script src='/app.js'></script></body></html>", SPA_ROOT),
    ("<html ng-app='shop'><body><script src='/angular.js'></script></body></html>", SPA_ROOT),
    ("<html><body><app-root></app-root><script src='/main.js'></script></body></html>", SPA_ROOT),
    ("<html><body><p>" + "x " * 300 + "</p><noscript>You need to enable JavaScript to run this app.</noscript>"
     "<script src='/a.js'></script></body></html>", NOSCRIPT),
    ("<html><body><p>Loading...</p><script>" + "var data = 1;" * 500 + "</script></body></html>", LITTLE_TEXT),
    ("<html><body><p>" + "Carnivorous plants of the world. " * 20 + "</p>"
     "<script>var menu = [{href: '/sundews.html'}, {href: '/pitchers.html'}];</script></body></html>", LINKS_IN_SCRIPTS),
])
def test_a_script_built_page_shows_its_sign(html, sign):
    assert script_built(page_shape(html)) == sign


@pytest.mark.parametrize("html", [
    ARTICLE,
    # A page without scripts is what it is, however little it says.
    "<html><body><div id='root'></div><p>Hi</p></body></html>",
    "",
    # A filled SPA root (server-side rendered) needs no browser.
    "<html><body><div id='root'><p>" + "Carnivorous plants. " * 30 + "<a href='/a'>a</a></p></div>"
    "<script src='/hydrate.js'></script></body></html>",
])
def test_a_page_whose_text_is_there_is_not_rendered(html):
    assert script_built(page_shape(html)) is None


def test_a_render_brings_something_when_it_adds_links_or_text():
    shell = page_shape("<html><body><div id='root'></div><script src='/a.js'></script></body></html>")
    assert brought_something(shell, page_shape(ARTICLE))
    assert not brought_something(shell, shell)
    assert not brought_something(page_shape(ARTICLE), page_shape(ARTICLE.replace("</body>", "<p>one more line</p></body>")))
    # A rendered DOM whose scripts removed themselves is measured all the same.
    no_scripts = ARTICLE.replace("<script src='/analytics.js'></script>", "")
    assert page_shape(no_scripts).scripts == 0 and page_shape(no_scripts).text_length == 0
    assert brought_something(shell, page_shape(no_scripts, skip_without_scripts=False))


def test_a_host_whose_renders_bring_nothing_is_given_up_after_some_in_a_row():
    ledger = HostRenderLedger()
    for _ in range(FRUITLESS_RENDERS - 1):
        assert not ledger.record("a.test", fruitful=False)
    assert not ledger.record("a.test", fruitful=True)  # one that brought something starts the count again
    verdicts = [ledger.record("a.test", fruitful=False) for _ in range(FRUITLESS_RENDERS)]
    assert verdicts == [False] * (FRUITLESS_RENDERS - 1) + [True]
    assert not ledger.renders("a.test") and ledger.renders("b.test")
    assert not ledger.record("a.test", fruitful=False)  # given up once, said once


# --- what the browser may load (pure) ----------------------------------------------------------------------------

PAGE = "http://127.0.0.2:8931/index.html"
SEED_POLICY = AddressPolicy(endpoints=frozenset({("127.0.0.2", 8931)}))


@pytest.mark.parametrize("url, resource_type, reason", [
    ("http://127.0.0.2:8931/app.js", "script", None),
    ("http://127.0.0.2:8931/api/pages.json", "fetch", None),
    ("data:text/plain,hello", "fetch", None),
    ("http://127.0.0.2:8931/photo.jpg", "image", RESOURCE_TYPE),
    ("http://127.0.0.2:8931/font.woff2", "font", RESOURCE_TYPE),
    ("http://127.0.0.2:8931/clip.webm", "media", RESOURCE_TYPE),
    ("http://127.0.0.2:6379/", "fetch", OTHER_PORT),              # another port of the seed's host
    ("http://127.0.0.3:8931/steal", "xhr", "private_address"),    # a loopback host the job does not name
    ("http://2130706433:8931/x", "fetch", "private_address"),     # the seed's host spelled otherwise: not named
    ("http://127.0.0.2:8931/cgi-bin/x", "fetch", URL_RULES),      # Combine's exclude list
    ("ftp://127.0.0.2/file", "fetch", SCHEME),
    ("http://public.example/app.js", "script", None),             # another host the rules allow
])
def test_the_browser_loads_only_what_the_crawler_would(url, resource_type, reason):
    assert static_refusal(url, resource_type, PAGE, UrlRules(), SEED_POLICY) == reason


def test_another_port_of_a_public_page_host_is_another_server():
    page = "http://docs.example/index.html"
    assert static_refusal("http://docs.example:8080/admin", "fetch", page, UrlRules(), AddressPolicy()) == OTHER_PORT
    assert static_refusal("https://docs.example/app.js", "script", page, UrlRules(), AddressPolicy()) == OTHER_PORT
    assert static_refusal("http://docs.example:80/app.js", "script", page, UrlRules(), AddressPolicy()) is None


def test_the_allow_rules_bound_the_browser_too():
    rules = UrlRules(allow=(UrlRule.parse(r"HOST: ^127\.0\.0\.2$"),))
    assert static_refusal("http://public.example/app.js", "script", PAGE, rules, SEED_POLICY) == URL_RULES


# --- settings --------------------------------------------------------------------------------------------------


def write_job(tmp_path, config: str):
    directory = tmp_path / "j"
    directory.mkdir(exist_ok=True)
    (directory / "combine.cfg").write_text(config)
    (directory / "topicdefinition.txt").write_text(TOPIC)
    (directory / "seeds.txt").write_text("http://127.0.0.2:8931/\n")
    return directory


def test_rendering_defaults_to_auto_on_every_host(tmp_path):
    write_job(tmp_path, "")
    rendering = load_job("j", tmp_path).rendering
    assert (rendering.mode, rendering.max_pages, rendering.max_pages_per_host, rendering.timeout) == ("auto", 4, 1, 30)
    assert rendering.renders("http://any.example/", "any.example")


def test_render_rules_name_the_hosts_rendered(tmp_path):
    write_job(tmp_path, "Render = ALWAYS\nRenderTimeout = 5\n<render>\nHOST: \\.docs\\.example$\n</render>\n")
    rendering = load_job("j", tmp_path).rendering
    assert rendering.mode == "always" and rendering.timeout == 5
    assert rendering.renders("http://www.docs.example/", "www.docs.example")
    assert not rendering.renders("http://other.example/", "other.example")
    write_job(tmp_path, "Render = never\n")
    assert not load_job("j", tmp_path).rendering.renders("http://www.docs.example/", "www.docs.example")


@pytest.mark.parametrize("config, line, message", [
    ("# a comment\nRender = sometimes\n", 2, "Render: expected one of never, auto, always, got 'sometimes'"),
    ("RenderMaxPages = 0\n", 1, "RenderMaxPages: expected a whole number from 1"),
    ("RenderTimeout = 0\n", 1, "RenderTimeout: expected a number of seconds > 0"),
    ("<render>\nHOST: http://x\n</render>\n", 2, "bad render rule 'HOST: http://x'"),
    ("<render>\nURL (\n</render>\n", 2, "bad render rule 'URL ('"),
])
def test_a_bad_render_setting_names_its_file_and_line(tmp_path, config, line, message):
    directory = write_job(tmp_path, config)
    with pytest.raises(JobConfigError) as raised:
        load_job("j", tmp_path)
    assert str(raised.value).startswith(f"{directory / 'combine.cfg'}:{line}: {message}")


# --- crawls of a site built by its scripts -----------------------------------------------------------------------

SEED = "127.0.0.2"
OTHER = "127.0.0.3"


@pytest.fixture
def render_web():
    """The site on SEED, with two canaries its seed page's script asks for: another port of SEED, and OTHER."""
    with LoopbackWeb({SEED: {"/steal": Page("stolen")}}) as seed_port_canary, \
            LoopbackWeb({OTHER: {"/steal": Page("stolen")}}) as other_host_canary:
        canaries = (seed_port_canary.url(SEED, "/steal"), other_host_canary.url(OTHER, "/steal"))
        with LoopbackWeb({SEED: render_site(canaries)}) as web:
            yield web, (seed_port_canary, other_host_canary)


def titles(job_dir) -> set[str]:
    with job_dir.records() as db:
        return {title for (title,) in db.execute("SELECT title FROM records")}


def warc_records(job_dir) -> list[str]:
    """The WARC headers of every record the crawl archived, in order."""
    text = b"".join(gzip.open(path).read() for path in sorted((job_dir.data / job_dir.name / "warc").glob("*.warc.gz")))
    return re.findall(r"WARC/1\.1\r\n(.*?)\r\n\r\n", text.decode("utf-8", "replace"), re.S)


@pytest.mark.crawl
def test_a_site_built_by_scripts_is_found_only_when_rendered(render_web, tmp_path):
    web, canaries = render_web
    found = {}
    for mode in ("never", "auto"):
        job_dir = JobDir(topics=tmp_path / mode / "topics", data=tmp_path / mode / "data")
        job_dir.write(f"WaitIntervalHost = 0\nRender = {mode}\nsaveWARC = 1\n", TOPIC, [web.url(SEED)])
        result = job_dir.crawl()
        found[mode] = (titles(job_dir), result.stats, job_dir)
    never_titles, never_stats, _ = found["never"]
    auto_titles, stats, auto_dir = found["auto"]
    assert never_titles.isdisjoint(TOPICAL_TITLES)
    assert not any(key.startswith(("render/", "playwright/")) for key in never_stats)
    assert set(TOPICAL_TITLES) <= auto_titles
    # Each page rendered once, by one browser started for the crawl.
    assert stats["render/auto"] == 3 and stats["playwright/browser_count"] == 1
    # The browser left the canaries, the image and nothing else it was not allowed alone.
    assert [canary.hits for canary in canaries] == [[], []]
    assert stats["render/blocked/other_port"] == 1 and stats["render/blocked/private_address"] == 1
    assert "/photo.jpg" not in {hit.path for hit in web.hits_for(SEED)}
    assert stats["render/blocked/resource_type"] >= 1
    # The WARC keeps each HTTP response, and each render as a conversion record that refers to it.
    records = warc_records(auto_dir)
    responses = {re.search(r"WARC-Record-ID: (\S+)", r).group(1): r for r in records if "WARC-Type: response" in r}
    conversions = [r for r in records if "WARC-Type: conversion" in r]
    assert len(conversions) == 3 and stats["warc/conversions"] == 3
    for conversion in conversions:
        assert "WARC-Crawler-Rendered: headless Chromium" in conversion
        referred = responses[re.search(r"WARC-Refers-To: (\S+)", conversion).group(1)]
        target = re.search(r"WARC-Target-URI: (\S+)", conversion).group(1)
        assert f"WARC-Target-URI: {target}" in referred
    # Each record says whether its page was rendered, and scrapy export writes it.
    with auto_dir.records() as db:
        rendered = {title: bool(flag) for title, flag in db.execute("SELECT title, rendered FROM records")}
    assert {title for title, flag in rendered.items() if flag} == set(TOPICAL_TITLES)
    exported = [json.loads(line) for line in auto_dir.scrapy("export", auto_dir.name).stdout.splitlines()]
    assert {line["title"] for line in exported if line["rendered"]} == set(TOPICAL_TITLES)


@pytest.mark.crawl
def test_an_auto_crawl_of_a_site_that_needs_no_rendering_starts_no_browser(job_dir):
    article = Page(ARTICLE.replace("/pitchers.html", "/b.html"))
    with LoopbackWeb({SEED: {"/": article, "/b.html": Page(ARTICLE.replace("Sundews</title>", "Bog plants</title>"))}}) as web:
        job_dir.write("WaitIntervalHost = 0\nRender = auto\n", TOPIC, [web.url(SEED)])
        result = job_dir.crawl()
    assert result.stats["fetch/pages"] >= 2
    assert not any(key.startswith(("render/", "playwright/")) for key in result.stats)
    assert "scrapy-playwright" not in result.stderr and "Playwright" not in result.stderr


def test_only_a_job_that_renders_gets_the_render_handler(tmp_path):
    from scrapy.settings import Settings

    from combine_scrapy import render
    from combine_scrapy.settings import COMBINE_CHROMIUM

    settings = Settings({"COMBINE_CHROMIUM": COMBINE_CHROMIUM})
    write_job(tmp_path, "Render = never\n")
    assert render.crawl_settings(load_job("j", tmp_path), settings) == {}
    write_job(tmp_path, "Render = auto\nRenderMaxPages = 2\n")
    job = load_job("j", tmp_path)
    if os.access(COMBINE_CHROMIUM, os.X_OK):
        enabled = render.crawl_settings(job, settings)
        assert enabled[render.ENABLED] and enabled["PLAYWRIGHT_MAX_PAGES_PER_CONTEXT"] == 2
        assert enabled["DOWNLOAD_HANDLERS"]["https"] == "combine_scrapy.downloadhandlers.render.RenderDownloadHandler"
        assert enabled["PLAYWRIGHT_LAUNCH_OPTIONS"]["executable_path"] == COMBINE_CHROMIUM
    missing = Settings({"COMBINE_CHROMIUM": str(tmp_path / "no-chromium")})
    assert render.crawl_settings(job, missing) == {}


def descendants(pid: int) -> dict[int, str]:
    """The processes under ``pid`` (children, theirs, ...), with their command lines."""
    parents: dict[int, int] = {}
    commands: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
                commands[int(entry.name)] = (entry / "cmdline").read_text().replace("\0", " ")
            except (OSError, ValueError, IndexError):
                continue
    found, frontier = {}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, its_parent in parents.items():
            if its_parent == parent and child not in found:
                found[child] = commands[child]
                frontier.append(child)
    return found


def still_running(processes: dict[int, str]) -> list[str]:
    left = []
    for pid, command in processes.items():
        try:
            if (Path("/proc") / str(pid) / "cmdline").read_text().replace("\0", " ") == command:
                left.append(command[:200])
        except OSError:
            continue
    return left


@pytest.mark.crawl
def test_sigterm_mid_render_leaves_no_browser_running(job_dir):
    """A crawl stopped with SIGTERM while its browser renders ends, and takes the browser and its driver with it."""
    marker = f"--combine-test-render={uuid.uuid4().hex}"
    slow = Page(
        "<html><head><title>Loading</title></head><body><div id='root'></div>"
        "<script>fetch('/slow.json').then(function (r) { return r.text(); })"
        ".then(function (t) { document.getElementById('root').textContent = t; });</script></body></html>"
    )
    pages = {"/": slow, "/slow.json": Page('"carnivorous plants"', headers={"Content-Type": "application/json"}, delay=30)}
    with LoopbackWeb({SEED: pages}) as web:
        job_dir.write("WaitIntervalHost = 0\nRenderTimeout = 60\n", TOPIC, [web.url(SEED)])
        command = crawl_command(job_dir, "-s", f"COMBINE_CHROMIUM_ARGS={marker}")
        process = subprocess.Popen(command, cwd=PROJECT, env=crawl_environment(), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while not any(hit.path == "/slow.json" for hit in web.hits_for(SEED)):
                assert process.poll() is None and time.monotonic() < deadline, "the render never asked for /slow.json"
                time.sleep(0.2)
            running = descendants(process.pid)
            assert any(marker in command for command in running.values()), running
            process.send_signal(signal.SIGTERM)
            _, stderr = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                os.kill(process.pid, signal.SIGKILL)
                process.wait()
    assert still_running(running) == [], stderr[-3000:]
    assert "Closing browser" in stderr


def noscript_page(number: int, last: int) -> Page:
    """A page that asks for JavaScript though its text and links are all there: rendering it brings nothing."""
    links = "".join(f'<a href="/n{target}.html">next</a>' for target in (number + 1,) if target <= last)
    return Page(
        f"<html><head><title>Bog garden {number}</title></head><body><p>Carnivorous plants of bog garden {number}.</p>"
        f"{links}<noscript>This site works best with JavaScript enabled.</noscript>"
        "<script>fetch('/private/data.json').catch(function () {});</script></body></html>"
    )


@pytest.mark.crawl
def test_renders_that_bring_nothing_stop_and_a_failed_render_keeps_the_fetched_page(job_dir):
    """SEED's pages ask for JavaScript but are complete: after 3 renders its host is no longer rendered; their
    script asks for a URL robots.txt forbids, which the browser does not load. OTHER's page loads a script too
    slowly for RenderTimeout: the render fails, the fetched page goes on. Renders wait their host's turn."""
    pages = {f"/n{number}.html": noscript_page(number, 5) for number in range(1, 6)}
    pages["/"] = noscript_page(0, 5)
    pages["/robots.txt"] = Page("User-agent: *\nDisallow: /private/\n", headers={"Content-Type": "text/plain"})
    pages["/private/data.json"] = Page("{}", headers={"Content-Type": "application/json"})
    slow = {
        "/": Page("<html><head><title>Loading</title></head><body><div id='root'></div>"
                  "<p>Carnivorous plants, once the script loads.</p><script src='/slow.js'></script></body></html>"),
        "/slow.js": Page("document.title = 'Never';", headers={"Content-Type": "application/javascript"}, delay=8),
    }
    with LoopbackWeb({SEED: pages, OTHER: slow}) as web:
        job_dir.write("WaitIntervalHost = 0.5\nRenderTimeout = 1\n", TOPIC, [web.url(SEED), web.url(OTHER)])
        result = job_dir.crawl()
        seed_hits = web.hits_for(SEED)
    stats = result.stats
    assert stats["render/auto/noscript"] == 3 and stats["render/host_given_up"] == 1
    assert stats["render/skipped/given_up"] == 3  # the other three of SEED's six pages
    assert "/private/data.json" not in {hit.path for hit in seed_hits} and stats["render/blocked/robots"] == 3
    assert stats["render/failed/timeout"] == 1
    assert re.search(r"render of http://127\.0\.0\.3:\d+/ failed \(timeout\)", result.stderr)
    with job_dir.records() as db:  # the fetched page, not its render, was scored and stored
        assert db.execute("SELECT 1 FROM records WHERE title = 'Loading'").fetchone()
    documents = [hit.time for hit in seed_hits if hit.path.endswith(".html") or hit.path in ("/", "/robots.txt")]
    assert len(documents) == 1 + 6 + 3  # robots.txt, six pages, three renders
    assert all(b - a >= 0.5 * 0.95 for a, b in zip(documents, documents[1:]))


class Answers(Page):
    """Each request gets the next of ``answers`` (status, headers, body); the last one stays."""

    def __init__(self, *answers: tuple[int, dict[str, str], str]):
        super().__init__()
        self.answers = list(answers)

    def payload(self) -> bytes:
        self.status, self.headers, body = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return body.encode("utf-8")


@pytest.mark.crawl
def test_a_render_answered_429_holds_the_host_for_its_retry_after(job_dir):
    shell = ("<html><head><title>Carnivorous plants</title></head><body><div id='root'></div>"
             "<a href='/next.html'>next</a><script src='/app.js'></script></body></html>")
    html = {"Content-Type": "text/html; charset=utf-8"}
    site = {
        "/": Answers((200, html, shell), (429, {"Retry-After": "2", "Content-Type": "text/plain"}, "busy"), (200, html, shell)),
        "/app.js": Page("", headers={"Content-Type": "application/javascript"}),
        "/next.html": Page("<html><head><title>Next</title></head><body><p>carnivorous plants</p></body></html>"),
    }
    with LoopbackWeb({SEED: site}) as web:
        job_dir.write("WaitIntervalHost = 0\n", TOPIC, [web.url(SEED)])
        result = job_dir.crawl()
        hits = [(hit.path, hit.time) for hit in web.hits_for(SEED)]
    stats = result.stats
    assert stats["render/failed/status"] == 1 and stats["politeness/retry_after"] == 1
    assert [path for path, _ in hits] == ["/robots.txt", "/", "/", "/next.html"]
    assert hits[3][1] - hits[2][1] >= 2 * 0.95  # the render's Retry-After held the host
    with job_dir.records() as db:  # the fetched page was kept
        assert db.execute("SELECT 1 FROM records WHERE title = 'Carnivorous plants'").fetchone()


@pytest.mark.crawl
def test_render_always_renders_every_html_page_of_the_hosts_render_rules_name(job_dir):
    seed_pages = {"/": Page(ARTICLE.replace("/pitchers.html", "/b.html")), "/b.html": Page(ARTICLE.replace("Sundews</title>", "B</title>"))}
    other_pages = {"/": Page(ARTICLE.replace("Sundews</title>", "Other</title>").replace("/pitchers.html", "/c.txt")),
                   "/c.txt": Page("carnivorous plants", headers={"Content-Type": "text/plain"})}
    with LoopbackWeb({SEED: seed_pages, OTHER: other_pages}) as web:
        job_dir.write(f"WaitIntervalHost = 0\nRender = always\n<render>\nHOST: ^{re.escape(SEED)}$\n</render>\n", TOPIC,
                      [web.url(SEED), web.url(OTHER)])
        result = job_dir.crawl()
    stats = result.stats
    assert stats["render/always"] == 2 and stats["render/skipped/rules"] == 1  # OTHER's page; its text file is no HTML
    assert "render/auto" not in stats
