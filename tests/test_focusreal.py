"""bench.focusreal: the doc web's paths and languages, and the judging, on a tiny tree made here (no packages)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from bench.focushard import BREADTH_FIRST
from bench.focusreal.benchmark import (
    WINDOW,
    Judge,
    RealRun,
    merged,
    offline_breadth_first,
    seeds,
    summary,
    topic_jobs,
    with_floor,
    write_job,
)
from bench.focusreal.docweb import PORTAL, DocWeb, Tree
from bench.focusreal.records import PageJudge, PageJudgement, new_records
from bench.focusreal.reference import ORDERS, LinkGraph, References
from bench.focusreal.simulate import Pages, Simulation
from bench.focusreal.topics import TOPICS, Target, Topic
from combine_scrapy.job import load_job
from combine_scrapy.topic import parse_topic_definition


@pytest.fixture
def web(tmp_path: Path) -> DocWeb:
    """Three small trees: languages as directories, languages as file suffixes, one language with a .gz page."""
    files = {
        "manual/index.html": '<a href="en/index.html">en</a> <a href="fr/index.html">fr</a>',
        "manual/en/index.html": '<a href="mod/core.html">core</a> <a href="https://httpd.example/docs/2.4/x.html">x</a>',
        "manual/en/mod/core.html": '<a href="../../fr/mod/core.html">fr</a> <a href="https://elsewhere.example/">e</a>',
        "manual/fr/index.html": '<a href="mod/core.html">core</a>',
        "manual/fr/mod/core.html": "<p>Le noyau</p>",
        "manual/images/logo.png": "\x89PNG",
        "reference/index.html": '<a href="index.en.html">en</a> <a href="index.fr.html">fr</a>',
        "reference/index.en.html": '<a href="ch01.en.html">1</a> <a href="images/a.png">a</a>',
        "reference/index.fr.html": '<a href="ch01.fr.html#s1">1</a>',
        "reference/ch01.en.html": "<p>Chapter one</p>",
        "reference/ch01.fr.html": "<p>Chapitre un</p>",
        "reference/images/a.png": "png",
        "single/basic-defs.en.html": "<p>Debian's web site names its pages by language</p>",
        "single/lib/re.html": '<a href="https://www.reference.example/ch01.fr.html">ref</a>',
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "single/changelog.html.gz").write_bytes(gzip.compress(b"<p>changes</p>"))
    trees = (
        Tree("httpd", ("apache2-doc",), str(tmp_path / "manual"), "Manual", "dirs", ("en", "fr"),
             ((r"https://httpd\.example/docs/(?:2\.4|current)/", "/en/"),)),
        Tree("reference", ("debian-reference-en",), str(tmp_path / "reference"), "Reference", "suffix", ("en", "fr"),
             ((r"https://www\.reference\.example/", "/"),)),
        Tree("single", ("single-doc",), str(tmp_path / "single"), "Single"),
    )
    return DocWeb(trees)


def test_language_directories_are_served_as_they_are_and_one_page_in_any_language_is_one_key(web):
    page = web.respond("httpd.docs.test", "/en/mod/core.html")
    assert page.status == 200 and b'href="../../fr/mod/core.html"' in page.body
    assert web.respond("httpd.docs.test", "/fr/mod/core.html").body == b"<p>Le noyau</p>"
    assert web.key("httpd.docs.test", "/fr/mod/core.html") == web.key("httpd.docs.test", "/en/mod/core.html?x#y")
    assert web.key("httpd.docs.test", "/fr/mod/core.html") == ("httpd.docs.test", "/mod/core.html")
    assert web.key("httpd.docs.test", "/images/logo.png") == ("httpd.docs.test", "/images/logo.png")


def test_links_to_a_real_site_point_to_its_host_from_every_host_and_others_stay(web):
    home = web.respond("httpd.docs.test", "/en/").body
    assert b'href="http://httpd.docs.test/en/x.html"' in home
    other = web.respond("single.docs.test", "/lib/re.html").body
    assert other == b'<a href="http://reference.docs.test/ch01.fr.html">ref</a>'
    assert b'href="https://elsewhere.example/"' in web.respond("httpd.docs.test", "/en/mod/core.html").body


def test_language_suffixes_become_language_paths_and_their_links_follow(web):
    root = web.respond("reference.docs.test", "/").body
    assert b'href="/en/index.html"' in root and b'href="/fr/index.html"' in root
    assert b'href="/fr/ch01.html#s1"' in web.respond("reference.docs.test", "/fr/index.html").body
    assert web.respond("reference.docs.test", "/fr/ch01.html").body == b"<p>Chapitre un</p>"
    # the page by its file name, or without its language, is redirected to it
    assert web.respond("reference.docs.test", "/ch01.fr.html").location == "http://reference.docs.test/fr/ch01.html"
    assert web.respond("reference.docs.test", "/ch01").location == "http://reference.docs.test/en/ch01.html"
    # a relative link of a language page to a shared file reaches it under the language path
    image = web.respond("reference.docs.test", "/en/images/a.png")
    assert image.status == 200 and image.content_type == "image/png"
    assert web.key("reference.docs.test", "/fr/ch01.html") == ("reference.docs.test", "/ch01.html")


def test_gzipped_pages_directories_and_missing_files(web):
    changelog = web.respond("single.docs.test", "/changelog.html")
    assert changelog.body == b"<p>changes</p>" and changelog.content_type.startswith("text/html")
    listing = web.respond("single.docs.test", "/")
    assert listing.status == 200 and b'href="lib/"' in listing.body and b'href="changelog.html"' in listing.body
    moved = web.respond("single.docs.test", "/lib")
    assert moved.status == 301 and moved.location == "http://single.docs.test/lib/"
    assert web.respond("single.docs.test", "/lib/re").location == "http://single.docs.test/lib/re.html"
    assert web.respond("single.docs.test", "/basic-defs").location == "http://single.docs.test/basic-defs.en.html"
    assert web.respond("single.docs.test", "/robots.txt").status == 404
    assert web.respond("single.docs.test", "/nothing.html").status == 404
    assert web.respond("elsewhere.example", "/").status == 502
    assert (web.hosts, web.pages) == (3, 13)


def test_the_portal_links_every_home_page(web):
    portal = web.respond(PORTAL, "/").body
    assert all(f'href="{home}"'.encode() in portal for home in web.homes())
    assert seeds(web, "portal", None) == [f"http://{PORTAL}/"]


class LogWithoutServer:
    def stats(self) -> dict:
        return {"requests": 0}


def entry(host: str, path: str, status: int = 200) -> dict:
    return {"host": host, "path": path, "status": status}


def test_the_judge_counts_a_target_once_in_any_language_and_only_the_webs_fetches(web):
    topic = Topic("t", "t", "100: core=T\n", (Target("httpd", "/mod/core.html", "the core"),
                                                Target("reference", "/ch01.html", "chapter one")), "")
    judge = Judge(web, LogWithoutServer(), [topic], cap=6)
    judge.judge([
        entry(PORTAL, "/"),
        entry("httpd.docs.test", "/fr/mod/core.html"),  # fetch 2: a target
        entry("elsewhere.example", "/", 502),  # not the web's: not a fetch
        entry("httpd.docs.test", "/en/mod/core.html"),  # the same target in another language
        entry("reference.docs.test", "/de/ch01.html", 404),  # missing: finds nothing
        entry("reference.docs.test", "/en/ch01.html"),  # fetch 5: the second target
        entry("httpd.docs.test", "/en/"),
        entry("httpd.docs.test", "/en/mod/core.html"),  # over the cap
    ])
    assert judge.hits == {"t": [2, 5]}
    assert judge.fetched == 6 and judge.outside == 1
    assert judge.per_host == {PORTAL: 1, "httpd.docs.test": 3, "reference.docs.test": 2}


def run(config: str, hits: list[int], seed_set: str = "home", seed: int = 1) -> RealRun:
    return RealRun("t", seed, 0, config, 10, 3000, hits, seed_set=seed_set, per_host={"a.docs.test": 3000})


def test_summary_counts_targets_per_500_fetches_and_judges_against_breadth_first():
    runs = [run(BREADTH_FIRST, [100 * n for n in range(1, 11)]),  # 80% at 800
            run("default", [10, 20, 30, 40, 50, 60, 70, 160, 600, 2900]),  # 80% at 160: a fifth of 800
            run("slow", [700, 800, 900, 1000, 1100, 1200, 1300, 1400])]  # 80% at 1400: worse than BFS
    figures = with_floor(summary(runs, 3000), runs, 3000)["home"]["t"]
    assert figures[BREADTH_FIRST]["found_per_500"] == [5, 5, 0, 0, 0, 0]
    assert figures["default"]["found_per_500"] == [8, 1, 0, 0, 0, 1]
    assert figures["default"]["floor_80%_within_breadth_first"] and figures["default"]["target_80%_in_a_fifth"]
    assert figures["default"]["target_100%_within_cap"]
    assert not figures["slow"]["floor_80%_within_breadth_first"] and not figures["slow"]["target_100%_within_cap"]
    assert figures["default"]["fetches_per_host"] == {"a.docs.test": 3000}


def test_breadth_first_past_the_cap_is_judged_by_its_own_figure_and_one_never_there_by_its_fetches():
    own = RealRun("t", 1, 0, BREADTH_FIRST, 10, 6000, [500 * n for n in range(1, 11)], seed_set="home")  # 80% at 4,000
    runs = [own, run("default", [10, 20, 30, 40, 50, 60, 70, 790]),  # 80% at 790: within a fifth of 4,000
            run("late", [10, 20, 30, 40, 50, 60, 70, 900])]  # 80% at 900: not within a fifth of it
    figures = with_floor(summary(runs, 3000), runs, 3000)["home"]["t"]
    assert figures["default"]["target_80%_in_a_fifth"] and not figures["late"]["target_80%_in_a_fifth"]
    assert figures["late"]["floor_80%_within_breadth_first"]
    never = RealRun("t", 1, 0, BREADTH_FIRST, 10, 5000, [100], seed_set="home")  # stopped at 5,000 without 80%
    runs = [never, run("default", [10, 20, 30, 40, 50, 60, 70, 990])]
    figures = with_floor(summary(runs, 3000), runs, 3000)["home"]["t"]
    assert figures["default"]["target_80%_in_a_fifth"]   # 990 * 5 <= 5,000: against the fetches it made
    assert figures["default"]["ratio_to_breadth_first_80%"]["mean"] == round(990 / 5000, 3)


@pytest.mark.parametrize("topic", TOPICS, ids=[topic.key for topic in TOPICS])
def test_each_topic_has_targets_on_two_hosts_a_definition_and_an_offtopic_seed(topic):
    keys = [target.key for target in topic.targets]
    assert 8 <= len(keys) == len(set(keys)) <= 30 and len(topic.hosts) >= 2
    assert all(target.why for target in topic.targets)
    assert 10 <= len(parse_topic_definition(topic.definition, topic.key).terms) <= 30
    assert topic.offtopic.startswith("http://") and ".docs.test/" in topic.offtopic


def test_a_written_job_loads(tmp_path):
    topic = TOPICS[0]
    write_job(topic, tmp_path / "real-tls", [topic.offtopic], 8952, 0, {"CrawlStrategy": "BreadthFirstTime"})
    job = load_job("real-tls", tmp_path)
    assert list(job.seeds) == [topic.offtopic] and job.crawling.strategy == "BreadthFirstTime"


def test_parts_run_apart_are_merged_into_one_report():
    part = {"command": "a", "cap": 3000, "crawls": [{"x": 1}], "topics": ["tls"], "seed_sets": ["home"],
            "topic_targets": {"tls": {}}, "configurations": {"default": {}}, "runs": 1, "wall_minutes": 30.0}
    other = {**part, "command": "b", "crawls": [{"x": 2}], "topics": ["regex", "tls"], "seed_sets": ["portal"],
             "topic_targets": {"regex": {}}, "configurations": {"bft-online": {}}, "runs": 2, "wall_minutes": 12.5}
    result = merged([part, other])
    assert result["crawls"] == [{"x": 1}, {"x": 2}] and result["topics"] == ["tls", "regex"]
    assert result["seed_sets"] == ["home", "portal"] and list(result["configurations"]) == ["default", "bft-online"]
    assert (result["runs"], result["wall_minutes"], result["command"]) == (2, 42.5, "a; b")
    assert result["peer_cap"] == 3000   # parts run before --peer-cap ran their peers to the cap
    assert merged([{**part, "peer_cap": 10_000}, other])["peer_cap"] == 10_000
    with pytest.raises(ValueError, match="capped"):
        merged([part, {**other, "cap": 1000}])


def test_the_offline_breadth_first_order_follows_links_and_redirects_within_the_web(web):
    order = web.breadth_first(["http://httpd.docs.test/"], 100)
    assert order[:3] == [("httpd.docs.test", "/"), ("httpd.docs.test", "/en/index.html"),
                         ("httpd.docs.test", "/fr/index.html")]
    assert ("httpd.docs.test", "/en/x.html") in order  # the rewritten real-site link, a 404 but a fetch
    assert all(host.endswith(".docs.test") for host, _ in order)  # elsewhere.example is not followed
    assert len(order) == len(set(order))
    assert web.breadth_first(["http://httpd.docs.test/"], 2) == order[:2]
    # a redirect is followed: /ch01.fr.html on the reference is found from the single tree's link
    reached = web.breadth_first(["http://single.docs.test/lib/re.html"], 100)
    assert reached == [("single.docs.test", "/lib/re.html"), ("reference.docs.test", "/ch01.fr.html"),
                       ("reference.docs.test", "/fr/ch01.html")]


def test_the_offline_reference_counts_fetches_to_each_share_of_the_targets(web):
    topic = Topic("t", "t", "", (Target("httpd", "/mod/core.html", ""), Target("reference", "/ch01.html", "")),
                  "http://single.docs.test/lib/re.html")
    assert offline_breadth_first(web, topic, "offtopic", 100) == {"50%": 3, "80%": None, "100%": None, "found": 1}
    assert offline_breadth_first(web, topic, "offtopic", 2) == {"50%": None, "80%": None, "100%": None, "found": 0}


def judged(key: str, fingerprint: int | None, *topics: str) -> PageJudgement:
    return PageJudgement(key, fingerprint, frozenset(topics))


def test_new_records_follow_the_stores_duplicate_rule():
    near = 0b1011  # 3 bits from 0: a near-duplicate at distance 3, not at 2
    fetches = [
        (1, judged("A", 0, "t")),  # a new record
        (2, None),  # no page (a 404)
        (3, judged("B", None, "u")),  # relevant to another topic only
        (4, judged("A", 0, "t")),  # the same content again (another URL)
        (5, judged("C", near, "t")),  # new content, a near-duplicate of A
        (6, judged("D", None, "t")),  # too short to fingerprint: new unless its content is known
        (7, judged("D", None, "t")),
        (8, judged("E", 0xFFFF_0000, "t", "u")),  # far from every record
    ]
    assert new_records(fetches, "t", 3) == [1, 6, 8]
    assert new_records(fetches, "t", 2) == [1, 5, 6, 8]
    assert new_records(fetches, "t", None) == [1, 5, 6, 8]
    assert new_records(fetches, "u", 3) == [3, 8]


def test_the_judge_counts_new_relevant_records_as_the_crawler_would_keep_them(web, tmp_path):
    text = " ".join(f"The core module {word} handles requests and keeps the server running." for word in
                    ("first", "second", "third", "fourth"))
    (Path(web.trees["single.docs.test"].root) / "lib").joinpath("core.html").write_text(f"<p>{text}</p>")
    (Path(web.trees["single.docs.test"].root) / "lib").joinpath("copy.html").write_text(f"<p>{text}</p>")
    web = DocWeb(tuple(tree.tree for tree in web.trees.values()))  # the new files indexed
    topic = Topic("t", "t", "100: core=T\n100: noyau=T\n", (Target("httpd", "/mod/core.html", ""),), "")
    pages = PageJudge(web, topic_jobs([topic], tmp_path / "judge"))
    judge = Judge(web, LogWithoutServer(), [topic], cap=10)
    judge.judge([
        entry("single.docs.test", "/lib/core.html"),  # 1: about the topic, a new record
        entry("single.docs.test", "/lib/re.html"),  # 2: off the topic
        entry("single.docs.test", "/lib/copy.html"),  # 3: the same text at another URL
        entry("httpd.docs.test", "/fr/mod/core.html"),  # 4: the target, its French page: new text
        entry("httpd.docs.test", "/en/mod/missing.html", 404),  # 5
    ])
    assert judge.records(pages, "t") == [(1, "single.docs.test/lib/core.html"), (4, "httpd.docs.test/fr/mod/core.html")]
    off_topic = pages.judge("single.docs.test", "/lib/re.html")
    assert off_topic is not None and not off_topic.relevant and off_topic.fingerprint is None
    assert len(pages.cache) == 4  # each page judged once, the 404 too
    assert [fetch for fetch, _ in judge.records(pages, "t")] == [1, 4] and len(pages.cache) == 4
    new = [fetch for fetch, _ in judge.records(pages, "t")]
    assert judge.trace(pages, "t", new, {"http://single.docs.test/lib/core.html": 0.5}) == [
        ["single.docs.test/lib/core.html", "new", 0.5], ["single.docs.test/lib/re.html", "irrelevant", None],
        ["single.docs.test/lib/copy.html", "duplicate", None], ["httpd.docs.test/fr/mod/core.html", "new", None],
        ["httpd.docs.test/en/mod/missing.html", "status 404", None],
    ]


def test_a_crawl_with_every_target_goes_on_to_the_first_window():
    web = DocWeb(())
    judge = Judge(web, LogWithoutServer(), [Topic("t", "t", "", (), "")], cap=3000)
    judge.read = lambda: None  # type: ignore[method-assign]  # the log is not read: fetches are set here
    judge.fetched = WINDOW - 1
    assert not judge.done()
    judge.fetched = WINDOW
    assert judge.done()


def test_offline_reference_crawls_follow_links_and_the_better_told_orders_find_the_records_sooner(web, tmp_path):
    text = " ".join(f"The core module {word} handles requests and keeps the server running." for word in
                    ("first", "second", "third", "fourth"))
    (Path(web.trees["httpd.docs.test"].root) / "en/mod/core.html").write_text(f"<p>{text}</p>")
    (Path(web.trees["httpd.docs.test"].root) / "en/mod/copy.html").write_text(f"<p>{text}</p>")
    (Path(web.trees["httpd.docs.test"].root) / "en/index.html").write_text(
        '<a href="../fr/index.html">b</a> <a href="mod/copy.html">a</a> <a href="mod/core.html">c</a>')
    web = DocWeb(tuple(tree.tree for tree in web.trees.values()))  # the new files indexed
    topic = Topic("t", "t", "100: requests=T\n", (Target("httpd", "/mod/core.html", ""),), "http://httpd.docs.test/en/")
    graph = LinkGraph(web)
    references = References(web, graph, PageJudge(web, topic_jobs([topic], tmp_path / "judge")), topic)
    assert references.relevant == {"http://httpd.docs.test/en/mod/copy.html", "http://httpd.docs.test/en/mod/core.html"}
    assert references.records_in_web() == 1  # the copy is the same record
    assert references.hops["http://httpd.docs.test/en/index.html"] == 1
    order = graph.crawl(["http://httpd.docs.test/en/"], 10, references.rank("knows_relevance"))
    for n, url in enumerate(order[1:], start=1):  # every page fetched was linked from a page fetched before it
        assert any(url in graph.out(earlier) for earlier in order[:n]), url
    assert order[:3] == ["http://httpd.docs.test/en/", "http://httpd.docs.test/en/mod/copy.html",
                         "http://httpd.docs.test/en/mod/core.html"]
    without_copies = references.rank("knows_graph_and_copies")
    assert without_copies("http://httpd.docs.test/en/mod/copy.html") == 0  # the first of the two: a record
    assert without_copies("http://httpd.docs.test/en/mod/core.html") == -1  # its copy: as a page one link away
    assert without_copies("http://httpd.docs.test/fr/index.html") < -1  # leads to no relevant page
    measured = references.measure("offtopic", window=2)
    assert measured["breadth_first"] == 0 and measured["knows_relevance"] == 1 and set(measured) == set(ORDERS)


def test_records_are_paired_with_the_mean_of_breadth_firsts_crawls_of_the_same_run():
    """Files merged by --report-only may hold two breadth-first crawls of one run: both count, not the last read."""
    def judged(config: str, records: list[int], seed: int = 1) -> RealRun:
        crawl = run(config, [100], seed=seed)
        crawl.records = records
        return crawl

    runs = [judged(BREADTH_FIRST, list(range(1, 21))), judged(BREADTH_FIRST, list(range(1, 41))),
            judged("default", list(range(1, 91)))]
    figures = summary(runs, 3000)["home"]["t"]["default"]
    assert figures["records_ratio_first_500"] == 3.0 and figures["target_records_3x"]  # 90 against (20 + 40) / 2
    runs[1].records = list(range(1, 61))
    figures = summary(runs, 3000)["home"]["t"]["default"]
    assert figures["records_ratio_first_500"] == 2.25 and not figures["target_records_3x"]  # 90 against 40


def test_the_simulated_crawl_runs_the_crawlers_policy_over_the_web_and_is_judged_as_a_crawl(web, tmp_path):
    text = " ".join(f"The core module {word} handles requests and keeps the server running." for word in
                    ("first", "second", "third", "fourth"))
    (Path(web.trees["single.docs.test"].root) / "lib").joinpath("core.html").write_text(
        f'<p>{text}</p><a href="copy.html">core copy</a><a href="re.html">re</a>')
    (Path(web.trees["single.docs.test"].root) / "lib").joinpath("copy.html").write_text(f"<p>{text}</p>")
    (Path(web.trees["single.docs.test"].root) / "lib").joinpath("re.html").write_text(
        '<a href="https://www.reference.example/ch01.fr.html">ref</a><a href="core.html">core</a>'
        '<a href="../nowhere.html">gone</a>')
    web = DocWeb(tuple(tree.tree for tree in web.trees.values()))
    topic = Topic("t", "t", "100: core=T\n100: noyau=T\n",
                  (Target("httpd", "/mod/core.html", ""), Target("single", "/lib/core.html", "")),
                  "http://single.docs.test/lib/re.html")
    jobs = topic_jobs([topic], tmp_path / "jobs")
    simulation = Simulation(web, jobs, Pages(web, jobs), PageJudge(web, jobs))
    crawl = simulation.crawl(topic, "offtopic", 100, tmp_path / "data")
    fetched = [(host, target) for host, target, _ in crawl.fetches]
    assert fetched[0] == ("single.docs.test", "/lib/re.html")  # the seed
    assert len(fetched) == len(set(fetched))  # each URL fetched once
    # a redirect (not followed by default: UserAgentFollowRedirects = 0) is a fetch, its target is marked and fetched
    assert ("reference.docs.test", "/ch01.fr.html", 301) in crawl.fetches
    assert fetched.index(("reference.docs.test", "/fr/ch01.html")) > fetched.index(("reference.docs.test", "/ch01.fr.html"))
    assert ("single.docs.test", "/nowhere.html", 404) in crawl.fetches
    core = fetched.index(("single.docs.test", "/lib/core.html")) + 1
    assert crawl.hits == [core] and crawl.fetches_to(0.5) == core and crawl.fetches_to(1.0) is None
    assert crawl.records == [core]  # its copy is the same record
    assert ("single.docs.test", "/lib/copy.html") in fetched
    again = simulation.crawl(topic, "offtopic", 100, tmp_path / "again")
    assert again.fetches == crawl.fetches  # one page at a time: the same order every time
    assert simulation.crawl(topic, "offtopic", 3, tmp_path / "short").fetches == crawl.fetches[:3]
