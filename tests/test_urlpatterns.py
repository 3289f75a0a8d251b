"""The URL rule learner, the focused-phase decision, the rules file and the job variables that use them."""

from __future__ import annotations

import dataclasses
import re

import pytest

from combine_scrapy.commands.trial import trial_config
from combine_scrapy.job import Job, JobConfigError, build_job, load_config, load_job
from combine_scrapy.links.learned import (
    CONTENT,
    DIRECTORY,
    IRRELEVANT,
    LEARNED_RULES_FILE,
    LearnedLinkScorer,
    LearnedUrlRules,
    TrialPage,
    UrlPattern,
    UrlRulesFileError,
    directory_pages,
    format_rules,
    learn_patterns,
    learn_site_rules,
    parse_rules,
)
from combine_scrapy.links.scoring import LinkCandidate, LinkScorer
from combine_scrapy.policy import link_scorer_for

SHOP = "http://shop.example"
GENERA = ["drosera", "nepenthes", "dionaea", "pinguicula", "utricularia"]


def shop_trial() -> list[TrialPage]:
    """A shop's trial pages: products relevant, listed on category pages; basket, login and news not."""
    products = [f"{SHOP}/products/{n}.html" for n in range(100, 140)]
    categories = [f"{SHOP}/category/{genus}/" for genus in GENERA]
    pages = [TrialPage(f"{SHOP}/", False, (*categories, f"{SHOP}/login"))]
    for k, category in enumerate(categories):
        pages.append(TrialPage(category, False, (*products[8 * k:8 * k + 8], f"{SHOP}/login")))
    for n, product in enumerate(products, start=100):
        pages.append(TrialPage(product, True, (f"{SHOP}/cart?item={n}", f"{SHOP}/login", f"{SHOP}/")))
        if n % 3 == 0:
            pages.append(TrialPage(f"{SHOP}/cart?item={n}", False, (f"{SHOP}/",)))
    pages.append(TrialPage(f"{SHOP}/login", False, ()))
    pages += [TrialPage(f"{SHOP}/news/{slug}.html", False, ()) for slug in ("big-sale", "new-store", "winter-hours")]
    return pages


def regexes(patterns, kind):
    return [p.regex for p in patterns if p.kind == kind]


@pytest.fixture(scope="module")
def shop_rules():
    (trial,) = learn_site_rules(shop_trial())
    return trial, parse_rules(format_rules([trial]))


def test_learner_finds_the_templates_of_each_kind(shop_rules):
    trial, _ = shop_rules
    assert trial.site == "shop.example"
    assert regexes(trial.patterns, CONTENT) == [r"^/products/\d+\.html$"]
    assert regexes(trial.patterns, DIRECTORY) == [r"^/category/[^/]+/$"]
    assert regexes(trial.patterns, IRRELEVANT) == [r"^/cart\?item=\d+$", r"^/news/[^/]+\.html$"]
    content = next(p for p in trial.patterns if p.kind == CONTENT)
    assert (content.support, content.precision) == (40, 1.0)
    assert len(trial.directories) == 5 and len(trial.content) == 40


@pytest.mark.parametrize("path, fetch", [
    ("/products/7.html", True), ("/products/123456.html", True),     # ids never seen in the trial
    ("/category/sarracenia/", True),                                  # a category never seen
    ("/cart?item=123456", False), ("/news/closing-down.html", False),  # exclusive irrelevant rules refuse
    ("/login", None), ("/products/7.htm", None), ("/products/abc.html", None), ("/about", None),  # no rule: undecided
])
def test_learned_rules_generalize_to_unseen_ids_and_reject_the_negatives(shop_rules, path, fetch):
    _, rules = shop_rules
    assert rules.decide(SHOP + path).fetch is fetch


def test_a_position_becomes_variable_only_with_several_names():
    targets = {"/news/big-sale.html": True, "/news/new-store.html": True, "/about.html": False}
    assert regexes(learn_patterns("s", IRRELEVANT, targets, min_support=2), IRRELEVANT) == [
        r"^/news/(?:big-sale\.html|new-store\.html)$"
    ]
    targets["/news/winter-hours.html"] = True
    assert regexes(learn_patterns("s", IRRELEVANT, targets), IRRELEVANT) == [r"^/news/[^/]+\.html$"]


def test_a_merge_that_would_cover_the_other_kinds_is_not_made():
    targets = {f"/plants/{name}": True for name in ("drosera", "nepenthes", "dionaea", "pinguicula")}
    targets.update({"/plants/basket": False, "/plants/checkout": False, "/plants/login": False})
    assert learn_patterns("s", CONTENT, targets) == []
    assert learn_patterns("s", CONTENT, targets, min_precision=0.5)[0].regex == "^/plants/[^/]+$"


