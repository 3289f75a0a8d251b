"""seeds.txt: each line checked against the job's URL rules and canonicalized; a line they refuse is kept
with its reason (:class:`RefusedSeed`) for the crawl to warn about, and the job loads without it.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from pathlib import Path

from combine_scrapy.access.urls import UrlRules, Verdict, check_url
from combine_scrapy.job.grammar import list_entries
from combine_scrapy.jobfiles import excerpt


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


_SPACE = re.compile(r"\s")


def read_seeds(path: Path, rules: UrlRules) -> tuple[tuple[str, ...], tuple[RefusedSeed, ...]]:
    """The canonical seeds, and the lines the URL rules refuse (a crawl warns about them and goes on)."""
    seeds = []
    refused = []
    for number, url in list_entries(path, "list the start URLs, one per line"):
        if len(url) > MAX_SEED_CHARACTERS:
            refused.append(RefusedSeed(path, number, url, f"too long: {len(url):,} characters"))
            continue
        if _SPACE.search(url):
            refused.append(RefusedSeed(path, number, url, "holds a space: write one URL a line (a space in a URL is %20)"))
            continue
        verdict = check_url(url, rules)
        if not verdict.ok:
            refused.append(RefusedSeed(path, number, url, refusal_reason(url, verdict)))
        elif one_word_host(verdict.url):
            refused.append(RefusedSeed(
                path, number, url,
                f"host {excerpt(canonical_host_name(verdict.url))} is one word: a seed names a full host "
                "(www.example.org), an IP address or localhost",
            ))
        else:
            seeds.append(verdict.url)
    return tuple(dict.fromkeys(seeds)), tuple(refused)


#: Why a seed with a one-word host is refused (the count's name in scrapy seed's answer).
ONE_WORD_HOST = "one_word_host"


def one_word_host(url: str) -> bool:
    """Whether the host of ``url``, a canonical URL (``check_url``'s verdict on an accepted one), is a single word
    that is neither an IP address nor localhost (``http://x/``, a slip for a full name that only a local
    resolver's search domains would make something of)."""
    host = canonical_host_name(url)
    if "." in host or ":" in host or host == "localhost":
        return False
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return True
    return False


def canonical_host_name(url: str) -> str:
    """The host name of a canonical URL, ``scheme://host[:port]/...`` with the host lower-case and no user
    information (what ``urlsplit(url).hostname`` reads), read off its text: seeds.txt may hold a million lines."""
    server = url.partition("://")[2].partition("/")[0]
    if server.startswith("["):
        return server[1:].partition("]")[0]
    return server.partition(":")[0]
