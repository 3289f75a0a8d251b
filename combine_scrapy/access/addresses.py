"""Which hosts a crawl may reach: a page must not lead the crawler into the machine's own networks.

A link, a redirect or a robots.txt redirect to ``127.0.0.1:6379``, the cloud
metadata service at ``169.254.169.254`` or an intranet address would make the
crawler a proxy into networks it can reach and the page's author cannot
(server-side request forgery). Non-public addresses (loopback, RFC 1918
private, link-local, unique-local, unspecified, multicast, reserved) are
therefore fetched only on hosts the job names itself: its seeds (seeds.txt),
its sitesOK.txt hosts, hosts its allow rules name, or every host with
``AllowPrivateAddresses = 1``.

Before any of that, a request's scheme must be on the allow-list
(:func:`scheme_refusal`): http and https, and ftp for the URLs a job marks
itself. ``file:``, ``data:`` and every other scheme are refused whatever
``AllowPrivateAddresses`` says: a robots.txt redirect to
``file:///proc/self/environ`` would otherwise read the harvester's own files.

Pure code: :func:`parse_ip` reads an address literal the way the C
resolver does (``2130706433``, ``0x7f.1`` and ``0177.0.0.1`` are all
127.0.0.1), :func:`non_public` says why an address is not public, and
:class:`AddressPolicy` decides for a URL, given the addresses its host has.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from combine_scrapy.access.urls import DEFAULT_PORTS, WEB_SCHEMES, UrlRule, UrlRules

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

#: The reason refused URLs are counted under: ``urls/rejected/private_address``.
PRIVATE_ADDRESS = "private_address"

# NAT64's well-known prefix (RFC 6052): 64:ff9b::7f00:1 reaches 127.0.0.1.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# One part of an inet_aton address: decimal, octal (leading 0) or hexadecimal (0x).
_INET_ATON_PART = re.compile(r"0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*")
# Hosts no allow rule can name by accident: a rule that matches these as well matches every host.
_PROBE_HOSTS = ("public.example", "203.0.113.7", "[2001:db8::7]")


def scheme_refusal(url: str, schemes: tuple[str, ...] = WEB_SCHEMES) -> str | None:
    """Why the URL's scheme may not be fetched (``scheme 'file' is not one of http, https``), or None.

    ``schemes``: :data:`~combine_scrapy.access.urls.WEB_SCHEMES` for a redirect, a robots.txt or a
    sitemap, :data:`~combine_scrapy.access.urls.SCHEMES` for a URL the job marked (a seed or a link).
    """
    scheme = url.partition(":")[0].strip().lower() if ":" in url else ""
    if scheme in schemes:
        return None
    return f"scheme {scheme[:20]!r} is not one of {', '.join(schemes)}"


def _inet_aton(text: str) -> ipaddress.IPv4Address | None:
    """``a``, ``a.b``, ``a.b.c`` or ``a.b.c.d`` in decimal, octal or hex, as inet_aton (and so the resolver) reads it."""
    parts = text.split(".")
    if not 1 <= len(parts) <= 4 or not all(_INET_ATON_PART.fullmatch(part) for part in parts):
        return None
    values = [int(part, 16) if part[:2].lower() == "0x" else int(part, 8) if part.startswith("0") else int(part)
              for part in parts]
    *leading, last = values
    if any(value > 255 for value in leading) or last >= 256 ** (5 - len(parts)):
        return None
    number = last
    for position, value in enumerate(leading):
        number += value << (8 * (3 - position))
    return ipaddress.IPv4Address(number)


def parse_ip(host: str) -> Address | None:
    """The address a host literal stands for (``[::1]``, ``127.1``, ``0x7f000001``); None for a name."""
    host = host.strip().rstrip(".").lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host.split("%", 1)[0])  # a zone id (fe80::1%eth0) names no other address
        except ValueError:
            return None
    return _inet_aton(host)


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address reaches: IPv4-mapped, 6to4 or NAT64."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def non_public(address: Address) -> str | None:
    """Why ``address`` is not on the public Internet (``loopback``, ``private``, ...), or None when it is."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            return non_public(embedded)
    checks = (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("unique-local", isinstance(address, ipaddress.IPv6Address) and address in ipaddress.IPv6Network("fc00::/7")),
        ("private", address.is_private),
        ("multicast", address.is_multicast),
        ("reserved", address.is_reserved or not address.is_global),
    )
    return next((name for name, applies in checks if applies), None)


