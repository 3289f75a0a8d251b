"""Load ``topics/<job>/``: first into a typed, validated :class:`JobConfig` of plain values
(:func:`load_config`), then into a :class:`Job`, which builds its topic filter and learned URL
rules from that configuration (:func:`build_job`; :func:`load_job` does both).

A job directory holds, as in Combine's ``/etc/combine/<job>/``:

- ``combine.cfg``: the job configuration, Combine's variable names in
  Config::General syntax (``Name = value`` lines and ``<block> ... </block>``
  lists for allow, exclude, sessionids, serveralias, converters);
- ``topicdefinition.txt`` (and an optional ``stopwords.txt``);
- ``seeds.txt``: one URL per line;
- ``sitesOK.txt`` (optional): hosts whose pages are always accepted.

Every error names the file, the line and what is wrong, so a user can fix a
job without reading code.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import ipaddress
import logging
import math
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from combine_scrapy.access.urls import (
    DEFAULT_ALLOW,
    RULE_TIMEOUT,
    UrlRule,
    UrlRules,
    Verdict,
    check_url,
    parse_serveralias,
)
from combine_scrapy.document.convert import DEFAULT_CONVERTERS, Converter, converter_map
from combine_scrapy.document.neardup import DEFAULT_DISTANCE as NEAR_DUPLICATE_DISTANCE
from combine_scrapy.document.neardup import MAX_DISTANCE as MAX_NEAR_DUPLICATE_DISTANCE
from combine_scrapy.frontier import STRATEGIES
from combine_scrapy.jobfiles import JobFileError, excerpt, read_job_file
from combine_scrapy.links.learned import LEARNED_RULES_FILE, LearnedUrlRules, UrlRulesFileError, read_rules
from combine_scrapy.links.scoring import METHODS as LINK_METHODS
from combine_scrapy.topic import (
    TopicDefinition,
    TopicDefinitionError,
    TopicFilter,
    build_filter,
    load_topic_definition,
)
from combine_scrapy.topic.definition import NoTermRows
from combine_scrapy.topic.filters import PLAIN_NAMES, POSITION_NAMES

logger = logging.getLogger(__name__)

CONFIG_FILE = "combine.cfg"
TOPIC_FILE = "topicdefinition.txt"
SEEDS_FILE = "seeds.txt"
SITES_OK_FILE = "sitesOK.txt"
# What the topic filter reads as a page's text: all of it (Combine), or its main content block.
TOPIC_TEXTS = ("all", "main")
# When a page is rendered in a browser: never, when it looks built by its scripts, or every HTML page.
RENDER_MODES = ("never", "auto", "always")



class JobConfigError(ValueError):
    """A job that cannot be loaded; ``str()`` reads ``file:line: what is wrong``."""

    def __init__(self, path: Path | str, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line else self.path
        super().__init__(f"{where}: {message}")


#: Largest number of seconds a variable takes (100 years: "never" for a lock).
MAX_SECONDS = 100 * 365 * 86_400
#: Largest whole number a variable takes.
MAX_WHOLE = 2**31 - 1
# Digits grouped by ',' must come in threes (1,000,000); '2,5' is a decimal comma, not 25.
_GROUPED = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d*)?")


def _number(text: str, whole: bool = False) -> float:
    """A finite number in ASCII digits ('_', and ',' between groups of three, group digits)."""
    kind = "a whole number" if whole else "a number"
    if not text.isascii():
        raise ValueError(f"expected {kind} in ASCII digits, got {excerpt(text)}")
    if "," in text and not _GROUPED.fullmatch(text):
        raise ValueError(f"expected {kind}, got {excerpt(text)} (write decimals with '.'; ',' only between groups of three digits)")
    cleaned = text.replace("_", "").replace(",", "")
    try:
        value = int(cleaned) if whole else float(cleaned)
    except ValueError:
        raise ValueError(f"expected {kind}, got {excerpt(text)}") from None
    if not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {excerpt(text)}")
    return value


def _in_range(value: float, text: str, allowed: str, low: float, high: float, low_open: bool = False) -> float:
    if value < low or (low_open and value == low) or value > high:
        raise ValueError(f"expected {allowed}, got {excerpt(text)}")
    return value


def _parse_bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "yes", "true", "on"):
        return True
    if value in ("0", "no", "false", "off"):
        return False
    raise ValueError(f"expected 0 or 1 (or yes/no), got {excerpt(text)}")


def _parse_seconds(text: str) -> float:
    return _in_range(_number(text), text, f"a number of seconds from 0 to {MAX_SECONDS:,} (100 years)", 0, MAX_SECONDS)


def _parse_timeout(text: str) -> float:
    return _in_range(_number(text), text, f"a number of seconds > 0, at most {MAX_SECONDS:,}", 0, MAX_SECONDS, low_open=True)


def _parse_positive_int(text: str) -> int:
    return int(_in_range(_number(text, whole=True), text, f"a whole number from 1 to {MAX_WHOLE:,}", 1, MAX_WHOLE))


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
    return int(_in_range(_number(text, whole=True), text, allowed, 0, MAX_NEAR_DUPLICATE_DISTANCE))


def _parse_fraction(text: str) -> float:
    return _in_range(_number(text), text, "a number from 0 to 1", 0, 1)


def _parse_extensions(text: str) -> frozenset[str]:
    return frozenset(word.lstrip(".").lower() for word in text.replace(",", " ").split())


def _parse_count(text: str) -> int:
    return int(_in_range(_number(text, whole=True), text, f"a whole number from 0 to {MAX_WHOLE:,}", 0, MAX_WHOLE))


def _parse_ratio(text: str) -> float:
    return _in_range(_number(text), text, "a number >= 0", 0, math.inf)


def _parse_cutoff(text: str) -> float:
    return _number(text)


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
    "WaitIntervalHost": _Variable("locks", "host", _parse_seconds, "seconds between two requests to one host"),
    "WaitIntervalHarvesterLockSuccess": _Variable("locks", "success", _parse_seconds,
                                                  "seconds before a fetched page is due again"),
    "WaitIntervalHarvesterLockRobotRules": _Variable("locks", "robot_rules", _parse_seconds,
                                                     "the same after a robots.txt refusal"),
    "WaitIntervalHarvesterLockNotFound": _Variable("locks", "not_found", _parse_seconds, "the same after a 404"),
    "WaitIntervalHarvesterLockNotModified": _Variable("locks", "not_modified", _parse_seconds, "the same after a 304"),
    "WaitIntervalHarvesterLockUnavailable": _Variable("locks", "unavailable", _parse_seconds,
                                                      "the same after a 5xx or no answer (the URL stays marked)"),
    "maxUrlLength": _Variable("url_rules", "max_url_length", _parse_positive_int, "URLs this long or longer are refused"),
    # Spider-trap bounds (not Combine's): path depth, repeats of one path segment, URLs kept per host.
    "maxPathDepth": _Variable("url_rules", "max_path_depth", _parse_positive_int, "spider traps: deeper paths are refused"),
    "maxRepeatedSegments": _Variable("url_rules", "max_repeated_segments", _parse_positive_int,
                                     "spider traps: a path segment repeated more often is refused"),
    "maxUrlsPerHost": _Variable("crawling", "max_urls_per_host", _parse_positive_int,
                                "URLs kept in the frontier per host (unset: the setting COMBINE_MAX_URLS_PER_HOST, 10000)"),
    "AutoRecycleLinks": _Variable("crawling", "auto_recycle_links", _parse_bool, "mark the links of relevant pages for crawling"),
    "saveHTML": _Variable("archive", "save_html", _parse_bool, "keep the original document in the record"),
    "doAnalyse": _Variable("analysis", "do_analyse", _parse_bool, "store the language of the text and the country of the server"),
    "extractLinksFromText": _Variable("links", "from_text", _parse_bool, "URLs written in the text are links too"),
    "UserAgentFollowRedirects": _Variable("fetching", "follow_redirects", _parse_bool,
                                          "follow redirects (0: a redirect's target is marked as a new URL)"),
    "UserAgentGetIfModifiedSince": _Variable("fetching", "get_if_modified_since", _parse_bool, "revisit with conditional GET"),
    # Not Combine's: hosts on loopback, private and link-local addresses are fetched only when the job names them
    # (seeds, sitesOK.txt, allow rules), or all of them with AllowPrivateAddresses = 1.
    "AllowPrivateAddresses": _Variable("fetching", "allow_private_addresses", _parse_bool,
                                       "1: fetch loopback and private hosts even when the job does not name them"),
    "UAtimeout": _Variable("fetching", "timeout", _parse_timeout, "seconds a download may take"),
    # Fetch limits (not Combine's names): body bytes, redirects followed, converter seconds and MiB.
    "UAmaxSize": _Variable("fetching", "max_size", _parse_positive_int, "bytes of a body read at most"),
    "UAmaxRedirects": _Variable("fetching", "max_redirects", _parse_positive_int, "redirects followed at most"),
    "HeadOnlyExtensions": _Variable("fetching", "head_only_extensions", _parse_extensions,
                                    "URLs ending so are fetched with HEAD only"),
    "ConverterTimeout": _Variable("analysis", "converter_timeout", _parse_timeout, "seconds a document converter may run"),
    "ConverterMemory": _Variable("analysis", "converter_memory", _parse_positive_int, "MiB of memory a document converter may use"),
    "HarvestRetries": _Variable("fetching", "harvest_retries", _parse_positive_int,
                                "tries of an unavailable URL before it counts as gone"),
    "classifyPlugIn": _Variable("topic", "classify_plugin", str,
                                "topic filter: plain, position, svm, vector, or package.module:function"),
    "tot_cutoff": _Variable("topic", "tot_cutoff", _parse_cutoff,
                            "the topic filter's total-score cut-off (plain's shown; position 90, svm 0, vector 0.2)"),
    "cutoff_norm": _Variable("topic", "cutoff_norm", _parse_cutoff, "the topic filter's normalized-score cut-off"),
    "cutoff_rel": _Variable("topic", "cutoff_rel", _parse_cutoff, "the topic filter's class-share cut-off (percent)"),
    "UserAgent": _Variable("fetching", "user_agent", str, "sent as User-Agent"),
    "OperatorEmail": _Variable("fetching", "operator_email", str, "sent as From (empty: no From header)"),
    "CrawlStrategy": _Variable("crawling", "strategy", _parse_strategy,
                               "BestFirst, BreadthFirstTime (Combine's), BreadthFirst, PageRank or iPageRank"),
    # Continuous operation: keep fetched pages marked and revisit them when their expected age reaches RevisitMaxAge.
    "Revisit": _Variable("crawling", "revisit", _parse_bool, "keep fetched pages marked and revisit them"),
    "RevisitMaxAge": _Variable("crawling", "revisit_max_age", _parse_seconds,
                               "seconds of expected age after which a page is revisited"),
    # Saturation (not Combine's): end a crawl that keeps finding nothing new.
    "StopWhenSaturated": _Variable("crawling", "stop_when_saturated", _parse_count,
                                   "end the crawl (finish reason saturated) once this many fetches in a row gave no new "
                                   "relevant record and the link model expects less than one from as many of the best "
                                   "waiting links (0: never)"),
    # Link relevance: online, propagate (Combine's), RW (relevance weighting) or RWB (RW with random boosts).
    "LinkStrategy": _Variable("links", "method", _parse_link_method,
                              "which links to mark: online (learned while crawling), propagate (Combine: links of relevant pages only), RW or RWB"),
    "LinkThreshold": _Variable("links", "threshold", _parse_fraction, "RW/RWB: links scoring below this are not marked"),
    "LinkPageWeight": _Variable("links", "page_weight", _parse_fraction, "RW/RWB: the page's share in a link's score"),
    "LinkBoostChance": _Variable("links", "boost_chance", _parse_fraction,
                                 "RWB: chance a link below the threshold is marked anyway"),
    "DynamicThreshold": _Variable("links", "dynamic_threshold", _parse_bool, "RW/RWB: move the threshold with the harvest rate"),
    # Tunnelling and repeatability (not Combine's): links followed this many irrelevant pages past the last
    # relevant one; the seed of every random choice of link selection.
    "MaxTunnelDistance": _Variable("links", "max_tunnel_distance", _parse_count,
                                   "links are followed at most this many irrelevant pages past the last relevant one"),
    "RandomSeed": _Variable("links", "random_seed", _parse_count,
                            "seeds every random choice of link selection: same seed, same web, same choices"),
    # Near-duplicates (not Combine's): a page within this many simhash bits of a stored record joins it.
    "nearDuplicates": _Variable("analysis", "near_duplicates", _parse_bool,
                                "a page within nearDuplicateDistance simhash bits of a record joins it"),
    "nearDuplicateDistance": _Variable("analysis", "near_duplicate_distance", _parse_near_duplicate_distance,
                                       "simhash bits (0 to 7)"),
    # Learned URL rules (URL-rule-based focused crawling): `scrapy trial` writes learned_urls.txt, the crawl uses it.
    "LearnedUrlRules": _Variable("learning", "use_learned_url_rules", _parse_bool, "use the URL rules scrapy trial learned"),
    "TrialPages": _Variable("learning", "trial_pages", _parse_positive_int, "pages a site scrapy trial fetches"),
    "UrlRuleThreshold": _Variable("learning", "url_rule_threshold", _parse_ratio, "learned URL rules: precision a rule needs"),
    "UrlRuleDrop": _Variable("learning", "url_rule_drop", _parse_bool, "learned URL rules: drop URLs no rule accepts"),
    "HubContentLinks": _Variable("learning", "hub_content_links", _parse_count,
                                 "learned URL rules: relevant pages a directory page links to"),
    "HubDirectoryLinks": _Variable("learning", "hub_directory_links", _parse_count,
                                   "learned URL rules: directory pages a directory page links to"),
    # Main-content extraction (not Combine's): the topic filter scores all of the text, or only the main content block.
    "topicText": _Variable("topic", "text", _parse_topic_text,
                           "what the topic filter scores: all (the whole text) or main (the main content block)"),
    # Archiving (not Combine's): every fetch as WARC/1.1 request and response records under data/<job>/warc/.
    "saveWARC": _Variable("archive", "save_warc", _parse_bool, "write every fetch as WARC/1.1 records under data/<job>/warc/"),
    "WARCMaxSize": _Variable("archive", "warc_max_size", _parse_positive_int,
                             "bytes of a WARC file before the next one is started"),
    # Sitemaps (not Combine's): robots.txt's Sitemap: lines, /sitemap.xml, as a link source; bounded per host.
    "Sitemaps": _Variable("sitemaps", "from_robots", _parse_bool, "read the sitemaps robots.txt names, as a source of links"),
    "SitemapGuess": _Variable("sitemaps", "guess", _parse_bool, "also ask for /sitemap.xml when robots.txt names none"),
    "SitemapMaxFiles": _Variable("sitemaps", "max_files", _parse_positive_int, "sitemap files read per host at most"),
    "SitemapMaxUrls": _Variable("sitemaps", "max_urls", _parse_positive_int, "URLs taken from one host's sitemaps at most"),
    "SitemapMaxSize": _Variable("sitemaps", "max_size", _parse_positive_int,
                                "bytes of one sitemap (after decompression) read at most"),
    # Negative pages (ACHE's, not Combine's): irrelevant pages kept apart for `scrapy train --crawled`.
    "saveIrrelevant": _Variable("archive", "save_irrelevant", _parse_bool,
                                "keep the pages the topic filter turns down apart, as negatives for scrapy train --crawled"),
    "IrrelevantMaxPages": _Variable("archive", "irrelevant_max_pages", _parse_positive_int, "irrelevant pages kept at most"),
    # Rendering (not Combine's): pages built by their scripts, rendered in headless Chromium (combine_scrapy/render/).
    "Render": _Variable("rendering", "mode", _parse_render_mode,
                        "render pages in a browser: never, auto (pages that look built by their scripts) or always"),
    "RenderMaxPages": _Variable("rendering", "max_pages", _parse_positive_int, "pages rendered at once at most"),
    "RenderMaxPagesPerHost": _Variable("rendering", "max_pages_per_host", _parse_positive_int,
                                       "pages of one host rendered at once at most"),
    "RenderTimeout": _Variable("rendering", "timeout", _parse_timeout, "seconds a render may take"),
}
BLOCKS = ("allow", "exclude", "sessionids", "serveralias", "converters", "render")
#: Variables whose empty value means something (no From header, no HEAD-only extensions); any other needs a value.
MAY_BE_EMPTY = frozenset({"OperatorEmail", "HeadOnlyExtensions"})
#: Combine's binary extensions, fetched with HEAD only (conf/default.cfg).
HEAD_ONLY_EXTENSIONS = _parse_extensions(
    "arff au avi class exe fig gif gz hqx ica jpeg jpg mat mdb mov mp3 mpeg mpg msi pcx pdb psd ram rar raw rmd "
    "rmx sav sdd shar tar tga tgz tif tiff vo wav wmv wmz xbm xpm z zip"
)


@dataclasses.dataclass(frozen=True)
class LockIntervals:
    """Seconds a host, and a URL after each outcome, stay locked (what ``frontier.locks_for`` reads)."""

    host: float = 60
    success: float = 1_000_000
    robot_rules: float = 2_592_000
    not_found: float = 2_592_000
    not_modified: float = 2_592_000
    unavailable: float = 86_400


@dataclasses.dataclass(frozen=True)
class Fetching:
    """How a page is asked for and how much of it is taken."""

    user_agent: str = "combine-scrapy/0.1"
    operator_email: str = ""
    timeout: float = 30
    max_size: int = 16 * 1024 * 1024
    max_redirects: int = 5
    follow_redirects: bool = False
    get_if_modified_since: bool = True
    head_only_extensions: frozenset[str] = HEAD_ONLY_EXTENSIONS
    allow_private_addresses: bool = False
    harvest_retries: int = 5


@dataclasses.dataclass(frozen=True)
class Crawling:
    """The frontier's order and bounds, and what becomes of a fetched URL."""

    strategy: str = "BestFirst"
    auto_recycle_links: bool = True
    revisit: bool = False
    revisit_max_age: float = 86_400
    max_urls_per_host: int | None = None
    stop_when_saturated: int = 0


