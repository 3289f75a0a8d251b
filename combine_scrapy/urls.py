"""What happens to a URL before it may be scheduled (Combine's "URL filtering").

Normalization: host lower-cased, default port dropped, w3lib's canonical form
(query sorted, percent-encoding normalized, fragment removed, ``./`` and
``../`` collapsed), repeated CGI parameters removed, session ids removed
(query and ``;path`` parameters, ASP.NET cookieless ids), server aliases
resolved. Validation: scheme, length, spider traps (path depth, repeated
segments), allow (one must match), exclude (none may match). Pure code, no Scrapy: :func:`check_url` never raises, it returns a
verdict with a reason that the crawl counts in its stats.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from urllib.parse import urljoin, urlsplit, urlunsplit

from w3lib.url import canonicalize_url, safe_url_string

SCHEMES = ("http", "https", "ftp")
DEFAULT_PORTS = {"http": 80, "https": 443, "ftp": 21}

# Reasons a URL is refused; the stats count them as urls/rejected/<reason>.
MALFORMED = "malformed"
SCHEME = "scheme"
TOO_LONG = "too_long"
NOT_ALLOWED = "not_allowed"
EXCLUDED = "excluded"
TOO_DEEP = "too_deep"
REPEATED_SEGMENTS = "repeated_segments"

#: Session-id parameter names: Combine's list plus the common server frameworks'.
DEFAULT_SESSIONIDS = (
    "sessionid", "lsessionid", "jsessionid", "SID", "PHPSESSID", "SessionID", "BV_SessionID",
    "ASPSESSIONID[A-Z]*", "ASP.NET_SessionId", "CFID", "CFTOKEN", "sess_id", "s_id",
    "zenid", "osCsid", "wicket:jsessionid",
)
# ASP.NET cookieless sessions put the id in a path segment: /(S(abc123))/page.aspx
_ASPNET_SEGMENT = re.compile(r"/\((?:[A-Z]\([^)/]*\))+\)(?=/)")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# A host name after IDNA encoding (RFC 3986 reg-name without sub-delims), or an IPv6 literal.
_HOST = re.compile(r"[a-z0-9\-._~%]+|\[[0-9a-f:.]+\]")
# Browsers drop tabs and line breaks inside URLs (WHATWG URL standard); so do we.
_TAB_OR_NEWLINE = re.compile(r"[\t\r\n]")


@dataclass(frozen=True)
class UrlRule:
    """An allow or exclude rule: ``HOST: regex`` (host part only) or ``URL regex`` (whole URL)."""

    kind: str
    pattern: re.Pattern
    text: str

    HOST = "HOST"
    URL = "URL"

    @classmethod
    def parse(cls, text: str) -> UrlRule:
        """Read a rule as written in combine.cfg; ValueError names what is wrong."""
        match = re.match(r"^\s*(HOST:|URL)\s*(.*?)\s*$", text)
        if not match:
            raise ValueError("a rule starts with 'HOST:' (matched against the host) or 'URL' (the whole URL)")
        kind, expression = match.groups()
        if not expression:
            raise ValueError("the rule has no regular expression")
        try:
            pattern = re.compile(expression)
        except re.error as e:
            raise ValueError(f"bad regular expression: {e}") from e
        return cls(cls.HOST if kind == "HOST:" else cls.URL, pattern, text.strip())

    def matches(self, url: str, server: str) -> bool:
        """``server`` is the Web-server part, ``scheme://[user@]host[:port]``, as Combine matched it."""
        return self.pattern.search(server if self.kind == self.HOST else url) is not None


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
#: Combine's default exclude list (conf/job_default.cfg): malformed hosts,
#: CGI pages and binary formats, each extension list also in upper case.
DEFAULT_EXCLUDE = _rules(
    r"HOST: http:\/\/\.",
    r"HOST: \@",
    r"URL cgi-bin|htbin|cgi|\?|\.map$|_vti_",
    *(rf"URL \.({group})$" for group in _BINARY_EXTENSIONS),
    *(rf"URL \.({group.upper()})$" for group in _BINARY_EXTENSIONS),
)
DEFAULT_ALLOW = _rules(r"HOST: .*$")


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
    _sessionid: re.Pattern = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        names = "|".join(f"(?:{name})" for name in self.sessionids) or r"(?!)"
        object.__setattr__(self, "_sessionid", re.compile(rf"^(?:{names})$", re.IGNORECASE))
        object.__setattr__(self, "serveralias", MappingProxyType(dict(self.serveralias)))

    def is_sessionid(self, name: str) -> bool:
        return self._sessionid.match(name) is not None


