"""Benchmark: what rendering costs. Pages a minute, CPU and memory per rendered page against the same pages
fetched plainly, and what ``Render = auto`` costs on a site that needs no rendering.

    .venv/bin/python -m bench.render [--hosts 3] [--pages 40] [--rounds 3]

One loopback site, served twice on ``--hosts`` loopback addresses each: as
plain HTML (text and links in the page, one small inline script as most pages
have), and built by scripts (an empty ``<div id="root">`` that an inline
script fills with the same text and links). Each host has ``--pages`` pages
chained by links, all on the topic, so every crawl fetches all of them.

- ``plain, never`` and ``plain, auto``, alternated over ``--rounds`` rounds: the
  CPU a page of a crawl that never renders, and of one that looks at every
  page for the signs of a script-built page and finds none (goal: under 5%
  more). The detection's own CPU per page is measured apart too, without a
  crawl's noise;
- ``scripts, auto``: every page rendered in Chromium; pages a minute, CPU per
  page (the crawler, Playwright's driver and every Chromium process: all are
  the crawl's descendants, reaped before it ends), and the peak memory of the
  whole process tree (sampled) against ``plain, never``.

CPU times are the kernel's (``wait4``) for the crawl's process and its
descendants. Writes bench/results/render.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.children import ends_with_bench
from bench.report import RESULTS, environment, write_report
from bench.virtualweb.web import VirtualWeb
from combine_scrapy.operations.sampleweb import LoopbackWeb, Page
from combine_scrapy.render.detect import page_shape, script_built

PROJECT = Path(__file__).resolve().parent.parent
TOPIC = "100: carnivorous plants=CP\n"
FIRST_HOST = 11  # 127.0.0.11 and on: clear of the sample web's 127.0.0.2-4


def _content(page: int, pages: int) -> tuple[str, str, str]:
    """Title, paragraph text and links of one page."""
    title = f"Carnivorous plants, part {page}"
    text = (f"Part {page} on carnivorous plants: sundews, pitcher plants and flytraps catch insects "
            f"and digest them. ") * 12
    links = "".join(f'<li><a href="/p{target}.html">part {target}</a></li>' for target in (page + 1, page + 2) if target < pages)
    return title, text, links


def site(pages: int, scripted: bool) -> dict[str, Page]:
    made = {}
    for page in range(pages):
        title, text, links = _content(page, pages)
        if scripted:
            inner = json.dumps(f"<h1>{title}</h1><p>{text}</p><ul>{links}</ul>")
            body = (f'<div id="root"></div><script>document.title = {json.dumps(title)};'
                    f"document.getElementById('root').innerHTML = {inner};</script>")
            head = "<title>Loading</title>"
        else:
            body = f"<h1>{title}</h1><p>{text}</p><ul>{links}</ul><script>window.dataLayer = [];</script>"
            head = f"<title>{title}</title>"
        made["/" if page == 0 else f"/p{page}.html"] = Page(f"<!doctype html><html><head>{head}</head><body>{body}</body></html>")
    return made


@dataclass
class Run:
    label: str
    pages: int
    records: int
    rendered: int
    wall_seconds: float
    cpu_seconds: float
    peak_tree_bytes: int

    @property
    def cpu_ms_per_page(self) -> float:
        return 1000 * self.cpu_seconds / max(self.pages, 1)

    @property
    def pages_per_minute(self) -> float:
        return 60 * self.pages / self.wall_seconds


def _pss(pid: int) -> int:
    """Proportional set size of a process in bytes: its private memory and its share of what it shares."""
    try:
        for line in (Path("/proc") / str(pid) / "smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _tree_memory(root: int) -> int:
    """Memory of ``root`` and every process under it (PSS: Chromium's processes share much, counted once)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    total, frontier = _pss(root), [root]
    while frontier:
        parent = frontier.pop()
        for child, its_parent in parents.items():
            if its_parent == parent:
                total += _pss(child)
                frontier.append(child)
    return total


def crawl(label: str, web: LoopbackWeb, hosts: list[str], mode: str, timeout: float) -> Run:
    with tempfile.TemporaryDirectory(prefix="bench-render-") as directory:
        topics, data = Path(directory) / "topics", Path(directory) / "data"
        (topics / "r").mkdir(parents=True)
        # nearDuplicates = 0: the pages say much the same, and each must be a record of its own.
        (topics / "r" / "combine.cfg").write_text(f"WaitIntervalHost = 0\nRender = {mode}\nnearDuplicates = 0\n")
        (topics / "r" / "topicdefinition.txt").write_text(TOPIC)
        (topics / "r" / "seeds.txt").write_text("".join(web.url(host) + "\n" for host in hosts))
        command = [sys.executable, "-m", "scrapy", "crawl", "focused", "-a", "job=r", "-s", f"COMBINE_TOPICS_DIR={topics}",
                   "-s", f"COMBINE_DATA_DIR={data}", "-s", "COMBINE_HARVEST_LOG=0", "-s", "COMBINE_BEACON_INTERVAL=0"]
        with tempfile.TemporaryFile("w+") as err:
            started = time.monotonic()
            process = subprocess.Popen(command, cwd=PROJECT, stdout=subprocess.DEVNULL, stderr=err,
                                       env={**os.environ, "PYTHONPATH": str(PROJECT)}, preexec_fn=ends_with_bench())
            peak = 0
            while True:
                pid, status, usage = os.wait4(process.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() - started > timeout:
                    process.kill()
                    pid, status, usage = os.wait4(process.pid, 0)
                    break
                peak = max(peak, _tree_memory(process.pid))
                time.sleep(0.2)
            wall = time.monotonic() - started
            process.returncode = os.waitstatus_to_exitcode(status)
            err.seek(0)
            log = err.read()
        if process.returncode != 0:
            raise SystemExit(f"{label}: crawl failed ({process.returncode}):\n{log[-3000:]}")
        with sqlite3.connect(data / "r" / "records.sqlite") as db:
            records = db.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    pages = int(re.search(r"'fetch/pages': (\d+)", log).group(1))
    rendered = sum(int(n) for n in re.findall(r"'render/(?:auto|always)': (\d+)", log))
    return Run(label, pages, records, rendered, wall, usage.ru_utime + usage.ru_stime, peak)


def detection_ms(bodies: list[str], repeat: int = 5) -> float:
    """CPU milliseconds of page_shape + script_built per page."""
    started = time.process_time()
    for _ in range(repeat):
        for body in bodies:
            script_built(page_shape(body))
    return 1000 * (time.process_time() - started) / (repeat * len(bodies))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=3)
    parser.add_argument("--pages", type=int, default=40, help="pages per host")
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds of plain/never and plain/auto")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    if not shutil.which("chromium") and not Path("/usr/bin/chromium").exists():
        raise SystemExit("no chromium: scripts/setup.sh installs it")
    plain_hosts = [f"127.0.0.{FIRST_HOST + n}" for n in range(args.hosts)]
    script_hosts = [f"127.0.0.{FIRST_HOST + args.hosts + n}" for n in range(args.hosts)]
    plain_site, script_site = site(args.pages, scripted=False), site(args.pages, scripted=True)
    sites = {**{host: plain_site for host in plain_hosts}, **{host: script_site for host in script_hosts}}
    load_before = os.getloadavg()
    with LoopbackWeb(sites) as web:
        never: list[Run] = []
        auto: list[Run] = []
        for _ in range(args.rounds):
            never.append(crawl("plain, never", web, plain_hosts, "never", args.timeout))
            auto.append(crawl("plain, auto", web, plain_hosts, "auto", args.timeout))
        rendered = crawl("scripts, auto", web, script_hosts, "auto", args.timeout)
    load_after = os.getloadavg()
    detect = detection_ms([page.payload().decode("utf-8") for page in plain_site.values()])
    virtual = VirtualWeb(seed=1)
    virtual_pages = [virtual.render(page).decode("utf-8", "replace") for page in range(200)]
    detect_virtual = detection_ms(virtual_pages)
    # Most pages of the web carry a script (analytics, a menu); the virtual web's carry none.
    detect_scripted = detection_ms([page.replace("</head>", "<script>window.dataLayer = [];</script></head>", 1) for page in virtual_pages])
    throughput = RESULTS / "throughput.json"
    crawl_ms = (statistics.median(round_["focused"]["cpu_ms_per_page"] for round_ in json.loads(throughput.read_text())["rounds"])
                if throughput.exists() else None)
    never_cpu = statistics.median(run.cpu_ms_per_page for run in never)
    auto_cpu = statistics.median(run.cpu_ms_per_page for run in auto)
    plain = min(never, key=lambda run: abs(run.cpu_ms_per_page - never_cpu))

    def figures(run: Run) -> dict:
        return {
            "pages": run.pages, "records": run.records, "rendered": run.rendered,
            "wall_seconds": round(run.wall_seconds, 2), "pages_per_minute": round(run.pages_per_minute),
            "cpu_ms_per_page": round(run.cpu_ms_per_page, 2), "peak_tree_pss_mb": round(run.peak_tree_bytes / 2**20, 1),
        }

    result = {
        **environment(f"python -m bench.render --hosts {args.hosts} --pages {args.pages} --rounds {args.rounds}"),
        "load_average_before_after": [round(load_before[0], 2), round(load_after[0], 2)],
        "plain_never": [figures(run) for run in never],
        "plain_auto": [figures(run) for run in auto],
        "scripts_auto": figures(rendered),
        "auto_overhead_cpu": round(auto_cpu / never_cpu - 1, 4),
        "detection_cpu_ms_per_page": round(detect, 3),
        "detection_cpu_ms_per_virtual_web_page": round(detect_virtual, 3),
        "detection_cpu_ms_per_virtual_web_page_with_a_script": round(detect_scripted, 3),
        "throughput_cpu_ms_per_page": crawl_ms,
        "detection_share_of_never_cpu": round(detect / never_cpu, 4),
        "rendered_cpu_ratio": round(rendered.cpu_ms_per_page / plain.cpu_ms_per_page, 2),
        "rendered_memory_extra_mb": round((rendered.peak_tree_bytes - plain.peak_tree_bytes) / 2**20, 1),
    }
    total = args.hosts * args.pages
    write_report("render", result, "Rendering (Render = auto, scrapy-playwright on the system Chromium)", [
        f"{args.hosts} loopback hosts of {args.pages} pages each ({total} pages, all on the topic), once as plain HTML and once "
        f"built by an inline script into an empty `<div id=\"root\">`; WaitIntervalHost = 0, RenderMaxPages = 4. "
        f"The hosts serve the same pages, so each crawl stores one record a page, with its {args.hosts} URLs. "
        f"Load average {load_before[0]:.1f} before, {load_after[0]:.1f} after (2 CPUs shared with other work).",
        "",
        "| crawl | pages | rendered | records | pages/min | CPU ms a page | peak memory (PSS), process tree |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *(f"| {run.label} | {run.pages} | {run.rendered} | {run.records} | {run.pages_per_minute:,.0f} | "
          f"{run.cpu_ms_per_page:.1f} | {run.peak_tree_bytes / 2**20:.0f} MB |" for run in [*never, *auto, rendered]),
        "",
        f"- **Render = auto on a site that needs no rendering: {result['auto_overhead_cpu']:+.1%} CPU a page** against "
        f"Render = never (medians of {args.rounds} alternated rounds: {auto_cpu:.2f} against {never_cpu:.2f} ms; goal: under 5%). "
        f"The detection itself takes {detect:.3f} ms a page ({result['detection_share_of_never_cpu']:.1%} of a never crawl's "
        f"CPU a page). On the virtual web's pages of about 17 KB (bench/virtualweb), which carry no script and are "
        f"not parsed for it, {detect_virtual:.3f} ms; with a small script added to each, {detect_scripted:.2f} ms"
        + (f", {detect_scripted / crawl_ms:.1%} of the {crawl_ms:.2f} CPU ms a page of a crawl of that web "
           "(bench/results/throughput.json)" if crawl_ms else "")
        + ". An auto crawl that renders nothing starts neither Playwright's driver nor a browser; the rest of the "
        "difference is round-to-round noise on a shared machine.",
        f"- **A rendered page costs {result['rendered_cpu_ratio']:.1f}x the CPU of the same page fetched plainly** "
        f"({rendered.cpu_ms_per_page:.1f} against {plain.cpu_ms_per_page:.1f} ms, Chromium's processes included: each page is "
        f"fetched, then rendered), at {rendered.pages_per_minute:,.0f} pages a minute against {plain.pages_per_minute:,.0f}; "
        f"the browser adds {result['rendered_memory_extra_mb']:.0f} MB at the peak of the process tree.",
    ], args.results)


if __name__ == "__main__":
    main()
