"""The URL-rule-based focused crawl end to end: `scrapy trial` learns rules on a web built from
templates, and the crawl that uses them fetches every relevant page first; a catch-all irrelevant rule learned
on the site that holds the topic cannot refuse its links."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from conftest import PROJECT, JobDir, free_port
from crawling import crawl_command

from combine_scrapy.links.learned import LEARNED_RULES_FILE, parse_rules
from combine_scrapy.operations.sampleweb import LoopbackWeb, Page

pytestmark = pytest.mark.crawl

SHOP, WIKI = "127.0.0.41", "127.0.0.42"
TOPIC = "100: carnivorous plants?=CP\n50: sundews?=CP\n"
CONFIG = "WaitIntervalHost = 0.01\nCrawlStrategy = BestFirst\n"
CATEGORIES = ["drosera", "nepenthes", "dionaea", "pinguicula", "utricularia", "sarracenia"]
PRODUCTS_PER_CATEGORY = 8
FAMILIES = ["droseraceae", "nepenthaceae", "lentibulariaceae", "sarraceniaceae"]
SPECIES_PER_FAMILY = 6
TRIAL_PAGES = 40


def page(title: str, text: str, links: list[str]) -> Page:
    anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return Page(f"<html><head><title>{title}</title></head><body><p>{text}</p><ul>{anchors}</ul></body></html>")


def shop() -> tuple[dict[str, Page], set[str]]:
    """A shop: a home page, category pages, product pages on the topic; basket, reviews, comparisons,
    news and the usual login and about pages off it."""
    site, relevant = {}, set()
    off_topic_links = ["/login", "/about.html", "/cart/"]
    news = [f"/news/{n}.html" for n in range(6)]
    categories = [f"/category/{name}/" for name in CATEGORIES]
    site["/"] = page("Carnivorous plant shop", "Carnivorous plants for every windowsill.", categories + off_topic_links + news)
    product_id = 100
    for category in categories:
        products = [f"/products/{product_id + i}.html" for i in range(PRODUCTS_PER_CATEGORY)]
        site[category] = page("Carnivorous plants by genus", "Our carnivorous plants of this genus.", products + off_topic_links)
        for i, product in enumerate(products):
            number = product_id + i
            site[product] = page(
                f"Sundew number {number}", "One of our carnivorous plants, a sundew that catches flies.",
                [f"/cart/add/{number}", f"/products/{number}/reviews.html", f"/compare/{number}-{number + 1}.html",
                 products[(i + 1) % len(products)], category, "/login"],
            )
            site[f"/cart/add/{number}"] = page("Basket", "One item in your basket. Checkout now.", ["/cart/", "/"])
            site[f"/products/{number}/reviews.html"] = page("Reviews", "Fast delivery, five stars.", ["/"])
            site[f"/compare/{number}-{number + 1}.html"] = page("Compare prices", "Price per item and shipping.", ["/"])
        relevant |= {category, *products}
        product_id += 100
    site["/login"] = page("Log in", "Your name and password.", ["/"])
    site["/about.html"] = page("About us", "A family business since 1982.", ["/"])
    site["/cart/"] = page("Basket", "Your basket is empty.", ["/"])
    for item in news:
        site[item] = page("Shop news", "We are closed on public holidays.", news)
    return site, relevant | {"/"}


def wiki() -> tuple[dict[str, Page], set[str]]:
    """A wiki with readable names: family and species pages on the topic; edit forms, page histories,
    adverts and the account page off it."""
    site, relevant = {}, set()
    families = [f"/family/{name}" for name in FAMILIES]
    adverts = [f"/ads/{n}" for n in range(5)]
    site["/"] = page("Carnivorous plants wiki", "The carnivorous plants of the world.", families + adverts + ["/account/login"])
    for family in families:
        species = [f"/species/{family.rsplit('/', 1)[1][:5]}-{kind}" for kind in ("alba", "borealis", "capensis",
                   "dentata", "elegans", "filiformis", "gigantea", "hirta")[:SPECIES_PER_FAMILY]]
        site[family] = page("Family of carnivorous plants", "Carnivorous plants of one family.", species + adverts[:2] + ["/account/login"])
        for name in species:
            slug = name.rsplit("/", 1)[1]
            site[name] = page(f"{slug}: carnivorous plants", "A species of carnivorous plants.",
                              [f"/edit/{slug}", f"/history/{slug}", family, adverts[len(slug) % 5]])
            site[f"/edit/{slug}"] = page("Edit form", "Change the text and save.", ["/"])
            site[f"/history/{slug}"] = page("Revisions", "Older versions of the text.", ["/"])
        relevant |= {family, *species}
    for advert in adverts:
        site[advert] = page("Advert", "Cheap flights and hotels.", ["/"])
    site["/account/login"] = page("Account", "Log in or create an account.", ["/"])
    return site, relevant | {"/"}


SITES = {SHOP: shop(), WIKI: wiki()}


def fetched_paths(web: LoopbackWeb, since: int = 0, user_agent: str | None = None) -> dict[str, list[str]]:
    """The pages fetched since hit number ``since`` (by the crawl with this User-Agent), per host in order."""
    paths: dict[str, list[str]] = {SHOP: [], WIKI: []}
    for hit in web.hits[since:]:
        if hit.path != "/robots.txt" and user_agent in (None, hit.headers.get("User-Agent")):
            paths[hit.host].append(hit.path)
    return paths


def fetches_until_all_relevant(paths: dict[str, list[str]]) -> int:
    """How many pages the crawl fetched before it had every relevant page, on the slower site."""
    return max(max(paths[host].index(path) for path in SITES[host][1]) + 1 for host in SITES)


def figures(paths: dict[str, list[str]]) -> tuple[int, int, int, float, float]:
    """Fetched, relevant fetched, irrelevant fetched, harvest rate and recall over both sites."""
    fetched = sum(len(p) for p in paths.values())
    relevant = sum(len(set(paths[host]) & SITES[host][1]) for host in SITES)
    total_relevant = sum(len(SITES[host][1]) for host in SITES)
    return fetched, relevant, fetched - relevant, relevant / fetched, relevant / total_relevant


def start_crawl(job_dir: JobDir) -> tuple[subprocess.Popen, Path]:
    """Start the job's crawl, its log in a file (crawls run side by side: a full pipe would stall one)."""
    log = job_dir.topics / f"{job_dir.name}.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            crawl_command(job_dir), cwd=PROJECT, stdout=output, stderr=subprocess.STDOUT,
        )
    return process, log