DEFAULT_RULES = UrlRules()


class InvalidUrl(ValueError):
    """A URL that cannot be canonicalized; ``reason`` is one of the module's reason names."""

    def __init__(self, reason: str, detail: str):
        self.reason = reason
        super().__init__(f"{reason}: {detail}")


@dataclass(frozen=True)
class Verdict:
    url: str           # the canonical URL (the input when it could not be canonicalized)
    reason: str = ""   # empty when accepted

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


def _strip_path_sessionids(path: str, rules: UrlRules) -> str:
    path = _ASPNET_SEGMENT.sub("", path)
    segments = []
    for segment in path.split("/"):
        name, *parameters = segment.split(";")
        kept = [p for p in parameters if not rules.is_sessionid(p.split("=", 1)[0])]
        segments.append(";".join([name, *kept]))
    return "/".join(segments)


def _clean_query(query: str, rules: UrlRules) -> str:
    """Drop session-id parameters and repeated name=value pairs, keeping the first."""
    kept: dict[str, None] = {}
    for pair in query.split("&"):
        if not pair or rules.is_sessionid(pair.split("=", 1)[0]):
            continue
        kept.setdefault(pair)
    return "&".join(kept)


def _server(scheme: str, netloc: str, rules: UrlRules) -> str:
    """Lower-cased ``[user@]host[:port]`` with the default port removed and aliases resolved."""
    userinfo, _, hostport = netloc.rpartition("@")
    parts = urlsplit(f"//{hostport}")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise InvalidUrl(MALFORMED, "no host")
    try:
        port = parts.port
    except ValueError as e:
        raise InvalidUrl(MALFORMED, f"bad port in {hostport!r}") from e
    if ":" in host:
        host = f"[{host}]"
    if not _HOST.fullmatch(host):
        raise InvalidUrl(MALFORMED, f"bad host {host!r}")
    hostport = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    hostport = rules.serveralias.get(hostport, hostport)
    return f"{userinfo}@{hostport}" if userinfo else hostport


def canonicalize(url: str, rules: UrlRules | None = None) -> str:
    """The canonical form of ``url``; raises InvalidUrl (with a reason) when it has none."""
    rules = rules or DEFAULT_RULES
    text = _TAB_OR_NEWLINE.sub("", url.strip())
    if not text or _CONTROL.search(text):
        raise InvalidUrl(MALFORMED, "empty or holds control characters")
    try:
        text = canonicalize_url(safe_url_string(text), keep_fragments=False)
        parts = urlsplit(text)
    except (ValueError, UnicodeError) as e:
        raise InvalidUrl(MALFORMED, str(e)) from e
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise InvalidUrl(SCHEME, f"scheme {parts.scheme!r} is not one of {', '.join(SCHEMES)}")
    netloc = _server(scheme, parts.netloc, rules)
    path = _strip_path_sessionids(parts.path, rules) or "/"
    query = _clean_query(parts.query, rules)
    return urlunsplit((scheme, netloc, path, query, ""))


def check_url(url: str, rules: UrlRules | None = None, base: str | None = None) -> Verdict:
    """Canonicalize and validate ``url`` (resolved against ``base``); never raises."""
    rules = rules or DEFAULT_RULES
    try:
        if base is not None:
            url = urljoin(base, url.strip())
        canonical = canonicalize(url, rules)
    except InvalidUrl as e:
        return Verdict(url, e.reason)
    except ValueError:
        return Verdict(url, MALFORMED)
    if len(canonical) >= rules.max_url_length:
        return Verdict(canonical, TOO_LONG)
    parts = urlsplit(canonical)
    trap = _spider_trap(parts.path, rules)
    if trap:
        return Verdict(canonical, trap)
    server = f"{parts.scheme}://{parts.netloc}"
    if not any(rule.matches(canonical, server) for rule in rules.allow):
        return Verdict(canonical, NOT_ALLOWED)
    if any(rule.matches(canonical, server) for rule in rules.exclude):
        return Verdict(canonical, EXCLUDED)
    return Verdict(canonical)


def _spider_trap(path: str, rules: UrlRules) -> str:
    """A path that only a trap makes: too deep, or going round in circles (/a/b/a/b/a/b/...)."""
    segments = [segment for segment in path.split("/") if segment]
    if len(segments) > rules.max_path_depth:
        return TOO_DEEP
    if segments and max(Counter(segments).values()) > rules.max_repeated_segments:
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
