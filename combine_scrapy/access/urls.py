"""What happens to a URL before it may be scheduled (Combine's "URL filtering").

Normalization (RFC 3986 section 6): scheme and host lower-cased, percent-encoded
and international host names decoded and written in IDNA, user information
and the default port dropped, fragment removed, percent-encoding normalized
(unreserved characters decoded, other escapes upper-cased, a bare ``%``
escaped), dot segments and repeated slashes collapsed, query parameters
sorted and each kept once (a parameter without a value stays without ``=``),
session ids removed (query and ``;path`` parameters, ASP.NET cookieless ids),
server aliases resolved. Validation: scheme, length, spider traps (path
depth, repeated segments), allow (one must match), exclude (none may match).
Pure code, no Scrapy: :func:`check_url` never raises, it returns a verdict
with a reason that the crawl counts in its stats, and a detail naming the
rule that refused the URL.

Allow and exclude rules are the operator's regular expressions, matched
against every link. One that can backtrack (:func:`backtracking`: nested
quantifiers, quantified alternatives, backreferences, several unbounded
quantifiers) runs under the ``regex`` module with a time limit
(:data:`RULE_TIMEOUT`): a link it cannot decide in time is refused
(``rule_timeout``), the rule named once in the log. Other rules run under
``re`` without one, which costs a tenth as much per link.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from types import MappingProxyType
from urllib.parse import unquote_to_bytes, urljoin, urlsplit

import regex

logger = logging.getLogger(__name__)

#: Schemes of the URLs a job marks (its seeds and links, whatever way they come): ftp only there.
SCHEMES = ("http", "https", "ftp")
#: Schemes of every other request the crawler makes: a followed redirect, robots.txt and its redirects, a sitemap.
WEB_SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443, "ftp": 21}

# Reasons a URL is refused; the stats count them as urls/rejected/<reason>.
MALFORMED = "malformed"
SCHEME = "scheme"
TOO_LONG = "too_long"
NOT_ALLOWED = "not_allowed"
EXCLUDED = "excluded"
TOO_DEEP = "too_deep"
REPEATED_SEGMENTS = "repeated_segments"
RULE_TIMEOUT_REASON = "rule_timeout"

#: Seconds a rule that can backtrack may spend on one URL (a URL is at most maxUrlLength characters:
#: a sound rule takes microseconds).
RULE_TIMEOUT = 0.05

#: Session-id parameter names (regular expressions, matched whole and case-insensitively,
#: after any leading '_'): Combine's list plus the common server frameworks'.
DEFAULT_SESSIONIDS = (
    "(?:l|j|bv_)?(?:sid|phpsessid|sessionid)", "ASPSESSIONID[A-Z]*", "ASP.NET_SessionId", "CFID", "CFTOKEN", "sess_id", "s_id",
    "zenid", "osCsid", "wicket:jsessionid",
)
# ASP.NET cookieless sessions put the id in a path segment: /(S(abc123))/page.aspx
_ASPNET_SEGMENT = re.compile(r"/\((?:[A-Z]\([^)/]*\))+\)(?=/)")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# A host name after IDNA encoding: labels of RFC 3986 unreserved characters, none empty.
_HOST = re.compile(r"[a-z0-9\-_~]+(?:\.[a-z0-9\-_~]+)*")
_ORIGIN = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/?#\\]*")
_ABSOLUTE = re.compile(r"\s*[A-Za-z][A-Za-z0-9+.\-]*://")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
# "example.com:8080/x" is a host and port without a scheme; "tel:12345" has a scheme.
_HOST_AND_PORT = re.compile(r"(?:localhost|[^:/?#]*\.[^:/?#]*):\d+(?:[/?#]|$)", re.IGNORECASE)
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# What a path or query may hold as it is (RFC 3986 pchar, and '/' and '?'), escapes aside.
_CLEAN = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*")
# An escape, a '%' that starts none, or a character that may not appear unescaped.
_NEEDS_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}|%|[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%]")
# Browsers drop tabs and line breaks inside URLs (WHATWG URL standard); so do we.
_TAB_OR_NEWLINE = re.compile(r"[\t\r\n]")


# A quantifier: *, +, ?, {m}, {m,}, {m,n}, and its lazy or possessive mark.
_QUANTIFIER = re.compile(r"(?:[*+?]|\{(\d*)(,?)(\d*)\})[?+]?")
_GROUP_OPENING = re.compile(r"\(\?(?:P<\w+>|P=\w+\)|<[=!]|[=!:>]|[a-zA-Z-]+[:)])?")


def backtracking(expression: str) -> tuple[str, int]:
    """Why a regular expression may backtrack exponentially ('' if nothing shows it), and how many unbounded
    quantifiers it has (each one more raises the worst case by a power of the subject's length).

    A cheap reading of the text, not a proof: a repeated group that holds a
    quantifier or an alternative (``(a+)+``, ``(a|aa)*``), or a backreference.
    """
    reason, unbounded = "", 0
    groups: list[list[bool]] = [[False]]   # per open group: whether it holds a quantifier or '|'
    closed: list[bool] | None = None       # the group that just closed, when a quantifier may follow it
    i = 0
    while i < len(expression):
        char, just_closed, closed = expression[i], closed, None
        if char == "\\":
            if expression[i + 1:i + 2].isdigit() and expression[i + 1] != "0":
                reason = reason or "a backreference"
            i += 2
        elif char == "[":
            i += 2 if expression.startswith("[^", i) else 1
            i += 1 if expression[i:i + 1] == "]" else 0
            while i < len(expression) and expression[i] != "]":
                i += 2 if expression[i] == "\\" else 1
            i += 1
        elif char == "(":
            opening = _GROUP_OPENING.match(expression, i)
            text = opening.group(0) if opening else "("
            if text.startswith("(?P="):
                reason = reason or "a backreference"
            elif not text.endswith(")"):
                groups.append([False])
            i += len(text)
        elif char == ")":
            if len(groups) > 1:
                closed = groups.pop()
                groups[-1][0] = groups[-1][0] or closed[0]
            i += 1
        elif char == "|":
            groups[-1][0] = True
            i += 1
        elif quantifier := _QUANTIFIER.match(expression, i):
            low, comma, high = quantifier.groups()
            token = quantifier.group(0)[0]
            repeats = token in "*+" or bool(comma and high != "1" and high != "0") or (not comma and low not in ("", "0", "1"))
            if token == "{" and not (low or comma):  # '{' that is not a quantifier
                i += 1
                continue
            if repeats and just_closed is not None and just_closed[0]:
                reason = reason or "a repeated group that holds a quantifier or an alternative"
            if repeats:
                groups[-1][0] = True
            if token in "*+" or (comma and not high):
                unbounded += 1
            i = quantifier.end()
        else:
            i += 1
    return reason, unbounded


@dataclass(frozen=True)
class UrlRule:
    """An allow or exclude rule: ``HOST: regex`` (the host name) or ``URL regex`` (the whole canonical URL).

    A HOST rule sees the host name alone, lower-case and in IDNA, without
    scheme, port or user (``docs.example.test`` for
    ``http://docs.example.test:8080/``); a URL rule sees the canonical URL.
    """

    kind: str
    pattern: re.Pattern[str] | regex.Pattern[str]
    text: str
    #: Where the rule was written (``combine.cfg line 40``), for messages.
    source: str = field(default="", compare=False)
    #: Why the rule may backtrack exponentially ('' when nothing shows it); the job loader warns.
    backtracks: str = field(default="", compare=False)

    HOST = "HOST"
    URL = "URL"

    @classmethod
    def parse(cls, text: str, source: str = "") -> UrlRule:
        """Read a rule as written in combine.cfg; ValueError names what is wrong."""
        match = re.match(r"^\s*(HOST:|URL)\s*(.*?)\s*$", text)
        if not match:
            raise ValueError("a rule starts with 'HOST:' (matched against the host) or 'URL' (the whole URL)")
        kind, expression = match.groups()
        if not expression:
            raise ValueError("the rule has no regular expression")
        try:
            re.compile(expression)  # the syntax is re's, whichever module runs the rule
        except re.error as e:
            raise ValueError(f"bad regular expression: {e}") from e
        backtracks, unbounded = backtracking(expression)
        pattern: re.Pattern[str] | regex.Pattern[str]
        pattern = regex.compile(expression) if backtracks or unbounded > 1 else re.compile(expression)
        if kind == "HOST:" and (_NOT_IN_A_HOST.search(expression) or ("[" not in expression and _PORT.search(expression))):
            raise ValueError(
                "a HOST: rule sees the host name alone (www.example.com), never a scheme, user or port:"
                " write a URL rule to match those"
            )
        return cls(cls.HOST if kind == "HOST:" else cls.URL, pattern, text.strip(), source, backtracks)

    @property
    def timed(self) -> bool:
        """Whether the rule runs with a time limit (it may backtrack)."""
        return isinstance(self.pattern, regex.Pattern)

    def searcher(self) -> Callable[[str], object]:
        """The rule's search, with :data:`RULE_TIMEOUT` when it may backtrack (raising TimeoutError past it)."""
        if isinstance(self.pattern, regex.Pattern):
            return partial(self.pattern.search, timeout=RULE_TIMEOUT)
        return self.pattern.search

    def matches(self, url: str, host: str) -> bool:
        """Whether the rule matches; TimeoutError when a rule that may backtrack takes too long."""
        return self.searcher()(self.subject(url, host)) is not None

    def subject(self, url: str, host: str) -> str:
        """The string this rule is matched against: the host name or the URL."""
        return host if self.kind == self.HOST else url

    def __str__(self) -> str:
        return f"'{self.text}' ({self.source})" if self.source else f"'{self.text}'"


# What only a Combine server string (http://user@host:port) held: a HOST: rule with these never matches a host.
_NOT_IN_A_HOST = re.compile(r"@|https?\\?:|:\\?/")
_PORT = re.compile(r"(?<!\?):(?:\\d|[0-9])")  # outside an IPv6 literal, ':' and digits are a port, '(?:' a group


def _rules(*lines: str) -> tuple[UrlRule, ...]:
    return tuple(UrlRule.parse(line) for line in lines)


_BINARY_EXTENSIONS = (
    r"gz|tgz|tar|zip|z|rar|hqx|sit|shar|arj|lzh|7z",
    r"exe|msi|class|jar|dll|bin|iso|dmg",
    r"gif|jpe?g|png|bmp|tiff?|pcx|psd|tga|xbm|xpm|ico|svg",
    r"mp3|wav|au|ram|rm|wma|ogg|flac|mid",
    r"mpe?g|avi|mov|wmv|wmz|rmx|rmd|vo|flv|mp4",
    r"arff|fig|mat|mdb|pdb|sav|sdd|raw|ica",
)
#: Combine's default exclude list (conf/job_default.cfg): CGI pages and binary
#: formats, each extension list also in upper case. Its two HOST rules for
#: malformed servers (``http://.`` and ``@``) are canonicalization's work now:
#: an empty host label is malformed, user information is dropped.
DEFAULT_EXCLUDE = _rules(
    r"URL cgi-bin|htbin|cgi|\?|\.map$|_vti_",
    *(rf"URL \.({group})$" for group in _BINARY_EXTENSIONS),
    *(rf"URL \.({group.upper()})$" for group in _BINARY_EXTENSIONS),
)
DEFAULT_ALLOW = _rules(r"HOST: .*$")


#: A rule's search and whether it sees the host.
_RuleSearch = tuple[Callable[[str], object], bool]


@dataclass(frozen=True)
class UrlRules:
    """A job's URL rules; the defaults are Combine's."""

    max_url_length: int = 250
    #: Spider traps: more path segments than this, or one segment more often than this, is refused.
    max_path_depth: int = 20
    max_repeated_segments: int = 3
    allow: tuple[UrlRule, ...] = DEFAULT_ALLOW
    exclude: tuple[UrlRule, ...] = DEFAULT_EXCLUDE
    sessionids: tuple[str, ...] = DEFAULT_SESSIONIDS
    serveralias: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    _sessionid: re.Pattern[str] = field(init=False, repr=False, compare=False)
    # (pattern.search, whether it sees the host) of each allow and exclude rule, for check_url's loop.
    _allow_searches: tuple[_RuleSearch, ...] = field(init=False, repr=False, compare=False)
    _exclude_searches: tuple[_RuleSearch, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name, rules in (("_allow_searches", self.allow), ("_exclude_searches", self.exclude)):
            object.__setattr__(self, name, tuple((rule.searcher(), rule.kind == UrlRule.HOST) for rule in rules))
        names = "|".join(f"(?:{name})" for name in self.sessionids) or r"(?!)"
        object.__setattr__(self, "_sessionid", re.compile(rf"_*(?:{names})", re.IGNORECASE))
        object.__setattr__(self, "serveralias", MappingProxyType(dict(self.serveralias)))

    def is_sessionid(self, name: str) -> bool:
        return self._sessionid.fullmatch(name) is not None


DEFAULT_RULES = UrlRules()


class InvalidUrl(ValueError):
    """A URL that cannot be canonicalized; ``reason`` is one of the module's reason names."""

    def __init__(self, reason: str, detail: str):
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}")


@dataclass(frozen=True)
class Verdict:
    url: str           # the canonical URL (the input when it could not be canonicalized)
    reason: str = ""   # empty when accepted
    detail: str = ""   # why, for a person: the rule that refused the URL and the string it saw

    @property
    def ok(self) -> bool:
        return not self.reason


def parse_serveralias(line: str) -> dict[str, str]:
    """Read a serveralias group: ``canonical-host alias-host...`` (the first server is kept).

    This is the group combineUtil serverAlias writes: records of the other
    servers are the first one's, so their URLs are rewritten to it.
    """
    hosts = [host.lower().rstrip(".") for host in line.split()]
    if len(hosts) < 2:
        raise ValueError("write the canonical host and then at least one alias, separated by spaces")
    for host in hosts:
        if not re.fullmatch(r"[a-z0-9.\-\[\]:]+", host):
            raise ValueError(f"{host!r} is not a host name (host or host:port)")
    canonical, *aliases = hosts
    return {alias: canonical for alias in aliases}


def _escape(match: re.Match[str]) -> str:
    """One percent-encoding repair: decode an unreserved escape, upper-case any other, escape the rest."""
    text = match.group(0)
    if text[0] == "%":
        if len(text) == 1:
            return "%25"                       # a '%' that starts no valid escape
        char = chr(int(text[1:], 16))
        return char if char in _UNRESERVED else text.upper()
    return "".join(f"%{byte:02X}" for byte in text.encode("utf-8"))


def _normalize_escapes(text: str) -> str:
    """RFC 3986 6.2.2: escapes upper-cased, unreserved characters decoded, what may not appear escaped."""
    if _CLEAN.fullmatch(text):
        return text
    try:
        return _NEEDS_ESCAPE.sub(_escape, text)
    except UnicodeEncodeError as e:
        raise InvalidUrl(MALFORMED, "not Unicode text (lone surrogate)") from e


def _path(path: str, rules: UrlRules) -> str:
    """Session ids removed, then dot segments and repeated slashes (RFC 3986 5.2.4)."""
    if "(" in path:
        path = _ASPNET_SEGMENT.sub("", path)
    segments: list[str] = []
    parts = path.split("/")
    for segment in parts:
        if ";" in segment:
            name, *parameters = segment.split(";")
            segment = ";".join([name, *(p for p in parameters if not rules.is_sessionid(p.split("=", 1)[0]))])
        if segment == "..":
            if segments:
                segments.pop()
        elif segment and segment != ".":
            segments.append(segment)
    trailing = parts[-1] in ("", ".", "..") and segments
    return "/" + "/".join(segments) + ("/" if trailing else "")


def _query(query: str, rules: UrlRules) -> str:
    """Parameters sorted, each once; empty ones, nameless ones and session ids dropped.

    A parameter without a value stays without '=' (``?a&b`` is not ``?a=&b=``), and
    ``name=`` becomes ``name``. ``;name=value`` inside a value is a session id
    when ``name`` is one (``?a=1;jsessionid=x``); other ``;`` are data (``?q=tl;dr``).
    """
    kept: dict[tuple[str, str], None] = {}
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        if not name or rules.is_sessionid(name):
            continue
        if ";" in value:
            value, *parameters = value.split(";")
            value = ";".join([value, *(p for p in parameters if not ("=" in p and rules.is_sessionid(p.split("=", 1)[0])))])
        kept.setdefault((name, value))
    return "&".join(f"{name}={value}" if value else name for name, value in sorted(kept))


def _host(host: str) -> str:
    """Lower-case ASCII host: percent-escapes decoded (UTF-8), IDNA applied, the final dot removed."""
    if host.startswith("["):
        try:
            if "%" in host or not host.endswith("]"):  # no zone ids, no escapes in an IP literal
                raise ValueError(host)
            ipaddress.IPv6Address(host[1:-1])
        except ValueError as e:
            raise InvalidUrl(MALFORMED, f"bad IPv6 address {host!r}") from e
        return host.lower()
    if "%" in host:
        try:
            host = unquote_to_bytes(host).decode("utf-8")
        except UnicodeDecodeError as e:
            raise InvalidUrl(MALFORMED, f"host {host!r} is not UTF-8 once decoded") from e
        if "%" in host:
            raise InvalidUrl(MALFORMED, f"bad percent-escape in host {host!r}")
    host = host.rstrip(".")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as e:
            raise InvalidUrl(MALFORMED, f"host {host!r} is not a valid international name: {e}") from e
    host = host.lower()
    if not _HOST.fullmatch(host):
        raise InvalidUrl(MALFORMED, f"bad host {host!r}")
    return host


def _server(scheme: str, authority: str, rules: UrlRules) -> str:
    """``host[:port]``: user information dropped (a credential, not part of a page's identity),
    the default port removed and aliases resolved."""
    hostport = authority.rpartition("@")[2]
    host, port = hostport, ""
    if hostport.startswith("["):
        end = hostport.find("]") + 1
        host, rest = hostport[:end], hostport[end:]
        if rest and not rest.startswith(":"):
            raise InvalidUrl(MALFORMED, f"bad host {hostport!r}")
        port = rest[1:]
    elif ":" in hostport:
        host, _, port = hostport.rpartition(":")
    if not host or not host.strip("."):
        raise InvalidUrl(MALFORMED, "no host")
    host = _host(host)
    if port:
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise InvalidUrl(MALFORMED, f"bad port in {hostport!r}")
        if int(port) != DEFAULT_PORTS[scheme]:
            host = f"{host}:{int(port)}"
    return rules.serveralias.get(host, host)


def canonicalize(url: str, rules: UrlRules | None = None) -> str:
    """The canonical form of ``url`` (RFC 3986 section 6); raises InvalidUrl (with a reason) when it has none.

    Without a scheme, ``http://`` is assumed (``example.com/a`` is ``http://example.com/a``).
    """
    return _join(*_canonical_parts(url, rules or DEFAULT_RULES))


def _join(scheme: str, server: str, path: str, query: str) -> str:
    return f"{scheme}://{server}{path}?{query}" if query else f"{scheme}://{server}{path}"


def _canonical_parts(url: str, rules: UrlRules) -> tuple[str, str, str, str]:
    """Scheme, ``host[:port]``, path and query of the canonical form."""
    text = _TAB_OR_NEWLINE.sub("", url.strip()) if ("\t" in url or "\n" in url or "\r" in url) else url.strip()
    if not text or _CONTROL.search(text):
        raise InvalidUrl(MALFORMED, "empty or holds control characters")
    text = text.partition("#")[0]
    scheme = _SCHEME.match(text)
    if scheme is None or _HOST_AND_PORT.match(text):
        text = "http:" + text if text.startswith("//") else "http://" + text
        scheme_name, rest = "http", text[5:]
    else:
        scheme_name, rest = scheme.group(1).lower(), text[scheme.end():]
    if scheme_name not in SCHEMES:
        raise InvalidUrl(SCHEME, f"scheme {scheme_name!r} is not one of {', '.join(SCHEMES)}")
    if "\\" in rest:  # browsers read a backslash before the query as a slash (WHATWG URL standard)
        before, mark, after = rest.partition("?")
        rest = before.replace("\\", "/") + mark + after
    if not rest.startswith("//"):
        raise InvalidUrl(MALFORMED, "no host")
    rest = rest[2:]
    end = len(rest)
    for delimiter in "/?":
        found = rest.find(delimiter)
        if found != -1 and found < end:
            end = found
    server = _server(scheme_name, rest[:end], rules)
    path, _, query = rest[end:].partition("?")
    path = _path(_normalize_escapes(path), rules)
    query = _query(_normalize_escapes(query), rules) if query else ""
    return scheme_name, server, path, query


def _resolve(base: str, href: str) -> str:
    """``href`` resolved against ``base``; a path from the root is joined to the base's origin at once."""
    if href.startswith("/") and not href.startswith("//"):
        origin = _ORIGIN.match(base)
        if origin:
            return origin.group(0) + href
    return urljoin(base, href)


def check_url(url: str, rules: UrlRules | None = None, base: str | None = None) -> Verdict:
    """Canonicalize and validate ``url`` (resolved against ``base``); never raises."""
    rules = rules or DEFAULT_RULES
    try:
        if base is not None and not _ABSOLUTE.match(url):
            url = _resolve(base, url.strip())
        scheme, server, path, query = _canonical_parts(url, rules)
    except InvalidUrl as e:
        return Verdict(url, e.reason, e.detail)
    except ValueError as e:
        return Verdict(url, MALFORMED, str(e))
    canonical = _join(scheme, server, path, query)
    if len(canonical) >= rules.max_url_length:
        return Verdict(canonical, TOO_LONG, f"{len(canonical):,} characters, maxUrlLength is {rules.max_url_length} (a URL must be shorter)")
    trap = _spider_trap(path, rules)
    if trap == TOO_DEEP:
        return Verdict(canonical, trap, f"path {path!r} deeper than maxPathDepth = {rules.max_path_depth} segments")
    if trap:
        return Verdict(canonical, trap, f"path {path!r} repeats a segment more than maxRepeatedSegments = "
                                        f"{rules.max_repeated_segments} times")
    host = server[: server.index("]") + 1] if server.startswith("[") else server.partition(":")[0]
    for rule, (search, on_host) in zip(rules.allow, rules._allow_searches):
        try:
            if search(host if on_host else canonical):
                break
        except TimeoutError:
            return _timed_out(rule, canonical, host)
    else:
        tried = ", ".join(str(rule) for rule in rules.allow)
        return Verdict(canonical, NOT_ALLOWED, f"no allow rule matches host {host!r} or URL {canonical!r}; allow rules: {tried}")
    for rule, (search, on_host) in zip(rules.exclude, rules._exclude_searches):
        try:
            found = search(host if on_host else canonical)
        except TimeoutError:
            return _timed_out(rule, canonical, host)
        if found:
            subject = "host" if rule.kind == UrlRule.HOST else "URL"
            return Verdict(canonical, EXCLUDED, f"exclude rule {rule} matches {subject} {rule.subject(canonical, host)!r}")
    return Verdict(canonical)


# Rules whose first time-out was logged: each is named once a process, however many URLs it then refuses.
_TIMED_OUT_RULES: set[tuple[str, str]] = set()


def _timed_out(rule: UrlRule, url: str, host: str) -> Verdict:
    """The verdict on a URL a rule could not decide within RULE_TIMEOUT: refused (an allow rule that cannot
    say yes has not matched; an exclude rule that cannot say no is taken to have matched)."""
    detail = (f"rule {rule} ran past {RULE_TIMEOUT:g} s on {rule.subject(url, host)[:200]!r}"
              f" (it backtracks: {rule.backtracks or 'several unbounded quantifiers'})")
    if (rule.text, rule.source) not in _TIMED_OUT_RULES:
        _TIMED_OUT_RULES.add((rule.text, rule.source))
        logger.warning("%s; URLs it cannot decide are refused (urls/rejected/%s): rewrite the rule",
                       detail, RULE_TIMEOUT_REASON)
    return Verdict(url, RULE_TIMEOUT_REASON, detail)


class UrlChecker:
    """:func:`check_url` with one set of rules, the verdicts of the last ``size`` URLs remembered.

    A site's menus repeat its links on every page, and in a crawl the link
    scorer and the marking of links ask about the same URLs: each is
    canonicalized once while it is remembered.
    """

    def __init__(self, rules: UrlRules | None = None, size: int = 100_000):
        self.rules = rules
        self.size = size
        self._verdicts: dict[str, Verdict] = {}

    def __call__(self, url: str) -> Verdict:
        verdict = self._verdicts.get(url)
        if verdict is None:
            if len(self._verdicts) >= self.size:
                self._verdicts.clear()
            verdict = self._verdicts[url] = check_url(url, self.rules)
        return verdict


def _spider_trap(path: str, rules: UrlRules) -> str:
    """A path that only a trap makes: too deep, or going round in circles (/a/b/a/b/a/b/...)."""
    segments = [segment for segment in path.split("/") if segment]
    if len(segments) > rules.max_path_depth:
        return TOO_DEEP
    if len(segments) > rules.max_repeated_segments and max(Counter(segments).values()) > rules.max_repeated_segments:
        return REPEATED_SEGMENTS
    return ""


def host_of(url: str) -> str:
    """The host a URL's requests go to, ``host[:port]``: the unit of politeness."""
    parts = urlsplit(url)
    hostport = parts.netloc.rpartition("@")[2].lower()
    scheme = parts.scheme.lower()
    if scheme in DEFAULT_PORTS and hostport.endswith(f":{DEFAULT_PORTS[scheme]}"):
        hostport = hostport.rsplit(":", 1)[0]
    return hostport