def test_support_and_precision_are_counted_on_the_trial_pages():
    targets = {f"/p/{n}": True for n in range(9)} | {"/p/x1": False}
    (pattern,) = learn_patterns("s", CONTENT, targets)
    assert pattern.regex == r"^/p/\d+$" and pattern.support == 9 and pattern.precision == 1.0
    (pattern,) = learn_patterns("s", CONTENT, {**targets, "/p/99": False}, min_precision=0.8)
    assert pattern.support == 9 and pattern.precision == 0.9


def test_rules_with_too_little_support_are_left_out():
    assert learn_patterns("s", CONTENT, {"/p/1": True, "/q": False}) == []
    assert len(learn_patterns("s", CONTENT, {"/p/1": True, "/q": False}, min_support=1)) == 1


def hub_web(content_links: int, hub_links: int) -> tuple[list[TrialPage], set[str]]:
    """A top page linking to ``hub_links`` pages that each list 6 relevant pages, plus ``content_links`` relevant ones."""
    content = {f"{SHOP}/p/{n}" for n in range(200)}
    listed = sorted(content)
    hubs = [TrialPage(f"{SHOP}/list/{k}", False, tuple(listed[6 * k:6 * k + 6])) for k in range(hub_links)]
    top = TrialPage(f"{SHOP}/", False, (*(hub.url for hub in hubs), *listed[len(listed) - content_links:]))
    return [top, *hubs, *(TrialPage(url, True) for url in content)], content


@pytest.mark.parametrize("content_links, hub_links, top_is_hub", [
    (5, 0, False), (6, 0, True),      # more than h1 = 5 relevant content pages
    (0, 30, False), (0, 31, True),    # more than h2 = 30 relevant directory pages
])
def test_directory_pages_follow_the_studys_thresholds(content_links, hub_links, top_is_hub):
    pages, content = hub_web(content_links, hub_links)
    hubs = directory_pages(pages, content)
    assert (f"{SHOP}/" in hubs) is top_is_hub
    assert len(hubs - {f"{SHOP}/"}) == hub_links


def test_directory_thresholds_are_settable():
    pages, content = hub_web(3, 2)
    assert f"{SHOP}/" not in directory_pages(pages, content)
    assert f"{SHOP}/" in directory_pages(pages, content, h1=2)
    assert f"{SHOP}/" in directory_pages(pages, content, h2=1)
    assert directory_pages(pages, content, h1=6) == set()


def test_a_directory_page_whose_pages_lay_beyond_the_trial_cap_is_recognized():
    listed = tuple(f"{SHOP}/p/{n}" for n in range(8))
    pages = [TrialPage(f"{SHOP}/a", False, listed), TrialPage(f"{SHOP}/b", False, listed)]
    pages += [TrialPage(url, True) for url in listed[:4]]     # the cap stopped the trial after four
    (trial,) = learn_site_rules(pages, h1=5)
    assert trial.directories == {f"{SHOP}/a", f"{SHOP}/b"}


def test_a_site_without_relevant_pages_gets_no_rules():
    (trial,) = learn_site_rules([TrialPage(f"{SHOP}/x/{n}", False) for n in range(5)])
    assert not trial.relevant and trial.patterns == ()
    assert "no relevant page" in format_rules([trial])
    assert parse_rules(format_rules([trial])).decide(f"{SHOP}/x/1").fetch is None


def rules(*patterns: UrlPattern) -> LearnedUrlRules:
    return LearnedUrlRules(patterns)


def test_fetch_when_the_positive_evidence_over_the_negative_exceeds_the_threshold():
    positive = UrlPattern("s", CONTENT, r"^/p/\d+$", support=30, precision=1.0)
    negative = UrlPattern("s", IRRELEVANT, r"^/p/1\d$", support=20, precision=1.0)
    learned = rules(positive, negative)
    only_positive = learned.decide("http://s/p/5")
    assert only_positive.fetch is True and only_positive.priority == 1.0      # N = 0
    both = learned.decide("http://s/p/15")
    assert both.positive == (positive,) and both.negative == (negative,)
    assert both.fetch is True and both.priority == pytest.approx(0.6)         # 30 / 20 > 1
    assert learned.decide("http://s/p/15", threshold=1.5).fetch is False       # 30 / 20 = 1.5, not more
    assert learned.decide("http://s/q").fetch is None                         # no rule matches: undecided
    assert learned.decide("http://other/p/5").fetch is None                   # not a learned site


