"""StopWhenSaturated: a crawl that keeps finding nothing new ends, when the link model agrees, and says so."""

from __future__ import annotations

import pytest
from conftest import JobDir, free_port

from combine_scrapy.frontier.sqlite import SqliteFrontier
from combine_scrapy.links.saturation import NoveltyWatch
from combine_scrapy.operations.sampleweb import LoopbackWeb, Page


def test_the_recent_rate_counts_new_relevant_records_over_the_last_fetches():
    watch = NoveltyWatch(window=4)
    for new in (True, True, False, False, False, False):
        watch.add(new)
    assert (watch.recent_rate, watch.since_new) == (0.0, 4)
    watch.add(True)
    assert (watch.recent_rate, watch.since_new) == (0.25, 0)


def test_saturated_only_after_n_dry_fetches_and_when_the_model_expects_less_than_one():
    asked = []

    def model(best: int) -> float:
        asked.append(best)
        return expectation

    watch = NoveltyWatch(stop_after=20)
    expectation = 3.0
    for _ in range(19):
        watch.add(False)
        assert not watch.saturated(model)
    assert asked == []                                   # not asked before the dry run is long enough
    watch.add(False)
    assert not watch.saturated(model) and asked == [20]  # the model still expects 3 new pages from the best 20
    expectation = 0.4
    watch.add(False)
    assert not watch.saturated(model) and asked == [20]  # asked again only every tenth of N
    watch.add(False)
    assert watch.saturated(model) and asked == [20, 20]
    assert watch.reason() == "22 fetches in a row gave no new relevant record and the link model expects 0.40 " \
                             "from the best 20 waiting links"
    assert not NoveltyWatch(0).saturated(model)          # off by default


def test_a_model_that_has_not_learned_leaves_the_dry_run_to_decide():
    watch = NoveltyWatch(stop_after=3)
    for _ in range(3):
        watch.add(False)
    assert watch.saturated(lambda best: None)
    assert "has not learned enough" in watch.reason()


HOST = "127.0.0.52"
TOPIC = "100: carnivorous plants?=CP\n50: sundews?=CP\n"


def saturating_web() -> dict[str, Page]:
    """One relevant page, then a long chain of pages about something else (and its copies)."""
    def page(title: str, text: str, links: list[str]) -> Page:
        anchors = "".join(f'<a href="{href}">more {href}</a> ' for href in links)
        return Page(f"<html><head><title>{title}</title></head><body><p>{text}</p>{anchors}</body></html>")

    site = {"/": page("Carnivorous plants", "Carnivorous plants and sundews. " * 5, ["/p0.html", "/copy.html"])}
    site["/copy.html"] = page("Carnivorous plants", "Carnivorous plants and sundews. " * 5, ["/p0.html"])
    for n in range(60):
        site[f"/p{n}.html"] = page(f"Roses {n}", f"Roses and tomatoes, chapter {n}.", [f"/p{n + 1}.html"])
    return site


@pytest.mark.crawl
def test_a_saturated_crawl_ends_with_its_reason_and_says_why(tmp_path):
    """10 fetches without a new relevant record (the copy of the home page is a duplicate, not new) and a model
    that has not learned: the crawl ends as saturated long before the 60-page chain is done."""
    job_dir = JobDir(tmp_path / "topics", tmp_path / "data")
    port = free_port(HOST)
    with LoopbackWeb({HOST: saturating_web()}, port=port) as web:
        job_dir.write("WaitIntervalHost = 0\nStopWhenSaturated = 10\nMaxTunnelDistance = 100\n", TOPIC, [web.url(HOST)])
        result = job_dir.crawl()
        fetched = len([hit for hit in web.hits_for(HOST) if hit.path != "/robots.txt"])
    stats = result.stats
    assert stats["finish_reason"] == "saturated"
    assert stats["links/model/duplicates"] == 1
    frontier = SqliteFrontier(job_dir.data / "t" / "frontier.sqlite")
    fetched_of_host, new_records = frontier.host_yield(f"{HOST}:{port}")
    frontier.close()
    assert fetched_of_host == fetched and 0.8 < new_records < 1.0  # the home page's record, decayed; not its copy
    assert 11 <= fetched <= 20
    assert "saturated (StopWhenSaturated = 10): 10 fetches in a row gave no new relevant record" in result.stdout
    # scrapy report shows the duplicate beside the host's new records, and what the link model learned, by name
    report = job_dir.scrapy("report", "t")
    assert report.returncode == 0, report.stderr
    page = (job_dir.data / "t" / "report" / "index.html").read_text()
    assert f"<tr><td>{HOST}:{port}</td><td>{fetched}</td><td>2</td><td>1</td><td>1</td>" in page
    assert "<td>anchor: more</td>" in page and "<td>every link</td>" in page
