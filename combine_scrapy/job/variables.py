"""The table of combine.cfg's variables: Combine's names (and ours), the group and field of the job each
sets (:mod:`combine_scrapy.job.groups`), how its value is read, and one line on what it is for.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from combine_scrapy.document.neardup import MAX_DISTANCE as MAX_NEAR_DUPLICATE_DISTANCE
from combine_scrapy.frontier import STRATEGIES
from combine_scrapy.job.grammar import (
    in_range,
    parse_bool,
    parse_count,
    parse_cutoff,
    parse_extensions,
    parse_fraction,
    parse_number,
    parse_positive_int,
    parse_ratio,
    parse_seconds,
    parse_timeout,
)
from combine_scrapy.jobfiles import excerpt
from combine_scrapy.links.scoring import METHODS as LINK_METHODS

# What the topic filter reads as a page's text: all of it (Combine), or its main content block.
TOPIC_TEXTS = ("all", "main")
# When a page is rendered in a browser: never, when it looks built by its scripts, or every HTML page.
RENDER_MODES = ("never", "auto", "always")


def _parse_render_mode(text: str) -> str:
    if text.lower() not in RENDER_MODES:
        raise ValueError(f"expected one of {', '.join(RENDER_MODES)}, got {excerpt(text)}")
    return text.lower()


def _parse_strategy(text: str) -> str:
    if text not in STRATEGIES:
        raise ValueError(f"unknown strategy {excerpt(text)}; known: {', '.join(STRATEGIES)}")
    return text


def _parse_link_method(text: str) -> str:
    if text not in LINK_METHODS:
        raise ValueError(f"unknown link method {excerpt(text)}; known: {', '.join(LINK_METHODS)}")
    return text


def _parse_near_duplicate_distance(text: str) -> int:
    allowed = f"a number of bits from 0 to {MAX_NEAR_DUPLICATE_DISTANCE}"
    return int(in_range(parse_number(text, whole=True), text, allowed, 0, MAX_NEAR_DUPLICATE_DISTANCE))


def _parse_topic_text(text: str) -> str:
    if text not in TOPIC_TEXTS:
        raise ValueError(f"expected {' or '.join(TOPIC_TEXTS)}, got {excerpt(text)}")
    return text


@dataclasses.dataclass(frozen=True)
class _Variable:
    group: str     # the JobConfig field it goes to: one of GROUPS, or url_rules
    field: str     # its field in that group
    parse: Callable[[str], Any]
    meaning: str   # one line on what it is for: scrapy newjob writes it above the variable


# Combine's variable names (conf/default.cfg, conf/job_default.cfg) -> JobConfig groups and their fields.
VARIABLES: dict[str, _Variable] = {
    "WaitIntervalHost": _Variable("locks", "host", parse_seconds, "seconds between two requests to one host"),
    "WaitIntervalHarvesterLockSuccess": _Variable("locks", "success", parse_seconds,
                                                  "seconds before a fetched page is due again"),
    "WaitIntervalHarvesterLockRobotRules": _Variable("locks", "robot_rules", parse_seconds,
                                                     "the same after a robots.txt refusal"),
    "WaitIntervalHarvesterLockNotFound": _Variable("locks", "not_found", parse_seconds, "the same after a 404"),
    "WaitIntervalHarvesterLockNotModified": _Variable("locks", "not_modified", parse_seconds, "the same after a 304"),
    "WaitIntervalHarvesterLockUnavailable": _Variable("locks", "unavailable", parse_seconds,
                                                      "the same after a 5xx or no answer (the URL stays marked)"),
    "maxUrlLength": _Variable("url_rules", "max_url_length", parse_positive_int, "URLs this long or longer are refused"),
    # Spider-trap bounds (not Combine's): path depth, repeats of one path segment, URLs kept per host.
    "maxPathDepth": _Variable("url_rules", "max_path_depth", parse_positive_int, "spider traps: deeper paths are refused"),
    "maxRepeatedSegments": _Variable("url_rules", "max_repeated_segments", parse_positive_int,
                                     "spider traps: a path segment repeated more often is refused"),
    "maxUrlsPerHost": _Variable("crawling", "max_urls_per_host", parse_positive_int,
                                "URLs kept in the frontier per host (unset: the setting COMBINE_MAX_URLS_PER_HOST, 10000)"),
    "AutoRecycleLinks": _Variable("crawling", "auto_recycle_links", parse_bool, "mark the links of relevant pages for crawling"),
    "saveHTML": _Variable("archive", "save_html", parse_bool, "keep the original document in the record"),
    "doAnalyse": _Variable("analysis", "do_analyse", parse_bool, "store the language of the text and the country of the server"),
    "extractLinksFromText": _Variable("links", "from_text", parse_bool, "URLs written in the text are links too"),
    "UserAgentFollowRedirects": _Variable("fetching", "follow_redirects", parse_bool,
                                          "follow redirects (0: a redirect's target is marked as a new URL)"),
    "UserAgentGetIfModifiedSince": _Variable("fetching", "get_if_modified_since", parse_bool, "revisit with conditional GET"),
    # Not Combine's: hosts on loopback, private and link-local addresses are fetched only when the job names them
    # (seeds, sitesOK.txt, allow rules), or all of them with AllowPrivateAddresses = 1.
    "AllowPrivateAddresses": _Variable("fetching", "allow_private_addresses", parse_bool,
                                       "1: fetch loopback and private hosts even when the job does not name them"),
    "UAtimeout": _Variable("fetching", "timeout", parse_timeout, "seconds a download may take"),
    # Fetch limits (not Combine's names): body bytes, redirects followed, converter seconds and MiB.
    "UAmaxSize": _Variable("fetching", "max_size", parse_positive_int, "bytes of a body read at most"),
    "UAmaxRedirects": _Variable("fetching", "max_redirects", parse_positive_int, "redirects followed at most"),
    "HeadOnlyExtensions": _Variable("fetching", "head_only_extensions", parse_extensions,
                                    "URLs ending so are fetched with HEAD only"),
    "ConverterTimeout": _Variable("analysis", "converter_timeout", parse_timeout, "seconds a document converter may run"),
    "ConverterMemory": _Variable("analysis", "converter_memory", parse_positive_int, "MiB of memory a document converter may use"),
    "HarvestRetries": _Variable("fetching", "harvest_retries", parse_positive_int,
                                "tries of an unavailable URL before it counts as gone"),
    "classifyPlugIn": _Variable("topic", "classify_plugin", str,
                                "topic filter: plain, position, svm, vector, or package.module:function"),
    "tot_cutoff": _Variable("topic", "tot_cutoff", parse_cutoff,
                            "the topic filter's total-score cut-off (plain's shown; position 90, svm 0, vector 0.2)"),
    "cutoff_norm": _Variable("topic", "cutoff_norm", parse_cutoff, "the topic filter's normalized-score cut-off"),
    "cutoff_rel": _Variable("topic", "cutoff_rel", parse_cutoff, "the topic filter's class-share cut-off (percent)"),
    "UserAgent": _Variable("fetching", "user_agent", str, "sent as User-Agent"),
    "OperatorEmail": _Variable("fetching", "operator_email", str, "sent as From (empty: no From header)"),
    "CrawlStrategy": _Variable("crawling", "strategy", _parse_strategy,
                               "BestFirst, BreadthFirstTime (Combine's), BreadthFirst, PageRank or iPageRank"),
    # Continuous operation: keep fetched pages marked and revisit them when their expected age reaches RevisitMaxAge.
    "Revisit": _Variable("crawling", "revisit", parse_bool, "keep fetched pages marked and revisit them"),
    "RevisitMaxAge": _Variable("crawling", "revisit_max_age", parse_seconds,
                               "seconds of expected age after which a page is revisited"),
    # Saturation (not Combine's): end a crawl that keeps finding nothing new.
    "StopWhenSaturated": _Variable("crawling", "stop_when_saturated", parse_count,
                                   "end the crawl (finish reason saturated) once this many fetches in a row gave no new "
                                   "relevant record and the link model expects less than one from as many of the best "
                                   "waiting links (0: never)"),
    # Link relevance: online, propagate (Combine's), RW (relevance weighting) or RWB (RW with random boosts).
    "LinkStrategy": _Variable("links", "method", _parse_link_method,
                              "which links to mark: online (learned while crawling), propagate (Combine: links of relevant pages only), RW or RWB"),
    "LinkThreshold": _Variable("links", "threshold", parse_fraction, "RW/RWB: links scoring below this are not marked"),
    "LinkPageWeight": _Variable("links", "page_weight", parse_fraction, "RW/RWB: the page's share in a link's score"),
    "LinkBoostChance": _Variable("links", "boost_chance", parse_fraction,
                                 "RWB: chance a link below the threshold is marked anyway"),
    "DynamicThreshold": _Variable("links", "dynamic_threshold", parse_bool, "RW/RWB: move the threshold with the harvest rate"),
    # Tunnelling and repeatability (not Combine's): links followed this many irrelevant pages past the last
    # relevant one; the seed of every random choice of link selection.
    "MaxTunnelDistance": _Variable("links", "max_tunnel_distance", parse_count,
                                   "links are followed at most this many irrelevant pages past the last relevant one"),
    "RandomSeed": _Variable("links", "random_seed", parse_count,
                            "seeds every random choice of link selection: same seed, same web, same choices"),
    # Near-duplicates (not Combine's): a page within this many simhash bits of a stored record joins it.
    "nearDuplicates": _Variable("analysis", "near_duplicates", parse_bool,
                                "a page within nearDuplicateDistance simhash bits of a record joins it"),
    "nearDuplicateDistance": _Variable("analysis", "near_duplicate_distance", _parse_near_duplicate_distance,
                                       "simhash bits (0 to 7)"),
    # Learned URL rules (URL-rule-based focused crawling): `scrapy trial` writes learned_urls.txt, the crawl uses it.
    "LearnedUrlRules": _Variable("learning", "use_learned_url_rules", parse_bool, "use the URL rules scrapy trial learned"),
    "TrialPages": _Variable("learning", "trial_pages", parse_positive_int, "pages a site scrapy trial fetches"),
    "UrlRuleThreshold": _Variable("learning", "url_rule_threshold", parse_ratio, "learned URL rules: precision a rule needs"),
    "UrlRuleDrop": _Variable("learning", "url_rule_drop", parse_bool, "learned URL rules: drop URLs no rule accepts"),
    "HubContentLinks": _Variable("learning", "hub_content_links", parse_count,
                                 "learned URL rules: relevant pages a directory page links to"),
    "HubDirectoryLinks": _Variable("learning", "hub_directory_links", parse_count,
                                   "learned URL rules: directory pages a directory page links to"),
    # Main-content extraction (not Combine's): the topic filter scores all of the text, or only the main content block.
    "topicText": _Variable("topic", "text", _parse_topic_text,
                           "what the topic filter scores: all (the whole text) or main (the main content block)"),
    # Archiving (not Combine's): every fetch as WARC/1.1 request and response records under data/<job>/warc/.
    "saveWARC": _Variable("archive", "save_warc", parse_bool, "write every fetch as WARC/1.1 records under data/<job>/warc/"),
    "WARCMaxSize": _Variable("archive", "warc_max_size", parse_positive_int,
                             "bytes of a WARC file before the next one is started"),
    # Sitemaps (not Combine's): robots.txt's Sitemap: lines, /sitemap.xml, as a link source; bounded per host.
    "Sitemaps": _Variable("sitemaps", "from_robots", parse_bool, "read the sitemaps robots.txt names, as a source of links"),
    "SitemapGuess": _Variable("sitemaps", "guess", parse_bool, "also ask for /sitemap.xml when robots.txt names none"),
    "SitemapMaxFiles": _Variable("sitemaps", "max_files", parse_positive_int, "sitemap files read per host at most"),
    "SitemapMaxUrls": _Variable("sitemaps", "max_urls", parse_positive_int, "URLs taken from one host's sitemaps at most"),
    "SitemapMaxSize": _Variable("sitemaps", "max_size", parse_positive_int,
                                "bytes of one sitemap (after decompression) read at most"),
    # Negative pages (ACHE's, not Combine's): irrelevant pages kept apart for `scrapy train --crawled`.
    "saveIrrelevant": _Variable("archive", "save_irrelevant", parse_bool,
                                "keep the pages the topic filter turns down apart, as negatives for scrapy train --crawled"),
    "IrrelevantMaxPages": _Variable("archive", "irrelevant_max_pages", parse_positive_int, "irrelevant pages kept at most"),
    # Rendering (not Combine's): pages built by their scripts, rendered in headless Chromium (combine_scrapy/render/).
    "Render": _Variable("rendering", "mode", _parse_render_mode,
                        "render pages in a browser: never, auto (pages that look built by their scripts) or always"),
    "RenderMaxPages": _Variable("rendering", "max_pages", parse_positive_int, "pages rendered at once at most"),
    "RenderMaxPagesPerHost": _Variable("rendering", "max_pages_per_host", parse_positive_int,
                                       "pages of one host rendered at once at most"),
    "RenderTimeout": _Variable("rendering", "timeout", parse_timeout, "seconds a render may take"),
}
BLOCKS = ("allow", "exclude", "sessionids", "serveralias", "converters", "render")
#: Variables whose empty value means something (no From header, no HEAD-only extensions); any other needs a value.
MAY_BE_EMPTY = frozenset({"OperatorEmail", "HeadOnlyExtensions"})