def test_precision_weighs_the_evidence():
    learned = rules(UrlPattern("s", CONTENT, "^/p", 10, 0.5), UrlPattern("s", IRRELEVANT, "^/p/x", 6, 1.0))
    assert learned.decide("http://s/p/x").fetch is False                      # 10 x 0.5 < 6


def test_rules_file_round_trip_keeps_every_rule(shop_rules):
    trial, parsed = shop_rules
    assert [(p.site, p.kind, p.regex, p.support, p.precision) for p in parsed.patterns] == [
        (p.site, p.kind, p.regex, p.support, p.precision) for p in trial.patterns
    ]


def test_hand_written_rules_are_read_with_comments():
    text = "# mine\nsite Shop.Example:8080\ncontent ^/p/  # any product\nirrelevant ^/p/x support=3 precision=0.5\n"
    learned = parse_rules(text)
    assert learned.decide("http://shop.example:8080/p/1").fetch is True
    assert [(p.support, p.precision) for p in learned.patterns] == [(1, 1.0), (3, 0.5)]
    assert learned.decide("http://shop.example:8080/p/x").fetch is None      # 1 / 1.5, but not exclusive


def test_an_irrelevant_rule_that_covers_topical_pages_cannot_refuse_a_link():
    """The UBFC failure: a catch-all irrelevant rule (support 195, precision 0.97) learned on the site that
    holds the topic refused every link there. Only an exclusive rule (precision 1.00) refuses."""
    catch_all = UrlPattern("s", IRRELEVANT, r"^/[^/]+\.html$", support=195, precision=0.97)
    learned = rules(UrlPattern("s", CONTENT, r"^/plants/\d+\.html$", 6), catch_all)
    assert learned.decide("http://s/sundews.html").fetch is None              # left to the link method
    assert learned.decide("http://s/plants/3.html").fetch is True
    exclusive = rules(UrlPattern("s", IRRELEVANT, r"^/cart/", support=20, precision=1.0))
    assert exclusive.decide("http://s/cart/1").fetch is False


def test_learned_precision_is_rounded_down_so_only_an_exclusive_rule_reads_1():
    """One relevant page among 400 of one template: the irrelevant rule is not exclusive, and says so."""
    targets = {f"/{n}.html": n != 0 for n in range(400)}
    (pattern,) = learn_patterns("shop.example", IRRELEVANT, targets)
    assert pattern.regex == r"^/\d+\.html$" and pattern.precision == 0.99   # 399 / 400 = 0.9975
    assert rules(pattern).decide(f"{SHOP}/7.html").fetch is None


@pytest.mark.parametrize("text, line, message", [
    ("content ^/p$\n", 1, "must follow the 'site HOST[:PORT]' line"),
    ("site s\n\ncontents ^/p$\n", 3, "unknown kind 'contents'"),
    ("site s\ncontent ^/p($\n", 2, "bad regular expression"),
    ("site s\ncontent ^/my page$\n", 2, "holds no spaces"),
    ("site s\ncontent ^/p$ support=many\n", 2, "support: not a number"),
    ("site s\ncontent ^/p$ precision=2\n", 2, "precision a number from 0 to 1"),
    ("site s\ncontent\n", 2, "has no regular expression"),
    ("site a b\n", 1, "write 'site HOST[:PORT]'"),
])
def test_a_bad_rules_file_names_the_line(text, line, message):
    with pytest.raises(UrlRulesFileError) as error:
        parse_rules(text, "learned_urls.txt")
    assert error.value.line == line and message in error.value.message
    assert str(error.value).startswith(f"learned_urls.txt:{line}: ")


def write_job(tmp_path, config: str, rules: str | None = None):
    directory = tmp_path / "j"
    directory.mkdir()
    (directory / "combine.cfg").write_text(config)
    (directory / "topicdefinition.txt").write_text("50: carnivorous plants=CP\n")
    (directory / "seeds.txt").write_text("http://shop.example/\n")
    if rules is not None:
        (directory / LEARNED_RULES_FILE).write_text(rules)
    return directory


