"""robots.txt: what a host allows, how long to trust the answer (RFC 9309).

Parsing and matching are protego's; this module adds what a crawler decides
around it: the status code's meaning (4xx: no rules, 5xx: the site is
closed for now), the product token of the user agent, the normalizations
Google's conformance cases expect (BOMs, ``<br>`` line ends, over-long lines,
percent-encoding of paths), and how long the answer is cached (Combine's 1 or
4 days).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from protego import Protego

#: Seconds a robots.txt answer is trusted: Combine's 86,400, and 345,600
#: after a success or a "not found" (COMBINE_REFERENCE.md, Defaults).
TTL_DEFAULT = 86_400
TTL_SUCCESS = 345_600
#: RFC 9309 2.5: parse at least 500 KiB; Google's parser caps a line at this many bytes.
MAX_BODY_BYTES = 500 * 1024
MAX_LINE_BYTES = 16_664 - 1

# What a site that cannot answer for its robots.txt allows: nothing.
_DISALLOW_ALL = Protego.parse("User-agent: *\nDisallow: /\n")
_BOM = re.compile(r"^(?:\ufeff|\ufffd+|ï»¿)")
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
# A rule path: the value of allow/disallow lines, to percent-encode like URLs.
_RULE = re.compile(r"^(\s*(?:allow|disallow)\s*:?\s*)(\S*)(.*)$", re.IGNORECASE)
# Characters left as they are when percent-encoding a path: RFC 3986 reserved and unreserved, '%', and robots' '*' '$'.
_PATH_SAFE = "/:@!$&'()*+,;=-._~%?[]"


def product_token(user_agent: str) -> str:
    """The name robots.txt groups are matched against: ``Foo-Bot/1.2 (+url)`` gives ``Foo-Bot``."""
    match = re.match(r"[A-Za-z_-]+", user_agent.strip())
    return match.group(0) if match else user_agent.strip()


def _encode_path(path: str) -> str:
    """Percent-encode non-ASCII and unsafe characters, upper-casing existing escapes."""
    path = re.sub(r"%[0-9a-fA-F]{2}", lambda m: m.group(0).upper(), path)
    return quote(path, safe=_PATH_SAFE)


def _normalize(text: str) -> str:
    lines = []
    for line in _BREAK.sub("\n", _BOM.sub("", text)).splitlines():
        if len(line.encode("utf-8")) > MAX_LINE_BYTES:
            line = line.encode("utf-8")[:MAX_LINE_BYTES].decode("utf-8", "ignore")
        rule = _RULE.match(line)
        if rule:
            line = rule.group(1) + _encode_path(rule.group(2)) + rule.group(3)
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
        if self.parser is None:
            return True
        parts = urlsplit(url)
        path = _encode_path(parts.path) or "/"
        target = path + (f"?{parts.query}" if parts.query else "")
        return self.parser.can_fetch(target, self.user_agent)


def parse_robots(body: bytes | str, user_agent: str) -> RobotsPolicy:
    """Rules of a robots.txt body for ``user_agent`` (its product token is what counts)."""
    if isinstance(body, bytes):
        body = body[:MAX_BODY_BYTES].decode("utf-8", errors="replace")
    token = product_token(user_agent)
    parser = Protego.parse(_normalize(body))
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
