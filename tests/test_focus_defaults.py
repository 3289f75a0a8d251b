"""The focus defaults: BestFirst with the online link strategy, tunnelling bounded by MaxTunnelDistance,
RandomSeed, a summary that says why a crawl found nothing, and the position filter's warnings and cutoff."""

from __future__ import annotations

import logging
import re
from types import SimpleNamespace

import pytest
from conftest import JobDir, free_port

from combine_scrapy.extensions.summary import HarvestSummary
from combine_scrapy.job import JobConfigError, Links, load_job
from combine_scrapy.links.scoring import DynamicThreshold, LinkCandidate
from combine_scrapy.operations.sampleweb import LoopbackWeb, Page
from combine_scrapy.policy import link_scorer_for
from combine_scrapy.topic import Document, build_filter, parse_topic_definition

HOST = "127.0.0.51"
TOPIC = "100: carnivorous plants?=CP\n50: sundews?=CP\n"


def write_job(tmp_path, config: str = "") -> None:
    directory = tmp_path / "j"
    directory.mkdir()
    (directory / "combine.cfg").write_text(config)
    (directory / "topicdefinition.txt").write_text(TOPIC)
    (directory / "seeds.txt").write_text("http://a.example/\n")


def test_the_default_job_crawls_best_first_with_the_online_link_strategy(tmp_path):
    write_job(tmp_path)
    job = load_job("j", tmp_path)
    assert (job.crawling.strategy, job.links.method, job.links.max_tunnel_distance, job.links.random_seed) == ("BestFirst", "online", 6, 1)
    assert link_scorer_for(job).learner is not None


def test_tunnel_distance_and_seed_are_job_variables(tmp_path):
    write_job(tmp_path, "MaxTunnelDistance = 2\nRandomSeed = 42\nLinkStrategy = RWB\nLinkBoostChance = 0.5\n")
    job = load_job("j", tmp_path)
    assert (job.links.max_tunnel_distance, job.links.random_seed) == (2, 42)
    links = [LinkCandidate(f"http://a.example/{i}.html", "page") for i in range(100)]
    first, again = link_scorer_for(job), link_scorer_for(job)
    assert first.select(links, 0, False, distance=1) == again.select(links, 0, False, distance=1)
    assert first.select(links, 0, False, distance=2) == []          # a third irrelevant page in a row: stop
    assert link_scorer_for(job).learner is None


@pytest.mark.parametrize("line", ["MaxTunnelDistance = -1", "RandomSeed = one"])
def test_bad_values_name_the_line(tmp_path, line):
    write_job(tmp_path, f"WaitIntervalHost = 1\n{line}\n")
    with pytest.raises(JobConfigError, match=re.escape(line.split()[0])) as error:
        load_job("j", tmp_path)
    assert error.value.line == 2


def off_topic_web() -> dict[str, Page]:
    def page(title: str, text: str, links: list[str] = ()) -> Page:
        anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
        return Page(f"<html><head><title>{title}</title></head><body><p>{text}</p>{anchors}</body></html>")

    site = {"/": page("Garden club", "We grow roses and tomatoes.", ["/a.html", "/b.html"])}
    site["/a.html"] = page("Roses", "Roses need sun. A friend once kept a sundew.", ["/c.html"])
    site["/b.html"] = page("Tomatoes", "Tomatoes need water.")
    site["/c.html"] = page("Compost", "Compost the leaves.")
    return site


@pytest.mark.crawl
def test_a_crawl_that_finds_nothing_says_why_and_what_to_change(tmp_path):
    job_dir = JobDir(tmp_path / "topics", tmp_path / "data")
    port = free_port(HOST)
    with LoopbackWeb({HOST: off_topic_web()}, port=port) as web:
        job_dir.write("WaitIntervalHost = 0.01\n", TOPIC, [web.url(HOST)])
        result = job_dir.crawl()
        paths = {hit.path for hit in web.hits_for(HOST)}
    assert {"/", "/a.html", "/b.html", "/c.html"} <= paths           # tunnelled past the irrelevant home page
    assert "0 relevant pages in 4 fetched: no page reached the topic's cutoff (best score 50, cutoff 90)" in result.stdout
    assert "try a larger MaxTunnelDistance (now 6)" in result.stdout
    assert "a lower tot_cutoff (the best page scored 50)" in result.stdout


def summary_job(link_method: str):
    definition = parse_topic_definition(TOPIC)
    return SimpleNamespace(links=Links(method=link_method, max_tunnel_distance=6),
                           topic_filter=build_filter("plain", definition))


def test_the_nothing_found_summary_points_at_propagate_when_that_is_why():
    lines = HarvestSummary.nothing_found(summary_job("propagate"), {"topic/best_score": 0.0}, 3, 0, "finished")
    assert lines[0] == "0 relevant pages in 3 fetched: no page reached the topic's cutoff (best score 0, cutoff 90)"
    assert "LinkStrategy = online" in lines[1] and "tot_cutoff" not in lines[1]
    assert HarvestSummary.nothing_found(summary_job("online"), {}, 3, 2, "finished") == []
    assert "no page was fetched" in HarvestSummary.nothing_found(summary_job("online"), {}, 0, 0, "finished")[0]


def test_position_names_each_regular_expression_term_it_ignores(caplog):
    definition = parse_topic_definition("50: sundews?=CP\n40: drosera=CP\n75: d\\.?\\s*californica=CP\n")
    with caplog.at_level(logging.WARNING, logger="combine_scrapy.topic.filters"):
        build_filter("position", definition)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2
    assert ":1: 'sundews?' is a regular expression, which classifyPlugIn = position ignores" in warnings[0]
    assert "looks for the words 'sundews' instead" in warnings[0]
    assert ":3: 'd\\\\.?\\\\s*californica'" in warnings[1]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="combine_scrapy.topic.filters"):
        build_filter("plain", definition)
    assert not caplog.records


def test_one_passing_mention_does_not_make_a_page_relevant_to_position():
    position = build_filter("position", parse_topic_definition("50: drosera=CP\n"))
    filler = " ".join(["garden"] * 60)
    passing = Document("http://a/1", title="Roses", text=f"{filler} drosera {filler}")
    titled = Document("http://a/2", title="Drosera", text=f"Drosera in bogs. {filler}")
    assert not position.classify(passing).relevant and position.classify(passing).score > 1   # Combine's cutoff 1 took it
    assert position.classify(titled).relevant


def test_the_dynamic_threshold_logs_each_move_with_the_windows_precision(caplog):
    threshold = DynamicThreshold(0.3, step=0.1, window=4)
    with caplog.at_level(logging.INFO, logger="combine_scrapy.links.scoring"):
        for relevant in [True, True, True, False] + [True, False, False, False] + [True, False, False, False]:
            threshold.observe(relevant)
    assert [r.getMessage() for r in caplog.records] == [
        "DynamicThreshold raised to 0.40: precision 25% over the last 4 pages (75% before)"
    ]