def finish(crawl: tuple[subprocess.Popen, Path]) -> None:
    process, log = crawl
    process.wait(timeout=120)
    assert process.returncode == 0, log.read_text()[-4000:]
    assert "Traceback" not in log.read_text(), log.read_text()[-4000:]


def test_learned_url_rules_put_the_relevant_pages_first(tmp_path):
    learned, ordered, plain = (JobDir(tmp_path / "topics", tmp_path / "data", name) for name in ("learned", "ordered", "plain"))
    with LoopbackWeb({host: site for host, (site, _) in SITES.items()}, port=free_port(SHOP)) as web, \
            LoopbackWeb({host: site for host, (site, _) in SITES.items()}, port=free_port(SHOP)) as plain_web:
        seeds = [web.url(SHOP), web.url(WIKI)]
        learned.write(CONFIG + "LearnedUrlRules = 1\nUserAgent = learned\n", TOPIC, seeds)
        plain.write(CONFIG, TOPIC, [plain_web.url(SHOP), plain_web.url(WIKI)])

        trial = learned.scrapy("trial", "learned", "--pages", str(TRIAL_PAGES))
        assert trial.returncode == 0, trial.stderr[-4000:]
        trial_paths = fetched_paths(web, 0)
        assert all(len(paths) <= TRIAL_PAGES for paths in trial_paths.values()), trial_paths
        print("\n" + trial.stdout)
        text = (learned.topics / "learned" / LEARNED_RULES_FILE).read_text()
        assert re.search(r"^content +\^/products/\\d\+\\\.html\$ +support=\d+ precision=1\.00$", text, re.M), text
        assert re.search(r"^directory +\^/category/\[\^/\]\+/\$", text, re.M), text
        assert re.search(r"^ +content +\^/products/\S+ +\(support \d+, precision 100%\)$", trial.stdout, re.M)
        rules = parse_rules(text)
        for host, path, fetch in ((SHOP, "/products/99999.html", True), (SHOP, "/category/roridula/", True),
                                  (SHOP, "/cart/add/99999", False), (SHOP, "/news/7.html", False),
                                  (WIKI, "/species/byblis-liniflora", True), (WIKI, "/family/byblidaceae", True),
                                  (WIKI, "/edit/byblis-liniflora", False), (WIKI, "/ads/9", False)):
            assert (rules.decide(web.url(host, path)).fetch is True) is fetch, (host, path)  # not fetched: refused or left to the link method

        # The same rules, rejected links kept at their low priority: BestFirst fetches them last.
        ordered.write(CONFIG + "LearnedUrlRules = 1\nUrlRuleDrop = 0\nUserAgent = ordered\n", TOPIC, seeds,
                      **{LEARNED_RULES_FILE: text})
        after_trial = len(web.hits)
        crawls = [start_crawl(job) for job in (learned, ordered, plain)]
        for crawl in crawls:
            finish(crawl)
        learned_paths = fetched_paths(web, after_trial, "learned")
        learned_figures = figures(learned_paths)
        ordered_paths = fetched_paths(web, after_trial, "ordered")
        plain_paths = fetched_paths(plain_web)
        plain_figures = figures(plain_paths)

    trial_figures = figures(trial_paths)
    for name, (fetched, relevant, irrelevant, harvest_rate, recall) in (
        ("trial", trial_figures), ("with learned rules", learned_figures), ("without", plain_figures),
    ):
        print(f"{name:>19}: fetched {fetched:3d}, relevant {relevant:3d}, irrelevant {irrelevant:3d}, "
              f"harvest rate {harvest_rate:.0%}, recall {recall:.0%}")
    assert learned_figures[4] >= 0.95                          # the rules reach (nearly) every relevant page,
    assert plain_figures[4] >= 0.95
    assert learned_figures[2] < plain_figures[2]               # and refuse what exclusive irrelevant rules match
    every_relevant = max(len(relevant) for _, relevant in SITES.values())
    learned_until, ordered_until, plain_until = (
        fetches_until_all_relevant(paths) for paths in (learned_paths, ordered_paths, plain_paths))
    print(f"pages fetched per site until every relevant page was in: {learned_until} with the rules, "
          f"{ordered_until} with UrlRuleDrop = 0, {plain_until} without (of {learned_figures[0]}, "
          f"{figures(ordered_paths)[0]} and {plain_figures[0]})")
    assert learned_until == ordered_until == every_relevant < plain_until  # every relevant page first
    assert figures(ordered_paths)[0] == plain_figures[0]             # kept links are fetched in the end