@dataclasses.dataclass(frozen=True)
class TopicConfig:
    """Which topic filter judges a page, its cut-offs, and which text of the page it reads."""

    classify_plugin: str = "plain"
    tot_cutoff: float | None = None
    cutoff_norm: float | None = None
    cutoff_rel: float | None = None
    text: str = "all"


@dataclasses.dataclass(frozen=True)
class Links:
    """Which links of a page are marked for crawling, and with what priority."""

    method: str = "online"
    threshold: float = 0.3
    page_weight: float = 0.5
    boost_chance: float = 0.1
    dynamic_threshold: bool = False
    max_tunnel_distance: int = 6
    random_seed: int = 1
    from_text: bool = True


@dataclasses.dataclass(frozen=True)
class Learning:
    """The URL rules ``scrapy trial`` learns and the crawl uses."""

    use_learned_url_rules: bool = False
    trial_pages: int = 200
    url_rule_threshold: float = 1.0
    url_rule_drop: bool = True
    hub_content_links: int = 5
    hub_directory_links: int = 30


@dataclasses.dataclass(frozen=True)
class Sitemaps:
    """Sitemaps as a source of links, and their bounds per host."""

    from_robots: bool = False
    guess: bool = False
    max_files: int = 50
    max_urls: int = 50_000
    max_size: int = 50 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class Analysis:
    """How a fetched document becomes a page: converters, language analysis, near-duplicates."""

    # {mime type: (Converter, ...)}, see combine_scrapy.document.convert
    converters: Any = dataclasses.field(default_factory=lambda: DEFAULT_CONVERTERS)
    converter_timeout: float = 30
    converter_memory: int = 1024  # MiB of address space
    do_analyse: bool = False
    near_duplicates: bool = True
    near_duplicate_distance: int = NEAR_DUPLICATE_DISTANCE


