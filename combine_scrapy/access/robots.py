"""robots.txt: what a host allows, how long to trust the answer (RFC 9309).

Parsing and matching are protego's; this module adds what a crawler decides
around it: the status code's meaning (4xx: no rules, 5xx: the site is
closed for now), how long the answer is cached (Combine's 1 or 4 days), and
the reading of a robots.txt that Google's conformance cases expect and
protego does not do by itself:

- a ``User-agent`` line names the product token it starts with (``Foo Bar``
  and ``FooBot/1.2`` name ``Foo`` and ``FooBot``), matched whole and
  case-insensitively against ours: protego would also match a prefix
  (``foo`` for ``foobar``); lines of unknown fields are ignored, so they do
  not split a group;
- rule paths and URLs are compared octet by octet, after percent-encoding
  the rule's non-ASCII characters and upper-casing escapes on both sides:
  ``%62`` in a rule does not match ``b`` in a URL, and a URL is matched as it
  is sent (canonical URLs are already percent-encoded);
- byte-order marks, ``<br>`` line ends and over-long lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from protego import Protego

#: Seconds a robots.txt answer is trusted: Combine's 86,400, and 345,600
#: after a success or a "not found" (Combine's defaults).
TTL_DEFAULT = 86_400
TTL_SUCCESS = 345_600
#: RFC 9309 2.5: parse at least 500 KiB; Google's parser caps a line at this many bytes.
MAX_BODY_BYTES = 500 * 1024
MAX_LINE_BYTES = 16_664 - 1

# What a site that cannot answer for its robots.txt allows: nothing.
_DISALLOW_ALL = Protego.parse("User-agent: *\nDisallow: /\n")
_BOM = re.compile(r"^(?:\ufeff|\ufffd+|ï»¿)")
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
# A rule path: the value of allow/disallow lines (and protego's spellings of disallow).
_RULE = re.compile(r"^(\s*(?:allow|dis+al+[ao]w|diasllow)\s*:?\s*)([^\s#]*)(.*)$", re.IGNORECASE)
_USER_AGENT = re.compile(r"^(\s*user[- ]?agent\s*:?\s*)(\S*)(.*)$", re.IGNORECASE)
# "field:" lines protego reads as directives; any other field is ignored, as Google's parser does.
_FIELD = re.compile(r"^\s*([A-Za-z][A-Za-z -]*?)\s*:")
_KNOWN_FIELD = re.compile(
    r"user[- ]?agent|allow|dis+al+[ao]w|diasllow|sitemaps?|site-map|crawl[- ]delay|request[- ]rate|visit[- ]time|host",
    re.IGNORECASE,
)
# RFC 9309 2.2.1: a product token is made of letters, '-' and '_'; a User-agent line names the one it starts with.
_TOKEN = re.compile(r"[A-Za-z_-]+")
# A User-Agent header's first product name, before its "/version" or "(comment)".
_PRODUCT = re.compile(r"\s*([^\s/()]+)\s*(?:/|\(|$)")
_ESCAPE = re.compile(r"%[0-9a-fA-F]{2}")
# Characters a rule path keeps as written: RFC 3986 reserved and unreserved, '%', and robots' '*' and '$'.
_PATH_SAFE = "/:@!$&'()*+,;=-._~%?[]"
# Stands for the user agents of groups that are not ours; '.' is never in a product token.
_OTHER_AGENT = "other.agent"


def product_token(user_agent: str) -> str:
    """The name robots.txt groups are matched against: ``Foo-Bot/1.2 (+url)`` gives ``Foo-Bot``.

    A user agent that is not ``name/version`` or ``name (comment)`` is the
    name as written: ``Foo Bar`` matches no group but ``*``, as in Google's parser.
    """
    match = _PRODUCT.match(user_agent)
    return match.group(1) if match else user_agent.strip()


def _literal_escapes(path: str) -> str:
    """Upper-case escapes and hide them from protego (``%2F`` → ``%252F``) so it compares them as written."""
    if "%" not in path:
        return path
    return _ESCAPE.sub(lambda m: m.group(0).upper(), path).replace("%", "%25")


def _group_agent(value: str, token: str) -> str:
    """A User-agent value as its group's name: ``*``, our token, or a name that matches no one."""
    if value.startswith("*"):
        return "*"
    match = _TOKEN.match(value)
    return token if match and match.group(0).lower() == token.lower() else _OTHER_AGENT


def _normalize(text: str, token: str) -> str:
    lines = []
    for line in _BREAK.sub("\n", _BOM.sub("", text)).splitlines():
        if len(line.encode("utf-8")) > MAX_LINE_BYTES:
            line = line.encode("utf-8")[:MAX_LINE_BYTES].decode("utf-8", "ignore")
        field = _FIELD.match(line)
        if field and not _KNOWN_FIELD.fullmatch(field.group(1)):
            continue
        agent = _USER_AGENT.match(line)
        if agent:
            line = agent.group(1) + _group_agent(agent.group(2), token)
        elif rule := _RULE.match(line):
            line = rule.group(1) + _literal_escapes(quote(rule.group(2), safe=_PATH_SAFE)) + rule.group(3)
        lines.append(line)
    return "\n".join(lines)


@dataclass(frozen=True)
class RobotsPolicy:
    """A host's answer: which URLs its robots.txt allows to ``user_agent``."""

    parser: Protego | None        # None: everything allowed
    user_agent: str
    crawl_delay: float | None = None
    ttl: float = TTL_DEFAULT

    def allowed(self, url: str) -> bool:
        """Whether ``url``, percent-encoded as it is sent, may be fetched."""
        if self.parser is None:
            return True
        parts = urlsplit(url)
        target = _literal_escapes(parts.path or "/") + (f"?{_literal_escapes(parts.query)}" if parts.query else "")
        return self.parser.can_fetch(f"http://robots.invalid{target}", self.user_agent)


def parse_robots(body: bytes | str, user_agent: str) -> RobotsPolicy:
    """Rules of a robots.txt body for ``user_agent`` (its product token is what counts)."""
    if isinstance(body, bytes):
        body = body[:MAX_BODY_BYTES].decode("utf-8", errors="replace")
    token = product_token(user_agent)
    parser = Protego.parse(_normalize(body, token))
    delay = parser.crawl_delay(token)
    return RobotsPolicy(parser, token, float(delay) if delay is not None else None, TTL_SUCCESS)


def policy_from_response(status: int | None, body: bytes | None, user_agent: str) -> RobotsPolicy:
    """What a robots.txt fetch means (RFC 9309 2.3.1).

    2xx: its rules. 4xx: no rules, everything allowed. 5xx, 429 or no
    answer: nothing allowed, retried after a day.
    """
    if status is not None and 200 <= status < 300:
        return parse_robots(body or b"", user_agent)
    if status is not None and 400 <= status < 500 and status != 429:
        return RobotsPolicy(None, product_token(user_agent), ttl=TTL_SUCCESS)
    return RobotsPolicy(_DISALLOW_ALL, product_token(user_agent), ttl=TTL_DEFAULT)