def test_a_job_with_learned_rules_marks_links_by_them(tmp_path):
    write_job(tmp_path, "LearnedUrlRules = 1\nUrlRuleThreshold = 2\nHubContentLinks = 3\nLinkStrategy = propagate\n",
              "site shop.example\ncontent ^/p/\\d+$ support=5\nirrelevant ^/p/1$ support=3\n")
    job = load_job("j", tmp_path)
    assert (job.learning.url_rule_threshold, job.learning.hub_content_links, job.learning.hub_directory_links, job.learning.trial_pages) == (2.0, 3, 30, 200)
    scorer = link_scorer_for(job)
    assert isinstance(scorer, LearnedLinkScorer)
    links = [LinkCandidate(f"http://shop.example/p/{n}") for n in (1, 2)] + [LinkCandidate("http://elsewhere.example/")]
    # An irrelevant page: the job's link method follows none of its links, the rules do on their site.
    assert scorer.select(links, 0.0, False) == [("http://shop.example/p/2", 1.0)]
    assert scorer.select(links, 120.0, True) == [("http://shop.example/p/2", 1.0), ("http://elsewhere.example/", 120.0)]
    config = load_config("j", tmp_path)
    unlearned = dataclasses.replace(config, learning=dataclasses.replace(config.learning, use_learned_url_rules=False))
    assert Job.of(unlearned).learned_url_rules is None


def test_the_trial_crawls_its_job_breadth_first_without_the_rules_it_is_to_write(tmp_path):
    write_job(tmp_path, "LearnedUrlRules = 1\nRevisit = 1\nAutoRecycleLinks = 0\n")   # no learned_urls.txt yet
    job = build_job(trial_config(load_config("j", tmp_path), pages=7))
    crawling = job.crawling
    assert (crawling.strategy, crawling.max_urls_per_host, crawling.auto_recycle_links, crawling.revisit) == ("BreadthFirst", 7, True, False)
    assert job.learned_url_rules is None and job.topic_filter is not None


def test_rejected_links_can_be_kept_with_a_low_priority():
    learned = rules(UrlPattern("s", CONTENT, r"^/p/\d+$", 5), UrlPattern("s", IRRELEVANT, r"^/p/1$", 10))
    scorer = LearnedLinkScorer(learned, LinkScorer(None), drop_rejected=False)
    chosen = dict(scorer.select([LinkCandidate("http://s/p/1"), LinkCandidate("http://s/p/2")], 0.0, False))
    assert chosen["http://s/p/2"] == 1.0 and chosen["http://s/p/1"] == pytest.approx(1 / 3)


def test_a_rescoring_of_the_online_model_leaves_the_links_the_rules_decide_alone():
    from combine_scrapy.links.online import OnlineLinkLearner

    learned = rules(UrlPattern("s", CONTENT, r"^/p/\d+$", 5), UrlPattern("s", IRRELEVANT, r"^/x/", 10))
    learner = OnlineLinkLearner()
    scorer = LearnedLinkScorer(learned, LinkScorer(None, "online", learner=learner))
    links = [LinkCandidate("http://s/p/2"), LinkCandidate("http://s/x/1"), LinkCandidate("http://s/other")]
    scorer.select(links, 0.0, False, source_url="http://s/")
    learner.model.counts[1:] = 25            # as if the model had learned: its share is full
    learner._since_rescore = 50
    assert scorer.rescore_due
    assert set(scorer.rescore()) == {"http://s/other"}   # p/2 keeps the rules' priority, x/1 stays refused


def test_a_job_that_enables_learned_rules_without_them_names_the_line(tmp_path):
    directory = write_job(tmp_path, "# rules\nLearnedUrlRules = 1\n")
    with pytest.raises(JobConfigError, match=re.escape(f"{directory / 'combine.cfg'}:2: ") + ".*scrapy trial j"):
        load_job("j", tmp_path)
    assert load_config("j", tmp_path).learning.use_learned_url_rules


def test_a_bad_learned_rules_file_stops_the_job_with_its_line(tmp_path):
    directory = write_job(tmp_path, "LearnedUrlRules = 1\n", "site shop.example\ncontent ^/p/(\n")
    with pytest.raises(JobConfigError, match=re.escape(f"{directory / LEARNED_RULES_FILE}:2: bad regular expression")):
        load_job("j", tmp_path)
    assert load_config("j", tmp_path).learning.use_learned_url_rules  # the configuration reads no rules file


@pytest.mark.parametrize("line", ["UrlRuleThreshold = -1", "HubContentLinks = -2", "TrialPages = 0", "UrlRuleDrop = maybe"])
def test_bad_learned_rule_variables_name_the_line(tmp_path, line):
    directory = write_job(tmp_path, f"# x\n{line}\n")
    with pytest.raises(JobConfigError, match=re.escape(f"{directory / 'combine.cfg'}:2: {line.split()[0]}: ")):
        load_job("j", tmp_path)
