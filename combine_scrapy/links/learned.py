"""Learned URL rules: the URL-rule-based focused crawl (UBFC).

Pages made from one template share a topic and have similar URLs. A trial
crawl fetches up to N pages of every topic-relevant site breadth-first and
the topic filter classifies them; this module then sorts them into relevant
content pages (P), relevant directory pages (D: more than h1 of their
out-links are relevant content pages, or more than h2 are relevant directory
pages) and irrelevant pages, and learns for each set a few readable regular
expressions over the URL's path and query. In the focused crawl a link on a
learned site is fetched when the evidence of the positive rules it matches
(content and directory), over that of the negative rules (irrelevant),
exceeds the threshold h: P/N > h. One addition to UBFC as published: an out-link the
trial's page cap left unfetched counts as relevant content, when judging
directory pages, if a learned content rule matches it.

The rules live in ``topics/<job>/learned_urls.txt``, one per line, so a person
can review and edit them. Pure code: no Scrapy.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from combine_scrapy.access.urls import UrlRules, check_url, host_of
from combine_scrapy.jobfiles import JobFileError, read_job_file
from combine_scrapy.links.online import OnlineLinkLearner
from combine_scrapy.links.scoring import LinkCandidate, LinkScorer

LEARNED_RULES_FILE = "learned_urls.txt"

CONTENT = "content"
DIRECTORY = "directory"
IRRELEVANT = "irrelevant"
KINDS = (CONTENT, DIRECTORY, IRRELEVANT)
POSITIVE_KINDS = (CONTENT, DIRECTORY)

#: UBFC's hub thresholds: more than h1 relevant content pages, or more than h2 directory pages, linked.
HUB_CONTENT_LINKS = 5
HUB_DIRECTORY_LINKS = 30
#: A rule is kept when it covers at least this many trial pages of its kind, at least this precisely.
MIN_SUPPORT = 3
MIN_PRECISION = 0.9
#: Rules kept per site and kind, the best supported first: a small set a person can read.
MAX_RULES = 10
#: A position whose values fall into at most this many shapes becomes an alternation, unless it looks variable:
#: at least MIN_VARIABLE_SHAPES shapes, one of them seen once (names, slugs: any text then).
MAX_ALTERNATIVES = 3
MIN_VARIABLE_SHAPES = 3

_ALNUM = re.compile(r"[A-Za-z0-9]+")
_LETTERS_DIGITS = re.compile(r"([A-Za-z]*)\d+([A-Za-z]*)")
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,5}$")
_SPECIAL = re.compile(r"([.^$*+?{}\[\]\\|()])")


def _escape(text: str) -> str:
    """Escape regex syntax only, so rules stay readable (``blue-widget``, not ``blue\\-widget``)."""
    return _SPECIAL.sub(r"\\\1", text)


def _shape(value: str) -> str:
    """The value as a regex with its digit runs and ids generalized: ``item-42.html`` -> ``item-\\d+\\.html``."""
    parts, start = [], 0
    for match in _ALNUM.finditer(value):
        token = match.group()
        parts.append(_escape(value[start:match.start()]))
        if token.isdigit():
            parts.append(r"\d+")
        elif any(c.isdigit() for c in token):
            letters = _LETTERS_DIGITS.fullmatch(token)
            parts.append(f"{letters.group(1)}\\d+{letters.group(2)}" if letters else "[0-9A-Za-z]+")
        else:
            parts.append(_escape(token))
        start = match.end()
    parts.append(_escape(value[start:]))
    return "".join(parts)


def _render(values: Counter[str], in_query: bool) -> str:
    """One regex for the values seen at one position of a URL template.

    One shape: that shape (a literal, or digit classes). A few shapes, too few or
    too often repeated to be names: an alternation (template keywords,
    ``(?:products|reviews)``). Otherwise a variable segment: any text, keeping a
    common file extension.
    """
    shapes: Counter[str] = Counter()
    for value, count in values.items():
        shapes[_shape(value)] += count
    if len(shapes) == 1:
        return next(iter(shapes))
    variable = len(shapes) >= MIN_VARIABLE_SHAPES and min(shapes.values()) == 1
    if len(shapes) <= MAX_ALTERNATIVES and not variable:
        return "(?:" + "|".join(sorted(shapes)) + ")"
    if in_query:
        return "[^&]*"
    extensions = {match.group() if (match := _EXTENSION.search(value)) else "" for value in values}
    extension = extensions.pop() if len(extensions) == 1 else ""
    return ("[^/]*" if "" in values else "[^/]+") + _escape(extension)


def url_target(url: str) -> str:
    """What a rule is matched against: the URL's path, and ``?query`` when it has one."""
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


