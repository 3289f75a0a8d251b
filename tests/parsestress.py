"""Push many varied pages through the parse stage on the reactor's thread pool, as a crawl does.

Run as a program (``python tests/parsestress.py --pages 20000 --threads 10``)
so that a native crash (SIGABRT, SIGSEGV) ends this process, not the test
that started it. Each page goes through ParsePipeline (``parse_document`` in
a worker thread via ``deferToThread``), TopicPipeline and the record
building of RecordPipeline on the reactor thread, with up to ``--in-flight``
pages at once. Every page carries its own title, a marker word and two
links, and the program checks that each comes out; it prints a summary and
exits 0 only when every page was parsed in full.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from twisted.internet import defer, reactor  # noqa: E402

from combine_scrapy.document.convert import DEFAULT_CONVERTERS  # noqa: E402
from combine_scrapy.frontier import Outcome  # noqa: E402
from combine_scrapy.itempipelines.parse import ParsePipeline  # noqa: E402
from combine_scrapy.itempipelines.record import RecordPipeline  # noqa: E402
from combine_scrapy.itempipelines.topic import TopicPipeline  # noqa: E402
from combine_scrapy.items import Fetch  # noqa: E402
from combine_scrapy.job import Analysis, Archive, Links, TopicConfig  # noqa: E402
from combine_scrapy.topic import Classification  # noqa: E402

WORDS = "sundew pitcher drosera nepenthes bog peat glass lens garden water light leaf trap insect skärgård größe".split()
# Pieces of markup a page may carry around its content, each a kind of page the web has.
DECORATIONS = (
    "<!-- a comment -->",
    "<!--[if IE]><p>conditional</p><![endif]-->",
    "<![CDATA[ cdata ]]>",
    "<script>var x = '<a href=/no>';</script>",
    "<style>p { color: red }</style>",
    "\x0c",
    "&#1;&#8;&#x1f;",
    "&#xD800;&#0;",
    "\x01\x02\x1b",
    "<p onclick='steal()'>handler</p>",
    '<a href="javascript:alert(1)">js</a>',
    "<table><tr><td>cell<td>cell</table>",
    "<font>" * 300 + "deep",
    "<p>unclosed <b>bold <i>italic",
    "<iframe src='/frame'></iframe>",
    "<svg><text>svg</text></svg>",
    "&amp;&lt;&gt;&nbsp;&eacute;&bogus;&#99999999;",
    "<?php echo 1; ?>",
    "<noscript><p>noscript</p></noscript>",
    "<ul>" + "<li><a href='/nav{n}'>nav {n}</a>" * 10 + "</ul>",
    "<p>" + "filler words about the garden " * 20 + "</p>",
)
# Deeper than libxml2 parses (2048): on one page in fifty, read by the slower flat fallback parser.
DEEP = "<div>" * 2100 + "deeper"


def page(number: int, chooser: random.Random) -> tuple[str, bytes, dict[str, str], str]:
    """(url, body, headers, marker): a page with a few decorations before and after its content."""
    marker = f"marker{number}x"
    before = "".join(chooser.choice(DECORATIONS) for _ in range(chooser.randint(0, 3))).replace("{n}", str(number))
    after = "".join(chooser.choice(DECORATIONS) for _ in range(chooser.randint(1, 4))).replace("{n}", str(number))
    if chooser.random() < 0.02:
        before += DEEP
    words = " ".join(chooser.choice(WORDS) for _ in range(chooser.randint(5, 100)))
    html = (
        f"<!DOCTYPE html><html><head><title>Page {number}</title>{before}</head><body>"
        f"<h1>Heading {number}</h1><p>{words} {marker} {words}</p>"
        f"<a href='/p{number}/a'>first</a> <a href='/p{number}/b'>second</a>{after}</body></html>"
    )
    charset = chooser.choice(("utf-8", "iso-8859-1", "cp1252"))
    return f"http://h{number % 97}.test/p{number}", html.encode(charset), {"content-type": f"text/html; charset={charset}"}, marker


def stub_crawler():
    """A crawler as far as the parse, topic and record stages look at it."""
    stats = SimpleNamespace(counts=Counter())
    stats.inc_value = lambda key, count=1, start=0: stats.counts.update({key: count})
    job = SimpleNamespace(
        links=Links(from_text=True), analysis=Analysis(converters=DEFAULT_CONVERTERS, converter_timeout=30, converter_memory=1024),
        topic=TopicConfig(text="main"), archive=Archive(save_html=True),
        topic_filter=SimpleNamespace(classify=lambda document: Classification(True, 1.0, 1.0)),
    )
    store = SimpleNamespace(anchors_to=lambda url: [])
    return SimpleNamespace(stats=stats, spider=SimpleNamespace(context=SimpleNamespace(job=job, store=store)))


def opened_stage(stage_class, crawler=None):
    """A pipeline stage as a crawl has it: made with the crawler, holding the spider's crawl context once the spider opens."""
    crawler = crawler if crawler is not None else stub_crawler()
    stage = stage_class(crawler)
    stage.spider_opened(crawler.spider)
    return stage


