"""Crawl order end to end: BestFirst with link relevance reaches topical pages in fewer fetches."""

from __future__ import annotations

import pytest
from conftest import JobDir, free_port

from combine_scrapy.operations.sampleweb import LoopbackWeb, Page

pytestmark = pytest.mark.crawl

HOST = "127.0.0.21"
TOPIC = "100: carnivorous plants?=CP\n50: sundews?=CP\n"
PLANT_PAGES = [f"/plants/s{i}.html" for i in range(4)] + [f"/plants/deep{i}.html" for i in range(4)]


def page(title: str, text: str, links: list[tuple[str, str]] = ()) -> Page:
    anchors = "".join(f'<li><a href="{href}">{anchor}</a></li>' for href, anchor in links)
    return Page(f"<html><head><title>{title}</title></head><body><p>{text}</p><ul>{anchors}</ul></body></html>")


def topical_web() -> dict[str, Page]:
    """A relevant home page whose many off-topic links come before its few topical ones."""
    site = {
        "/": page("Carnivorous plants", "Carnivorous plants and sundews.",
                  [(f"/news/{n}.html", f"News story {n}") for n in range(20)]
                  + [(f"/plants/s{i}.html", f"Carnivorous plants: sundew {i}") for i in range(4)]),
    }
    for i in range(4):
        site[f"/plants/s{i}.html"] = page(
            f"Sundew {i}", "Carnivorous plants: this sundew catches insects.",
            [(f"/misc/{i}-{m}.html", f"Recipe {m}") for m in range(10)]
            + [(f"/plants/deep{i}.html", "More carnivorous plants")],
        )
        site[f"/plants/deep{i}.html"] = page(f"Deep {i}", "Carnivorous plants in bogs, sundews too.")
        for m in range(10):
            site[f"/misc/{i}-{m}.html"] = page(f"Recipe {m}", "Bake the bread for forty minutes.")
    for n in range(20):
        site[f"/news/{n}.html"] = page(f"News {n}", "The baseball team won again.")
    return site


def fetches_until_all_topical(tmp_path, name: str, config: str) -> int:
    job_dir = JobDir(topics=tmp_path / "topics", data=tmp_path / "data", name=name)
    port = free_port(HOST)
    with LoopbackWeb({HOST: topical_web()}, port=port) as web:
        job_dir.write("WaitIntervalHost = 0.02\n" + config, TOPIC, [web.url(HOST)])
        job_dir.crawl()
        paths = [hit.path for hit in web.hits_for(HOST) if hit.path != "/robots.txt"]
    assert set(PLANT_PAGES) <= set(paths), paths
    return max(paths.index(path) for path in PLANT_PAGES) + 1


def test_best_first_with_link_relevance_reaches_the_topic_sooner_than_breadth_first(tmp_path):
    breadth_first = fetches_until_all_topical(tmp_path, "bf", "CrawlStrategy = BreadthFirst\n")
    best_first = fetches_until_all_topical(tmp_path, "best", "CrawlStrategy = BestFirst\nLinkStrategy = RW\n")
    assert best_first == 1 + len(PLANT_PAGES)         # the home page, then only topical pages
    assert breadth_first > 3 * best_first


REPEAT_HOSTS = ("127.0.0.22", "127.0.0.23", "127.0.0.24")


def three_host_web(port: int) -> dict[str, dict[str, Page]]:
    """Three hosts linking to each other: topical pages, off-topic hubs, equal anchors (ties) on purpose."""
    sites: dict[str, dict[str, Page]] = {}
    for number, host in enumerate(REPEAT_HOSTS):
        other = [f"http://{h}:{port}/p{k}.html" for h in REPEAT_HOSTS if h != host for k in range(3)]
        site = {"/": page(f"Home {number}", "Carnivorous plants." if number == 0 else "Baseball news.",
                          [(f"/p{k}.html", "Page") for k in range(8)] + [(url, "Page") for url in other])}
        for k in range(8):
            topical = (number + k) % 3 == 0
            site[f"/p{k}.html"] = page(
                f"Page {k}", "Sundews are carnivorous plants." if topical else "Bake the bread.",
                [(f"/p{(k + step) % 8}.html", "Sundew page" if topical else "Page") for step in (1, 3)] + [(url, "Page") for url in other[k % 2::2]],
            )
        sites[host] = site
    return sites


def fetch_order(tmp_path, name: str) -> list[tuple[str, str]]:
    job_dir = JobDir(topics=tmp_path / "topics", data=tmp_path / name, name="repeat")
    port = free_port(REPEAT_HOSTS[0])
    with LoopbackWeb(three_host_web(port), port=port) as web:
        job_dir.write("WaitIntervalHost = 0\nAllowPrivateAddresses = 1\nCrawlStrategy = BestFirst\nLinkStrategy = RW\nLinkThreshold = 0\n",
                      TOPIC, [web.url(REPEAT_HOSTS[0]), web.url(REPEAT_HOSTS[1])])
        job_dir.crawl("-s", "CONCURRENT_REQUESTS=1")
        return [(REPEAT_HOSTS.index(hit.host), hit.path) for hit in web.hits]


def test_the_same_crawl_of_the_same_web_fetches_in_the_same_order(tmp_path):
    """One page at a time (CONCURRENT_REQUESTS = 1), WaitIntervalHost 0: two crawls fetch in the same order.

    With more requests in flight the order also depends on which response comes back first.
    """
    first = fetch_order(tmp_path, "first")
    assert len(first) > 20
    assert fetch_order(tmp_path, "second") == first
