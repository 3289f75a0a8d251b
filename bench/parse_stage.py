"""Benchmark: CPU per page of the parse stage's work on virtual-web pages, in one thread.

    .venv/bin/python -m bench.parse_stage [--sample 400] [--repeats 3]

For every 250th page of the virtual web (seed 1, 100,000 pages): parse it
(``parse_document``), then what the topic filter and the record store read
of it (``Document.from_page`` with topicText = main, the near-duplicate
fingerprint of its main content block). Reports the best of ``--repeats``
passes in CPU milliseconds a page (process time, so other load on the
machine counts little). Writes bench/results/parse_stage.{json,md}.
"""

from __future__ import annotations

import argparse
import time

from bench.report import environment, write_report
from bench.virtualweb.harness import add_common_options, command_line, web_from
from combine_scrapy.document.neardup import page_fingerprint
from combine_scrapy.document.parse import parse_document
from combine_scrapy.topic import Document

HEADERS = {"content-type": "text/html; charset=utf-8"}


def parse_only(url: str, body: bytes) -> None:
    parse_document(url, body, HEADERS)


def relevant_page(url: str, body: bytes) -> None:
    page = parse_document(url, body, HEADERS)
    Document.from_page(page, main_content=True)
    page_fingerprint(page.text, page.main_text)


def cpu_ms_per_page(stage, pages: list[tuple[str, bytes]], repeats: int) -> float:
    runs = []
    for _ in range(repeats):
        started = time.process_time()
        for url, body in pages:
            stage(url, body)
        runs.append((time.process_time() - started) / len(pages) * 1000)
    return round(min(runs), 2)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_options(parser)
    parser.add_argument("--sample", type=int, default=400, help="pages, spread evenly over the web")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    web = web_from(args)
    step = max(1, args.pages // args.sample)
    pages = [(web.url(n), web.render(n)) for n in range(0, args.pages, step)][: args.sample]
    for url, body in pages[:20]:  # warm-up: imports, the thread's parser, regex caches
        relevant_page(url, body)
    result = {
        **environment(command_line("bench.parse_stage", argv)),
        "pages": len(pages),
        "mean_bytes": sum(len(body) for _, body in pages) // len(pages),
        "parse_ms": cpu_ms_per_page(parse_only, pages, args.repeats),
        "relevant_page_ms": cpu_ms_per_page(relevant_page, pages, args.repeats),
    }
    body = [
        "",
        f"{result['pages']} pages of {result['mean_bytes']:,} bytes on average, best of {args.repeats} passes, CPU ms a page:",
        "",
        "| work | CPU ms a page |",
        "| --- | --- |",
        f"| parse (title, text, links, main content block) | {result['parse_ms']} |",
        f"| parse, topic text (topicText = main), near-duplicate fingerprint | {result['relevant_page_ms']} |",
    ]
    write_report("parse_stage", result, "Parse stage: CPU per page", body, args.results)


if __name__ == "__main__":
    main()