def test_trial_of_a_broken_job_names_the_file_and_line(job_dir):
    job_dir.write("WaitIntervalHost = 0.01\nHubContentLinks = many\n", TOPIC, ["http://127.0.0.41/"])
    result = job_dir.scrapy("trial", job_dir.name)
    assert result.returncode == 2
    assert f"{job_dir.topics / job_dir.name / 'combine.cfg'}:2: HubContentLinks" in result.stderr
    assert not (job_dir.topics / job_dir.name / LEARNED_RULES_FILE).exists()


CLUB = "127.0.0.43"
SPECIES = ["drosera-capensis", "drosera-regia", "nepenthes-alata", "dionaea-muscipula", "pinguicula-moranensis",
           "sarracenia-flava", "utricularia-gibba", "cephalotus-follicularis"]


def club() -> tuple[dict[str, Page], set[str]]:
    """A club's site of flat page names: a topical section (a plants page and its species pages) and an
    off-topic section of news pages, so the trial learns a catch-all irrelevant rule (``^/[^/]*$``)."""
    news = [f"/{topic}-{n}.html" for n in range(45) for topic in ("meeting", "outing", "dinner")[n % 3:n % 3 + 1]]
    site = {"/": page("Garden club", "Welcome to our club.", ["/plants.html", *news])}
    site["/plants.html"] = page("Carnivorous plants", "Our carnivorous plants.", [f"/{name}.html" for name in SPECIES])
    for name in SPECIES:
        site[f"/{name}.html"] = page(f"{name}: carnivorous plants", "A sundew relative among carnivorous plants.",
                                     ["/plants.html"])
    for path in news:
        site[path] = page("Club news", "We met for tea and cake.", ["/"])
    return site, {"/plants.html", *(f"/{name}.html" for name in SPECIES)}


def test_a_catch_all_irrelevant_rule_on_the_topical_site_refuses_nothing(tmp_path):
    """The UBFC trial on this site fetches the plants page and many news pages, none of the species pages,
    and learns an irrelevant rule that also matches the plants page (precision 0.97): the crawl with the
    rules must still reach every species page, as the crawl without them does."""
    site, relevant = club()
    learned, plain = (JobDir(tmp_path / "topics", tmp_path / "data", name) for name in ("learned", "plain"))
    with LoopbackWeb({CLUB: site}, port=free_port(CLUB)) as web:
        learned.write(CONFIG + "LearnedUrlRules = 1\nUserAgent = learned\n", TOPIC, [web.url(CLUB)])
        plain.write(CONFIG + "UserAgent = plain\n", TOPIC, [web.url(CLUB)])
        trial = learned.scrapy("trial", "learned", "--pages", str(TRIAL_PAGES))
        assert trial.returncode == 0, trial.stderr[-4000:]
        text = (learned.topics / "learned" / LEARNED_RULES_FILE).read_text()
        assert re.search(r"^irrelevant +\^/\[\^/\][*+]\S*\$ +support=\d+ precision=0\.9\d$", text, re.M), text
        after_trial = len(web.hits)
        for job in (learned, plain):
            finish(start_crawl(job))
        reached = {}
        for agent in ("learned", "plain"):
            paths = {hit.path for hit in web.hits[after_trial:] if hit.headers.get("User-Agent") == agent}
            reached[agent] = len(paths & relevant) / len(relevant)
    print(f"recall with the learned rules {reached['learned']:.0%}, without {reached['plain']:.0%}")
    assert reached["learned"] == reached["plain"] == 1.0