#: A URL's structure: its path depth, and per position None for a path segment, else the query name.
_Structure = tuple[int, tuple[str | None, ...]]


@dataclass(frozen=True)
class _Template:
    """URLs of one structure (path depth, query names), with the values seen at each position."""

    structure: _Structure
    positions: tuple[Counter[str], ...]
    query_names: tuple[str | None, ...]  # per position: None for a path segment, else the query name

    @classmethod
    def of(cls, target: str) -> _Template:
        path, _, query = target.partition("?")
        segments = path.split("/")[1:]
        pairs = [pair.partition("=") for pair in query.split("&")] if query else []
        names = (None,) * len(segments) + tuple(name + separator for name, separator, _ in pairs)
        values = [*segments, *(value for _, _, value in pairs)]
        return cls((len(segments), names), tuple(Counter([value]) for value in values), names)

    @property
    def size(self) -> int:
        """How many URLs the template was made from."""
        return sum(self.positions[0].values())

    def merge(self, other: _Template) -> _Template:
        return _Template(self.structure, tuple(a + b for a, b in zip(self.positions, other.positions)), self.query_names)

    def pieces(self) -> tuple[str, ...]:
        return tuple(_render(values, name is not None) for values, name in zip(self.positions, self.query_names))

    def regex(self) -> str:
        pieces = self.pieces()
        depth = self.structure[0]
        path = "/".join(pieces[:depth])
        names = [name or "" for name in self.query_names[depth:]]  # past the path depth: query names, never None
        query = "&".join(_escape(name) + piece for name, piece in zip(names, pieces[depth:]))
        return f"^/{path}" + (rf"\?{query}" if query else "") + "$"


@dataclass(frozen=True)
class UrlPattern:
    """One learned (or hand-written) rule: URLs of ``site`` whose path and query match ``regex`` are of ``kind``.

    ``support`` is how many trial pages of its kind it covers, ``precision`` the
    share of the trial pages it matches that are of its kind; their product is
    the rule's weight as evidence.
    """

    site: str
    kind: str
    regex: str
    support: int = 1
    precision: float = 1.0
    compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "compiled", re.compile(self.regex))

    @property
    def weight(self) -> float:
        return self.support * self.precision

    def matches(self, target: str) -> bool:
        return self.compiled.search(target) is not None


@dataclass(frozen=True)
class TrialPage:
    """A page the trial crawl fetched: its canonical URL, the topic filter's verdict, its out-links."""

    url: str
    relevant: bool
    links: tuple[str, ...] = ()


def directory_pages(pages: Iterable[TrialPage], content: set[str], h1: int = HUB_CONTENT_LINKS,
                    h2: int = HUB_DIRECTORY_LINKS) -> set[str]:
    """URLs of the relevant directory pages: more than ``h1`` out-links to relevant content pages,
    or more than ``h2`` to relevant directory pages (repeated until no page is added)."""
    targets = {page.url: set(page.links) - {page.url} for page in pages}
    hubs: set[str] = set()
    while True:
        added = {
            url for url, linked in targets.items()
            if url not in hubs and (len(linked & content) > h1 or len(linked & hubs) > h2)
        }
        if not added:
            return hubs
        hubs |= added


def _precision_of(regex: str, targets: dict[str, bool]) -> tuple[int, float]:
    """``(support, precision)`` of a regex over ``{target: is of the kind}``."""
    compiled = re.compile(regex)
    matched = [wanted for target, wanted in targets.items() if compiled.search(target)]
    support = sum(matched)
    return support, support / len(matched) if matched else 0.0


