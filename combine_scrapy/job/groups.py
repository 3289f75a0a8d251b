"""The sections of a job that combine.cfg's variables set (:data:`GROUPS`), each a frozen dataclass of plain
values with Combine's defaults: what the crawl's parts read (``job.locks``, ``job.fetching``, ...).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from combine_scrapy.access.urls import DEFAULT_ALLOW, UrlRule
from combine_scrapy.document.convert import DEFAULT_CONVERTERS, Converter, Limits
from combine_scrapy.document.neardup import DEFAULT_DISTANCE as NEAR_DUPLICATE_DISTANCE
from combine_scrapy.job.grammar import parse_extensions

#: Combine's binary extensions, fetched with HEAD only (conf/default.cfg).
HEAD_ONLY_EXTENSIONS = parse_extensions(
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

    #: {mime type: (Converter, ...)}, see combine_scrapy.document.convert
    converters: Mapping[str, tuple[Converter, ...]] = dataclasses.field(default_factory=lambda: DEFAULT_CONVERTERS)
    converter_timeout: float = 30
    converter_memory: int = 1024  # MiB of address space
    do_analyse: bool = False
    near_duplicates: bool = True
    near_duplicate_distance: int = NEAR_DUPLICATE_DISTANCE

    @property
    def converter_limits(self) -> Limits:
        """The bounds of one converter run (ConverterTimeout seconds, ConverterMemory MiB)."""
        return Limits(timeout=self.converter_timeout, memory=self.converter_memory * 1024 * 1024)

    @property
    def near_duplicate_join(self) -> int | None:
        """Bits within which the record store joins a page to a stored record (None: near-duplicates off)."""
        return self.near_duplicate_distance if self.near_duplicates else None


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