@dataclasses.dataclass(frozen=True)
class Archive:
    """What is kept besides the record: the original HTML, WARC files, the pages the topic filter turned down."""

    save_html: bool = True
    save_warc: bool = False
    warc_max_size: int = 1_000_000_000
    save_irrelevant: bool = False
    irrelevant_max_pages: int = 100_000


@dataclasses.dataclass(frozen=True)
class Rendering:
    """Which pages are rendered in a browser, and the bounds of rendering (combine_scrapy/render/)."""

    mode: str = "auto"
    max_pages: int = 4
    max_pages_per_host: int = 1
    timeout: float = 30.0
    #: ``<render>`` rules (as ``<allow>``'s): a page is rendered only on a host one of them matches.
    rules: tuple[UrlRule, ...] = DEFAULT_ALLOW

    def renders(self, url: str, host: str) -> bool:
        """Whether the page at ``url`` (its host name ``host``) may be rendered."""
        return self.mode != "never" and any(_rule_says_yes(rule, url, host) for rule in self.rules)


def _rule_says_yes(rule: UrlRule, url: str, host: str) -> bool:
    """Whether a rule matches; one that runs past its time limit (it backtracks) has not."""
    try:
        return rule.matches(url, host)
    except TimeoutError:
        return False


#: The groups of a JobConfig that combine.cfg variables set, and their classes.
GROUPS: dict[str, type] = {
    "locks": LockIntervals,
    "fetching": Fetching,
    "crawling": Crawling,
    "topic": TopicConfig,
    "links": Links,
    "learning": Learning,
    "sitemaps": Sitemaps,
    "analysis": Analysis,
    "archive": Archive,
    "rendering": Rendering,
}