def learn_patterns(site: str, kind: str, targets: dict[str, bool], *, min_support: int = MIN_SUPPORT,
                   min_precision: float = MIN_PRECISION, max_rules: int = MAX_RULES) -> list[UrlPattern]:
    """A few regexes covering the targets of ``kind`` (``{target: is of the kind}``, all trial pages of a site).

    URLs of one shape (digit runs and ids generalized) start as one template;
    templates of one structure that differ at a single position are merged
    while the merged rule keeps ``min_precision`` on the trial pages. What
    covers at least ``min_support`` pages is kept, the best supported first.
    """
    templates: dict[str, _Template] = {}
    for target, wanted in targets.items():
        if wanted:
            template = _Template.of(target)
            key = template.regex()
            templates[key] = templates[key].merge(template) if key in templates else template
    templates = {regex: t for regex, t in templates.items() if _precision_of(regex, targets)[1] >= min_precision}
    merged = True
    while merged:
        merged = False
        for candidates in _merge_candidates(list(templates.values())):
            union = candidates[0]
            for template in candidates[1:]:
                union = union.merge(template)
            if _precision_of(union.regex(), targets)[1] >= min_precision:
                for template in candidates:
                    del templates[template.regex()]
                same = templates.pop(union.regex(), None)  # a template the union now reads like joins it
                union = union.merge(same) if same else union
                templates[union.regex()] = union
                merged = True
                break
    patterns = []
    for regex in templates:
        support, precision = _precision_of(regex, targets)
        if support >= min_support and precision >= min_precision:
            # Rounded down: 1.00 only for a rule that matched no page of another kind (an exclusive rule).
            patterns.append(UrlPattern(site, kind, regex, support, math.floor(precision * 100 + 1e-9) / 100))
    patterns.sort(key=lambda p: (-p.support, p.regex))
    return patterns[:max_rules]


def _merge_candidates(templates: list[_Template]) -> list[list[_Template]]:
    """Groups of templates of one structure equal everywhere but at one position, the largest first."""
    groups: dict[tuple[_Structure, int, tuple[str, ...]], list[_Template]] = defaultdict(list)
    for template in templates:
        pieces = template.pieces()
        for position in range(len(pieces)):
            groups[(template.structure, position, pieces[:position] + pieces[position + 1:])].append(template)
    candidates = [group for group in groups.values() if len(group) > 1]
    candidates.sort(key=lambda group: -sum(template.size for template in group))
    return candidates


def _predicted_content(pages: list[TrialPage], site: str, content_rules: list[UrlPattern]) -> set[str]:
    """Out-links the trial did not fetch (its page cap stopped it) that a learned content rule matches.

    They count as relevant content when judging directory pages, so a directory
    page whose listed pages lay beyond the cap is still recognized.
    """
    fetched = {page.url for page in pages}
    unfetched = {link for page in pages for link in page.links if link not in fetched and host_of(link) == site}
    return {url for url in unfetched if any(rule.matches(url_target(url)) for rule in content_rules)}


@dataclass(frozen=True)
class SiteTrial:
    """What the trial found on one site: its pages sorted into P, D and the irrelevant, and the rules learned."""

    site: str
    pages: int
    content: frozenset[str]
    directories: frozenset[str]
    patterns: tuple[UrlPattern, ...]

    @property
    def relevant(self) -> bool:
        """A topic-relevant site: the trial found relevant pages on it."""
        return bool(self.content)


def learn_site_rules(pages: Iterable[TrialPage], *, h1: int = HUB_CONTENT_LINKS, h2: int = HUB_DIRECTORY_LINKS,
                     min_support: int = MIN_SUPPORT, min_precision: float = MIN_PRECISION,
                     max_rules: int = MAX_RULES) -> list[SiteTrial]:
    """Learn content, directory and irrelevant rules for every site of the trial pages."""
    by_site: dict[str, list[TrialPage]] = defaultdict(list)
    for page in pages:
        by_site[host_of(page.url)].append(page)
    trials = []
    for site, site_pages in sorted(by_site.items()):
        content = {page.url for page in site_pages if page.relevant}
        if not content:
            trials.append(SiteTrial(site, len(site_pages), frozenset(), frozenset(), ()))
            continue
        targets = {url_target(page.url): page.url in content for page in site_pages}
        patterns = learn_patterns(site, CONTENT, targets, min_support=min_support, min_precision=min_precision,
                                  max_rules=max_rules)
        directories = directory_pages(site_pages, content | _predicted_content(site_pages, site, patterns), h1, h2)
        targets = {url_target(page.url): page.url in directories for page in site_pages}
        patterns += learn_patterns(site, DIRECTORY, targets, min_support=min_support, min_precision=min_precision,
                                   max_rules=max_rules)
        targets = {url_target(page.url): page.url not in content | directories for page in site_pages}
        patterns += learn_patterns(site, IRRELEVANT, targets, min_support=min_support, min_precision=min_precision,
                                   max_rules=max_rules)
        trials.append(SiteTrial(site, len(site_pages), frozenset(content), frozenset(directories), tuple(patterns)))
    return trials