def endpoint(url: str) -> tuple[str, int | None]:
    """``(host, port)`` of a URL, the host lower-cased, the port made explicit from the scheme."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    return (parts.hostname or "").rstrip("."), port or DEFAULT_PORTS.get(parts.scheme.lower())


def canonical_endpoint(url: str) -> tuple[str, int | None]:
    """:func:`endpoint` of a canonical URL (a seed: scheme://host[:port]/...), by splitting the string:
    a million seeds take a fraction of a second, not the seconds urlsplit would hold the reactor."""
    scheme, _, rest = url.partition("://")
    server = rest.split("/", 1)[0]
    if server.startswith("["):
        host, _, port = server[1:].partition("]")
        port = port[1:]
    else:
        host, _, port = server.partition(":")
    return host, int(port) if port.isdigit() else DEFAULT_PORTS.get(scheme)


def _with_host(url: str, host: str) -> tuple[str, str]:
    """``url`` with its host replaced, and that host (what a HOST: rule sees)."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}" + url[len(f"{parts.scheme}://{parts.netloc}"):], host


def _rule_matches(rule: UrlRule, url: str, host: str) -> bool:
    """Whether an allow rule matches; one that runs past its time limit names no host (it is not trusted)."""
    try:
        return rule.matches(url, host)
    except TimeoutError:
        return False


def _names(rule: UrlRule, url: str) -> bool:
    """Whether an allow rule names the URL's host: it matches it, and matches none of the probe hosts."""
    if not _rule_matches(rule, url, endpoint(url)[0]):
        return False
    return not any(_rule_matches(rule, *_with_host(url, probe)) for probe in _PROBE_HOSTS)


def written_non_public(url: str) -> bool:
    """Whether the URL's host is written as a non-public address (no name resolution: cheap enough for every link)."""
    address = parse_ip(endpoint(url)[0])
    return address is not None and non_public(address) is not None


class _PrivateAddressSetting(Protocol):
    @property
    def allow_private_addresses(self) -> bool: ...


class AddressesOfJob(Protocol):
    """What the address policy reads of a job (:class:`combine_scrapy.job.Job`): the hosts it names itself."""

    @property
    def fetching(self) -> _PrivateAddressSetting: ...

    @property
    def seeds(self) -> tuple[str, ...]: ...

    @property
    def sites_ok(self) -> frozenset[str]: ...

    @property
    def url_rules(self) -> UrlRules: ...


@dataclass(frozen=True)
class AddressPolicy:
    """Which hosts may be (or resolve to) non-public addresses.

    ``endpoints`` are the seeds' ``(host, port)``; ``hosts`` are named without
    a port (any port) or as ``host:port`` (sitesOK.txt's form); ``rules`` are
    the job's allow rules, of which those that name a host (and do not match
    every host) count.
    """

    allow_all: bool = False
    endpoints: frozenset[tuple[str, int | None]] = frozenset()
    hosts: frozenset[str] = frozenset()
    rules: tuple[UrlRule, ...] = ()

    @classmethod
    def for_job(cls, job: AddressesOfJob) -> AddressPolicy:
        return cls(
            allow_all=job.fetching.allow_private_addresses,
            endpoints=frozenset(map(canonical_endpoint, job.seeds)),
            hosts=frozenset(job.sites_ok),
            rules=tuple(job.url_rules.allow),
        )

    def trusts(self, url: str) -> bool:
        """Whether the job names the URL's host itself, so that it may be a private one."""
        if self.allow_all:
            return True
        host, port = endpoint(url)
        if (host, port) in self.endpoints or host in self.hosts:
            return True
        netloc = urlsplit(url).netloc.rpartition("@")[2].lower()
        if netloc in self.hosts:
            return True
        return any(_names(rule, url) for rule in self.rules)

    def refusal(self, url: str, addresses: Iterable[Address] = ()) -> str | None:
        """Why the URL must not be fetched (``127.0.0.1 is loopback``), or None.

        The host's literal address is always checked; ``addresses`` are what
        its name resolved to. One non-public address is enough to refuse.
        """
        host, _ = endpoint(url)
        literal = parse_ip(host)
        candidates = [literal] if literal is not None else list(addresses)
        for address in candidates:
            kind = non_public(address)
            if kind is not None and not self.trusts(url):
                shown = host if literal is not None and str(literal) == host.strip("[]") else f"{host} ({address})"
                return f"{shown} is {kind}"
        return None