@dataclasses.dataclass(frozen=True)
class JobConfig:
    """A job's files read and validated, as plain values: loading it builds no topic filter and reads no model."""

    name: str
    directory: Path
    seeds: tuple[str, ...]
    url_rules: UrlRules
    definition: TopicDefinition | None
    sites_ok: frozenset[str] = frozenset()
    #: Lines of seeds.txt the URL rules refuse (the crawl warns about each).
    refused_seeds: tuple[RefusedSeed, ...] = ()
    #: {variable name: its line in combine.cfg}, for errors found when the job is built.
    variable_lines: dict[str, int] = dataclasses.field(default_factory=dict)
    locks: LockIntervals = LockIntervals()
    fetching: Fetching = Fetching()
    crawling: Crawling = Crawling()
    topic: TopicConfig = TopicConfig()
    links: Links = Links()
    learning: Learning = Learning()
    sitemaps: Sitemaps = Sitemaps()
    analysis: Analysis = Analysis()
    archive: Archive = Archive()
    rendering: Rendering = Rendering()


class Job(JobConfig):
    """A job's configuration with what is built from it: its topic filter and learned URL rules, each built once, when first used.

    ``build_job`` builds both at once, so that a bad job fails when it is loaded.
    """

    def __repr__(self) -> str:
        """Short: the name and directory (the shell lists the job by it), not every setting."""
        return f"<Job {self.name} in {self.directory}>"

    @classmethod
    def of(cls, config: JobConfig) -> Job:
        """The job of ``config``, nothing built yet."""
        return cls(**{field.name: getattr(config, field.name) for field in dataclasses.fields(config)})

    @functools.cached_property
    def topic_filter(self) -> TopicFilter:
        return _topic_filter(self)

    @functools.cached_property
    def learned_url_rules(self) -> LearnedUrlRules | None:
        """The rules of learned_urls.txt when LearnedUrlRules = 1, else None."""
        if not self.learning.use_learned_url_rules:
            return None
        return _learned_url_rules(self.directory, self.directory / CONFIG_FILE, self.variable_lines["LearnedUrlRules"])