@dataclass(frozen=True)
class UrlDecision:
    """The learned rules' verdict on one URL.

    ``fetch`` is True when the positive evidence over the negative exceeds the
    threshold (any positive evidence when no negative rule matches); False only
    when a matching irrelevant rule is exclusive (it matched no relevant or
    directory page of the trial, precision 1.00), so a rule that also covers
    pages of the topic can never refuse a link; None when the rules cannot
    decide (a site without rules, a link no rule matches, or only
    non-exclusive irrelevant rules outweigh it): the job's link method decides.
    ``priority`` is the positive share of the evidence, in [0, 1].
    """

    site: str
    fetch: bool | None
    priority: float = 0.0
    positive: tuple[UrlPattern, ...] = ()
    negative: tuple[UrlPattern, ...] = ()


class LearnedUrlRules:
    """The rules of all learned sites, and the focused-phase decision."""

    def __init__(self, patterns: Iterable[UrlPattern], sites: Iterable[str] = ()):
        self.patterns = tuple(patterns)
        self.by_site: dict[str, list[UrlPattern]] = {site: [] for site in sites}
        for pattern in self.patterns:
            self.by_site.setdefault(pattern.site, []).append(pattern)

    def decide(self, url: str, threshold: float = 1.0) -> UrlDecision:
        """1. Is the URL's site a learned topic-relevant site? 2-3. Which positive and negative rules
        match? 4. Fetch when P/N > ``threshold`` (P, N: summed weights; N = 0 fetches on any P > 0);
        refuse only on an exclusive irrelevant rule; otherwise leave it undecided."""
        site = host_of(url)
        patterns = self.by_site.get(site)
        if patterns is None:
            return UrlDecision(site, None)
        target = url_target(url)
        matching = [pattern for pattern in patterns if pattern.matches(target)]
        positive = tuple(p for p in matching if p.kind in POSITIVE_KINDS)
        negative = tuple(p for p in matching if p.kind == IRRELEVANT)
        evidence_for = sum(p.weight for p in positive)
        evidence_against = sum(p.weight for p in negative)
        fetch: bool | None = evidence_for > 0 and (evidence_against == 0 or evidence_for / evidence_against > threshold)
        if not fetch and not any(p.precision >= 1.0 for p in negative):
            fetch = None
        total = evidence_for + evidence_against
        return UrlDecision(site, fetch, evidence_for / total if total else 0.0, positive, negative)


class LearnedLinkScorer:
    """Link selection with learned URL rules: on a learned site the rules fetch the links they vouch for
    (with their priority, for BestFirst) and refuse the links an exclusive irrelevant rule matches, whatever
    the page they are on; every other link is the job's link method's to choose, which also sees and learns
    from all of them.

    Rules see links canonicalized with the job's ``url_rules``, as the frontier sees them (invalid links
    go to the link method, and the frontier refuses them). Refused links are dropped, or with
    ``drop_rejected`` off marked with their (lower) priority.
    """

    def __init__(self, rules: LearnedUrlRules, fallback: LinkScorer, url_rules: UrlRules | None = None, *,
                 threshold: float = 1.0, drop_rejected: bool = True):
        self.rules = rules
        self.fallback = fallback
        self.url_rules = url_rules
        self.threshold = threshold
        self.drop_rejected = drop_rejected

    @property
    def learner(self) -> OnlineLinkLearner | None:
        return self.fallback.learner

    def select(self, links: Iterable[LinkCandidate], page_score: float, page_relevant: bool, *, distance: int = 0,
               source_url: str = "") -> list[tuple[str, float]]:
        """As :meth:`LinkScorer.select`, with the rules' say first."""
        links = list(links)
        chosen_by_method = dict(self.fallback.select(
            links, page_score, page_relevant, distance=distance, source_url=source_url,
        ))
        learner = self.fallback.learner
        chosen = []
        for link in links:
            canonical = learner.canonical(link.url) if learner is not None else _canonical(link.url, self.url_rules)
            decision = self.rules.decide(canonical, self.threshold) if canonical is not None else None
            if decision is None or decision.fetch is None:
                if link.url in chosen_by_method:
                    chosen.append((link.url, chosen_by_method[link.url]))
            elif decision.fetch or not self.drop_rejected:
                chosen.append((link.url, decision.priority))
        return chosen

    def observe(self, url: str, relevant: bool, score: float = 0.0) -> int:
        return self.fallback.observe(url, relevant, score)

    @property
    def rescore_due(self) -> bool:
        return self.fallback.rescore_due

    def rescore(self) -> dict[str, float]:
        """The link method's new priorities, but for the links the rules decide: the rules' say stays first."""
        return {url: priority for url, priority in self.fallback.rescore().items()
                if (decision := self.rules.decide(url, self.threshold)) is None or decision.fetch is None}


