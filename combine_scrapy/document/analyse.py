"""Combine's extra analysis (doAnalyse): the language of a document and the country of its web server.

Both work offline. langdetect carries its language profiles, and is made
deterministic (``DetectorFactory.seed``) so a page gets the same answer on
every run. The country comes from the host's country-code top-level domain,
found with tldextract's bundled public-suffix snapshot (``suffix_list_urls=()``,
no cache directory), so a crawl never waits on a download.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

import tldextract
from langdetect import DetectorFactory, LangDetectException, detect_langs

DetectorFactory.seed = 0

# Below this many letters langdetect guesses (at 10-30 letters it took Portuguese
# for Spanish and English for Croatian); from 40 on it was right in 14 languages.
MIN_LETTERS = 50
# langdetect runs 7 trials; below this share of agreement it is not sure.
MIN_PROBABILITY = 0.7
# langdetect reads at most 10,000 characters; no need to hand it more.
MAX_CHARS = 10_000

# ISO 3166-1 alpha-2 codes assigned to countries and territories.
ISO_COUNTRIES = frozenset(
    """
    AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW
    BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI
    FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN
    IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME
    MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF
    PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV
    SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE
    YT ZA ZM ZW
    """.split()
)
# Country-code TLDs that differ from the country's ISO code.
CCTLD_EXCEPTIONS = {"uk": "GB"}

_SUFFIXES = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


@dataclass(frozen=True)
class Analysis:
    """What doAnalyse stores on a record; None where it cannot tell."""

    language: str | None = None
    country: str | None = None


def language_of(text: str) -> str | None:
    """langdetect's code of the text's language (``en``, ``sv``, ``zh-cn``), or None when too short or unsure."""
    text = text[:MAX_CHARS]
    if sum(ch.isalpha() for ch in text) < MIN_LETTERS:
        return None
    try:
        best = detect_langs(text)[0]
    except LangDetectException:  # no feature to judge by, e.g. only digits and symbols
        return None
    language: str = best.lang  # langdetect's Language, untyped
    probability: float = best.prob
    return language if probability >= MIN_PROBABILITY else None


def country_of_host(host: str) -> str | None:
    """ISO 3166 code of the country whose top-level domain the host is in (``www.bbc.co.uk`` -> ``GB``).

    Generic domains (``.com``, ``.org``, ``.eu``), IP addresses and names
    outside the public suffix list give None.
    """
    host = host.strip().rstrip(".").lower()
    try:
        ipaddress.ip_address(host.strip("[]"))
        return None
    except ValueError:
        pass
    suffix = _SUFFIXES(host).suffix
    if not suffix:
        return None
    tld = suffix.rsplit(".", 1)[-1]
    code = CCTLD_EXCEPTIONS.get(tld, tld.upper())
    return code if code in ISO_COUNTRIES else None


def analyse(url: str, text: str) -> Analysis:
    """Language of ``text`` and country of the server of ``url``."""
    return Analysis(language=language_of(text), country=country_of_host(urlsplit(url).hostname or ""))