def check(item: Fetch, number: int, marker: str) -> str | None:
    """What is missing from the parsed page, or None when it is complete."""
    page = item.page
    links = {link.url for link in page.links}
    expected = {f"http://h{number % 97}.test/p{number}/a", f"http://h{number % 97}.test/p{number}/b"}
    if page.title != f"Page {number}":
        return f"title {page.title!r}"
    if marker not in page.text:
        return "marker not in text"
    if not expected <= links:
        return f"links {sorted(expected - links)} missing"
    if any(link.url.startswith("javascript:") for link in page.links):
        return "javascript: link kept"
    return None


async def run_page(stages, crawler, number: int, chooser: random.Random, problems: list[str]) -> None:
    parse, topic, record = stages
    url, body, headers, marker = page(number, chooser)
    item = Fetch(url=url, host=url.split("/")[2], fetched_at=time.time(), status=200, headers=headers, body=body)
    item.outcome = Outcome.SUCCESS
    await parse.process_item(item)
    topic.process_item(item)
    record._record(item)
    problem = check(item, number, marker)
    if problem:
        problems.append(f"page {number}: {problem}")


async def main(pages: int, threads: int, in_flight: int, seed: int) -> int:
    crawler = stub_crawler()
    stages = tuple(opened_stage(stage, crawler) for stage in (ParsePipeline, TopicPipeline, RecordPipeline))
    chooser, problems = random.Random(seed), []
    semaphore = defer.DeferredSemaphore(in_flight)
    started = time.monotonic()
    jobs = [
        semaphore.run(lambda n=n: defer.Deferred.fromCoroutine(run_page(stages, crawler, n, chooser, problems)))
        for n in range(pages)
    ]
    results = await defer.DeferredList(jobs, consumeErrors=True)
    errors = [f"page {n}: {failure.getErrorMessage()}" for n, (ok, failure) in enumerate(results) if not ok]
    failed = {key: count for key, count in crawler.stats.counts.items() if key.startswith("parse/failed/")}
    print(f"{pages} pages, {threads} threads, {time.monotonic() - started:.1f} s; parse failures counted: {failed}")
    for line in (errors + problems)[:20]:
        print(line)
    return 1 if errors or problems else 0


def run(args) -> None:
    reactor.suggestThreadPoolSize(args.threads)
    status = []
    deferred = defer.Deferred.fromCoroutine(main(args.pages, args.threads, args.in_flight, args.seed))
    deferred.addBoth(lambda result: (status.append(result), reactor.stop()))
    reactor.run()
    code = status[0] if isinstance(status[0], int) else 2
    if code == 2:
        print(status[0])
    sys.exit(code)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=10, help="the reactor's thread pool (Scrapy's REACTOR_THREADPOOL_MAXSIZE)")
    parser.add_argument("--in-flight", type=int, default=100, help="pages being parsed at once")
    parser.add_argument("--seed", type=int, default=1)
    run(parser.parse_args())