def _canonical(url: str, url_rules: UrlRules | None) -> str | None:
    verdict = check_url(url, url_rules)
    return verdict.url if verdict.ok else None


class UrlRulesFileError(ValueError):
    """A learned-rules file that cannot be used; ``str()`` reads ``file:line: what is wrong``."""

    def __init__(self, source: str | Path, line: int | None, message: str):
        self.source = str(source)
        self.line = line
        self.message = message
        super().__init__(f"{self.source}:{line}: {message}" if line else f"{self.source}: {message}")


FILE_HELP = """\
# One rule a line: KIND REGEX [support=N] [precision=X], under the 'site HOST[:PORT]' it belongs to.
# REGEX is searched in the URL's path and query (/path?query) and holds no spaces.
# KIND: content (relevant pages), directory (pages linking to many of them) or irrelevant.
# A link on a listed site is fetched when the summed support x precision of the content and
# directory rules it matches, over that of the irrelevant rules, exceeds UrlRuleThreshold
# (any positive evidence when no irrelevant rule matches). It is refused only when an irrelevant
# rule with precision=1.00 matches it; every other link is left to the job's LinkStrategy.
# A rule written by hand without support= counts as support=1. Edit freely; '#' starts a comment.
"""


def format_rules(trials: Sequence[SiteTrial], header: str = "") -> str:
    """The learned-rules file for these site trials; sites without relevant pages are noted, not listed."""
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    lines.append(FILE_HELP)
    for trial in trials:
        if not trial.relevant:
            lines.append(f"# {trial.site}: no relevant page in {trial.pages} trial pages; not a topic-relevant site\n")
            continue
        lines.append(f"site {trial.site}")
        lines.append(f"# {trial.pages} trial pages: {len(trial.content)} relevant, {len(trial.directories)} directory")
        width = max((len(p.regex) for p in trial.patterns), default=0)
        for pattern in trial.patterns:
            lines.append(f"{pattern.kind:<10} {pattern.regex:<{width}}  support={pattern.support} precision={pattern.precision:.2f}")
        lines.append("")
    return "\n".join(lines)


_SITE = re.compile(r"^site\s+(\S+)$")
_COMMENT = re.compile(r"(?:^|\s)#")
_FIELDS = {"support": int, "precision": float}


def parse_rules(text: str, source: str = "<rules>") -> LearnedUrlRules:
    """Read a learned-rules file; UrlRulesFileError names the line and what is wrong."""
    patterns, sites = [], []
    site = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _COMMENT.split(raw, 1)[0].strip()
        if not line:
            continue
        site_line = _SITE.match(line)
        if site_line:
            site = site_line.group(1).lower()
            sites.append(site)
            continue
        kind, *rest = line.split()
        if kind == "site":
            raise UrlRulesFileError(source, number, "write 'site HOST[:PORT]', one site a line")
        if kind not in KINDS:
            raise UrlRulesFileError(source, number, f"unknown kind {kind!r}; known: {', '.join(KINDS)}")
        if site is None:
            raise UrlRulesFileError(source, number, "a rule must follow the 'site HOST[:PORT]' line it belongs to")
        if not rest:
            raise UrlRulesFileError(source, number, f"the {kind} rule has no regular expression")
        regex, *options = rest
        values: dict[str, float] = {}
        for option in options:
            name, equals, value = option.partition("=")
            if not equals or name not in _FIELDS:
                hint = " (a regular expression holds no spaces: write \\s or %20)" if not equals else ""
                raise UrlRulesFileError(source, number, f"expected support=N or precision=X, got {option!r}{hint}")
            try:
                values[name] = _FIELDS[name](value)
            except ValueError:
                raise UrlRulesFileError(source, number, f"{name}: not a number: {value!r}") from None
        if values.get("support", 1) < 0 or not 0 <= values.get("precision", 1.0) <= 1:
            raise UrlRulesFileError(source, number, "support is a count >= 0 and precision a number from 0 to 1")
        try:
            patterns.append(UrlPattern(site, kind, regex, int(values.get("support", 1)), values.get("precision", 1.0)))
        except re.error as e:
            raise UrlRulesFileError(source, number, f"bad regular expression {regex!r}: {e}") from e
    return LearnedUrlRules(patterns, sites)


def read_rules(path: Path) -> LearnedUrlRules:
    try:
        text = read_job_file(path)
    except JobFileError as e:
        raise UrlRulesFileError(e.path, e.line, e.message) from e
    if text is None:
        raise UrlRulesFileError(path, None, "missing")
    return parse_rules(text, str(path))