def _read_lines(path: Path, missing: str | None = None) -> list[str] | None:
    """The lines of a job file (see combine_scrapy.jobfiles); None when it is absent and ``missing`` is None."""
    try:
        text = read_job_file(path)
    except JobFileError as e:
        raise JobConfigError(e.path, e.line, e.message) from e
    if text is None:
        if missing is not None:
            raise JobConfigError(path, None, f"missing: {missing}")
        return None
    return text.splitlines()


def _unknown_variable(name: str) -> str:
    close = difflib.get_close_matches(name, [*VARIABLES, *BLOCKS], n=1) if len(name) <= 100 else []
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown variable {excerpt(name)}{hint}"


_NAME = re.compile(r"[A-Za-z_]\w*")
# Anchored at both ends with no lazy group: linear on any line (a lazy '(.*?)\s*$' is quadratic on long blanks).
_BLOCK_OPEN = re.compile(r"<\s*([A-Za-z_]\w*)\s*>")
_BLOCK_CLOSE = re.compile(r"<\s*/\s*([A-Za-z_]\w*)\s*>")


def parse_config(path: Path) -> tuple[dict[str, tuple[int, str]], dict[str, list[tuple[int, str]]]]:
    """Split combine.cfg into ``{name: (line, value)}`` and ``{block: [(line, entry)]}``."""
    values: dict[str, tuple[int, str]] = {}
    blocks: dict[str, list[tuple[int, str]]] = {}
    open_block: tuple[str, int] | None = None
    for number, raw in enumerate(_read_lines(path, "every job needs its combine.cfg") or (), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if open_block:
            closing = _BLOCK_CLOSE.fullmatch(line)
            if closing:
                if closing.group(1) != open_block[0]:
                    raise JobConfigError(path, number, f"</{closing.group(1)}> closes <{open_block[0]}> opened on line {open_block[1]}")
                open_block = None
            elif _BLOCK_OPEN.fullmatch(line):
                raise JobConfigError(
                    path, number, f"{line} inside <{open_block[0]}> (opened on line {open_block[1]}): close it first with </{open_block[0]}>"
                )
            else:
                blocks[open_block[0]].append((number, line))
            continue
        opening = _BLOCK_OPEN.fullmatch(line)
        if opening:
            name = opening.group(1)
            if name not in BLOCKS:
                raise JobConfigError(path, number, _unknown_variable(name))
            if name in blocks:
                raise JobConfigError(path, number, f"block <{name}> given twice")
            blocks[name] = []
            open_block = (name, number)
            continue
        name, equals, value = line.partition("=")
        name, value = name.strip(), value.strip()
        if not equals or not _NAME.fullmatch(name):
            if _BLOCK_CLOSE.fullmatch(line):
                raise JobConfigError(path, number, f"{line} closes a block that is not open")
            raise JobConfigError(path, number, f"expected 'Name = value' or '<block>', got {excerpt(line)}")
        if name not in VARIABLES:
            raise JobConfigError(path, number, _unknown_variable(name))
        if name in values:
            raise JobConfigError(path, number, f"{name} already set on line {values[name][0]}")
        values[name] = (number, value)
    if open_block:
        raise JobConfigError(path, open_block[1], f"<{open_block[0]}> is never closed")
    return values, blocks


def _rule_block(path: Path, name: str, entries: list[tuple[int, str]]) -> tuple[UrlRule, ...]:
    """The rules of an ``<allow>``-like block; an error names the line."""
    rules = []
    for number, entry in entries:
        try:
            rule = UrlRule.parse(entry, source=f"{path.name} line {number}")
        except ValueError as e:
            raise JobConfigError(path, number, f"bad {name} rule {excerpt(entry)}: {e}") from e
        if rule.backtracks:
            logger.warning("%s line %d: %s rule %s may backtrack (%s): it runs with a %g s limit on each URL,"
                           " and a URL it cannot decide in time is refused", path, number, name,
                           excerpt(entry), rule.backtracks, RULE_TIMEOUT)
        rules.append(rule)
    return tuple(rules)


def _url_rules(path: Path, limits: dict[str, int], blocks: dict[str, list[tuple[int, str]]]) -> UrlRules:
    changes: dict[str, Any] = dict(limits)
    for name in ("allow", "exclude"):
        if name in blocks:
            changes[name] = _rule_block(path, name, blocks[name])
    if "sessionids" in blocks:
        changes["sessionids"] = tuple(entry for _, entry in blocks["sessionids"])
    if "serveralias" in blocks:
        aliases: dict[str, str] = {}
        for number, entry in blocks["serveralias"]:
            try:
                aliases.update(parse_serveralias(entry))
            except ValueError as e:
                raise JobConfigError(path, number, f"bad serveralias {excerpt(entry)}: {e}") from e
        changes["serveralias"] = aliases
    return dataclasses.replace(UrlRules(), **changes)


def _converters(path: Path, entries: list[tuple[int, str]]) -> Mapping[str, tuple[Converter, ...]]:
    """The job's converter lines on top of the defaults; a type it maps replaces the default for that type."""
    for number, entry in entries:
        try:
            converter_map([entry])
        except ValueError as e:
            raise JobConfigError(path, number, f"bad converter {excerpt(entry)}: {e}") from e
    return converter_map([entry for _, entry in entries], DEFAULT_CONVERTERS)


def _list_file(path: Path, missing: str | None = None) -> list[tuple[int, str]]:
    """Non-empty, non-comment lines of a one-entry-per-line file (optional unless ``missing`` says why not)."""
    return [
        (number, line.strip())
        for number, line in enumerate(_read_lines(path, missing) or (), start=1)
        if line.strip() and not line.strip().startswith("#")
    ]


_SITE = re.compile(r"[a-z0-9.\-]+(?::\d{1,5})?|\[[0-9a-f:.]+\](?::\d{1,5})?")


def _sites_ok(path: Path) -> frozenset[str]:
    """Hosts (``host`` or ``host:port``) of sitesOK.txt, lower-cased."""
    sites = set()
    for number, entry in _list_file(path):
        host = entry.lower().rstrip(".")
        if not _SITE.fullmatch(host):
            hint = " (write the host only, without http:// or a path)" if "/" in host else ""
            raise JobConfigError(path, number, f"{excerpt(entry)} is not a host name: write one host (or host:port) a line{hint}")
        sites.add(host)
    return frozenset(sites)


@dataclasses.dataclass(frozen=True)
class RefusedSeed:
    """A line of seeds.txt that the job's URL rules refuse, and why, for the crawl to warn about."""

    path: Path
    line: int
    url: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: seed {excerpt(self.url)} refused: {self.reason}"


#: Longest seed line canonicalized; a longer one is refused at once (maxUrlLength refuses it anyway).
MAX_SEED_CHARACTERS = 65_536


def refusal_reason(url: str, verdict: Verdict) -> str:
    """Why the URL rules refuse ``url``: the rule, and the string it was matched against."""
    reason = f"{verdict.reason}: {verdict.detail}" if verdict.detail else verdict.reason
    if "://" not in url and re.match(r"[\w.-]+\.[a-z]{2,}(?:[:/]|$)", url, re.IGNORECASE):
        reason += f" (did you mean 'http://{excerpt(url)[1:-1]}'?)"
    return reason


def _seeds(path: Path, rules: UrlRules) -> tuple[tuple[str, ...], tuple[RefusedSeed, ...]]:
    """The canonical seeds, and the lines the URL rules refuse (a crawl warns about them and goes on)."""
    seeds = []
    refused = []
    for number, url in _list_file(path, "list the start URLs, one per line"):
        if len(url) > MAX_SEED_CHARACTERS:
            refused.append(RefusedSeed(path, number, url, f"too long: {len(url):,} characters"))
            continue
        if re.search(r"\s", url):
            refused.append(RefusedSeed(path, number, url, "holds a space: write one URL a line (a space in a URL is %20)"))
            continue
        verdict = check_url(url, rules)
        if not verdict.ok:
            refused.append(RefusedSeed(path, number, url, refusal_reason(url, verdict)))
        elif one_word_host(verdict.url):
            refused.append(RefusedSeed(
                path, number, url,
                f"host {excerpt(urlsplit(verdict.url).hostname or '')} is one word: a seed names a full host "
                "(www.example.org), an IP address or localhost",
            ))
        else:
            seeds.append(verdict.url)
    return tuple(dict.fromkeys(seeds)), tuple(refused)


#: Why a seed with a one-word host is refused (the count's name in scrapy seed's answer).
ONE_WORD_HOST = "one_word_host"


def one_word_host(url: str) -> bool:
    """Whether the URL's host is a single word that is neither an IP address nor localhost (``http://x/``, a slip
    for a full name that only a local resolver's search domains would make something of)."""
    host = urlsplit(url).hostname or ""
    if "." in host or ":" in host or host == "localhost":
        return False
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return True
    return False


def find_job_dir(name: str, topics_dir: Path | str) -> Path:
    if not re.fullmatch(r"[\w.-]+", name) or name.startswith("."):
        raise JobConfigError(topics_dir, None, f"bad job name {excerpt(name)}: use letters, digits, '.', '-', '_'")
    directory = Path(topics_dir) / name
    if not directory.is_dir():
        known = sorted(p.name for p in Path(topics_dir).iterdir() if p.is_dir()) if Path(topics_dir).is_dir() else []
        raise JobConfigError(directory, None, f"no such job; known jobs: {', '.join(known) or 'none'}")
    return directory


def _learned_url_rules(directory: Path, config_path: Path, line: int) -> LearnedUrlRules:
    path = directory / LEARNED_RULES_FILE
    if not os.path.lexists(path):
        raise JobConfigError(config_path, line, f"LearnedUrlRules = 1, but {path} is missing: run 'scrapy trial {directory.name}' first")
    try:
        return read_rules(path)
    except UrlRulesFileError as e:
        raise JobConfigError(e.source, e.line, e.message) from e


def load_config(name: str, topics_dir: Path | str = "topics") -> JobConfig:
    """Read and validate job ``name`` from ``topics_dir/name/``: its files, as plain values."""
    directory = find_job_dir(name, topics_dir)
    config_path = directory / CONFIG_FILE
    values, blocks = parse_config(config_path)

    groups: dict[str, dict[str, Any]] = {group: {} for group in (*GROUPS, "url_rules")}
    for name_, (number, text) in values.items():
        variable = VARIABLES[name_]
        if not text and name_ not in MAY_BE_EMPTY:
            raise JobConfigError(config_path, number, f"{name_}: no value; leave the line out (or comment it out with #) for the default")
        try:
            groups[variable.group][variable.field] = variable.parse(text)
        except ValueError as e:
            hint = " (a comment goes on a line of its own)" if "#" in text else ""
            raise JobConfigError(config_path, number, f"{name_}: {e}{hint}") from e

    url_rules = _url_rules(config_path, groups.pop("url_rules"), blocks)
    sites_ok = _sites_ok(directory / SITES_OK_FILE)
    if "converters" in blocks:
        groups["analysis"]["converters"] = _converters(config_path, blocks["converters"])
    if "render" in blocks:
        groups["rendering"]["rules"] = _rule_block(config_path, "render", blocks["render"])

    topic_path = directory / TOPIC_FILE
    definition = None
    if os.path.lexists(topic_path):
        try:
            definition = load_topic_definition(topic_path)
        except NoTermRows as e:
            # svm, vector and plug-ins need no topic definition: newjob's, comments only, is as good as none.
            if TopicConfig(**groups["topic"]).classify_plugin in (*PLAIN_NAMES, *POSITION_NAMES):
                raise JobConfigError(e.source, e.line, e.message) from e
        except TopicDefinitionError as e:
            raise JobConfigError(e.source, e.line, e.message) from e

    seeds, refused_seeds = _seeds(directory / SEEDS_FILE, url_rules)
    return JobConfig(
        name=directory.name,
        directory=directory,
        seeds=seeds,
        refused_seeds=refused_seeds,
        url_rules=url_rules,
        definition=definition,
        sites_ok=sites_ok,
        variable_lines={name_: number for name_, (number, _) in values.items()},
        **{group: GROUPS[group](**fields) for group, fields in groups.items()},
    )


def _topic_filter(config: JobConfig) -> TopicFilter:
    """The topic filter the job's classifyPlugIn names, with its cut-offs (an SVM filter reads its model)."""
    topic = config.topic
    try:
        return build_filter(
            topic.classify_plugin,
            config.definition,
            tot_cutoff=topic.tot_cutoff,
            cutoff_norm=topic.cutoff_norm,
            cutoff_rel=topic.cutoff_rel,
            sites_ok=config.sites_ok,
            job_dir=config.directory,
        )
    except (ValueError, ImportError, OSError) as e:
        needs_definition = topic.classify_plugin in (*PLAIN_NAMES, *POSITION_NAMES)
        missing = f" ({TOPIC_FILE} is missing)" if needs_definition and not (config.directory / TOPIC_FILE).exists() else ""
        raise JobConfigError(
            config.directory / CONFIG_FILE, config.variable_lines.get("classifyPlugIn"), f"classifyPlugIn {excerpt(topic.classify_plugin)}: {e}{missing}"
        ) from e


def build_job(config: JobConfig) -> Job:
    """The job of ``config`` with its topic filter and (when LearnedUrlRules = 1) learned URL rules built now."""
    job = Job.of(config)
    _ = job.topic_filter, job.learned_url_rules  # built now: a bad filter or rules file fails at load, not mid-crawl
    return job


def load_job(name: str, topics_dir: Path | str = "topics") -> Job:
    """Load, validate and build job ``name`` from ``topics_dir/name/`` (see load_config and build_job)."""
    return build_job(load_config(name, topics_dir))
