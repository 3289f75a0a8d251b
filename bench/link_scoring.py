"""Benchmark: what choosing the links of a page costs with LinkStrategy = online.

    .venv/bin/python -m bench.link_scoring [--links 200] [--pages 200]

Scores pages of N links each (anchors, surrounding words, URLs on a few
hosts, half of them new on every page, half repeated as a site's menu is)
with a trained online model, and times ``LinkScorer.select`` per page beside
the URL canonicalization that marking the same links costs anyway
(``urls.check_url``), and beside ``RW``. Also times one lesson
(``observe``). Writes bench/results/link_scoring.{json,md}.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from bench.report import RESULTS, environment, write_report
from bench.virtualweb.harness import command_line, load_average
from combine_scrapy.access.urls import check_url
from combine_scrapy.links.online import OnlineLinkLearner
from combine_scrapy.links.scoring import LinkCandidate, LinkScorer
from combine_scrapy.topic import parse_topic_definition

TOPIC = "100: carnivorous plants?=CP\n50: sundews?=CP\n50: drosera=CP\n40: pinguicula=CP\n10: pitcher[^\\s]*=CP\n"
WORDS = ("garden club news sundew drosera plants bog peat water light rules members meeting photo "
         "archive contact about seeds growing guide index module section").split()


def page_links(rng: random.Random, page: int, count: int) -> list[LinkCandidate]:
    menu = [LinkCandidate(f"http://h{n % 3}.example/menu/{n}.html", f"{WORDS[n % len(WORDS)]} {n}") for n in range(count // 2)]
    fresh = [
        LinkCandidate(
            f"http://h{rng.randrange(8)}.example/{rng.choice(WORDS)}/{page}-{n}-{rng.randrange(10**6)}.html",
            " ".join(rng.choices(WORDS, k=3)),
            context=" ".join(rng.choices(WORDS, k=16)),
        )
        for n in range(count - len(menu))
    ]
    return menu + fresh


def trained_scorer(rng: random.Random, links_per_page: int) -> LinkScorer:
    scorer = LinkScorer(parse_topic_definition(TOPIC), "online", page_scale=90, learner=OnlineLinkLearner())
    for page in range(60):
        links = page_links(rng, 10_000 + page, links_per_page)
        scorer.select(links, 0.0, False, distance=1, source_url=f"http://h0.example/p{page}.html")
        for link in links[len(links) // 2:]:
            scorer.observe(scorer.learner.canonical(link.url), "sundew" in link.anchor)
    return scorer


def measure(args) -> dict:
    rng = random.Random(1)
    scorer = trained_scorer(rng, args.links)
    assert scorer.learner.weight > 0, "the model must be ranking links"
    rw = LinkScorer(parse_topic_definition(TOPIC), "RW", page_scale=90)
    pages = [page_links(rng, page, args.links) for page in range(args.pages)]
    timings: dict[str, float] = {}

    started = time.perf_counter()
    for page in pages:
        for link in page:
            check_url(link.url)
    timings["canonicalize"] = (time.perf_counter() - started) / len(pages)

    started = time.perf_counter()
    for page in pages:
        rw.select(page, 120.0, True)
    timings["RW"] = (time.perf_counter() - started) / len(pages)

    started = time.perf_counter()
    for number, page in enumerate(pages):
        scorer.select(page, 120.0, True, source_url=f"http://h0.example/q{number}.html")
    timings["online"] = (time.perf_counter() - started) / len(pages)

    urls = [scorer.learner.canonical(link.url) for page in pages for link in page[len(page) // 2:]]
    started = time.perf_counter()
    lessons = sum(scorer.observe(url, rng.random() < 0.2) for url in urls)
    timings["observe"] = (time.perf_counter() - started) / len(urls)
    return {"links_per_page": args.links, "pages": args.pages, "lessons": lessons,
            "ms_per_page": {name: round(seconds * 1000, 2) for name, seconds in timings.items() if name != "observe"},
            "ms_per_observe": round(timings["observe"] * 1000, 3)}


def body(result: dict) -> list[str]:
    per_page = result["ms_per_page"]
    return [
        "",
        f"Load average before the run: {result['load_average']}. Pages of {result['links_per_page']} links "
        f"({result['pages']} pages), half of each page's links new, "
        "a trained model ranking them. Milliseconds per page:",
        "",
        "| step | ms per page |",
        "| --- | --- |",
        f"| `online`: select (canonicalize for the model, features, model, topic terms) | {per_page['online']} |",
        f"| `RW`: select (topic terms) | {per_page['RW']} |",
        f"| canonicalize every link once (what marking them costs anyway) | {per_page['canonicalize']} |",
        "",
        f"One lesson (`observe`, with path credit): {result['ms_per_observe']} ms.",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, default=200)
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    result = {**environment(command_line("bench.link_scoring", None)), "load_average": load_average(), **measure(args)}
    write_report("link_scoring", result, "Link scoring: the cost of LinkStrategy = online", body(result), args.results)


if __name__ == "__main__":
    main()
