"""robots.txt: status codes, caching times, and Google's conformance cases (tests/data, Apache-2.0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from combine_scrapy.access.robots import TTL_DEFAULT, TTL_SUCCESS, parse_robots, policy_from_response, product_token

DATA = Path(__file__).parent / "data"
#: Conformance cases this implementation is known to fail, by name, with why.
#: A case that starts passing must leave this list, so the count stays honest.
KNOWN_FAILURES = {
    # Google's parser applies the rules to /robots.txt itself; RFC 9309 2.2.2
    # says "The /robots.txt URI is implicitly allowed", and protego follows it.
    "stress/327748.textproto#0.5", "stress/369883.textproto#0.5", "stress/369883.textproto#0.9",
    "stress/860237.textproto#0.9",
}


def _cases(file_name):
    return json.loads((DATA / file_name).read_text())


CASES = _cases("robots_cases.json") + _cases("robots_spec_test_cases.json")


def _allowed(case) -> bool:
    body = bytes.fromhex(case["robots_hex"]) if "robots_hex" in case else case["robots"]
    url = case["url"] or "http://example.com/"
    if "://" not in url:
        url = "http://example.com" + url
    return parse_robots(body, case["agent"]).allowed(url)


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_google_conformance_case(case):
    if case["name"] in KNOWN_FAILURES:
        assert _allowed(case) != case["allowed"], "passes now: remove it from KNOWN_FAILURES"
    else:
        assert _allowed(case) == case["allowed"]


def test_conformance_score():
    """541 of 545 cases pass (protego alone: 509, robotspy 0.13 alone: 531); the rest are listed above."""
    assert len(CASES) == 545
    assert len(KNOWN_FAILURES) == 4


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [
        ("combine-scrapy/0.1 (demo)", "combine-scrapy"),
        ("FooBot", "FooBot"),
        ("Foo_Bot/2", "Foo_Bot"),
        ("FooBot (+http://example.org/bot)", "FooBot"),
        ("AB42bot/1.0", "AB42bot"),
        ("Foo Bar", "Foo Bar"),  # not name/version: the name as written, which only '*' matches
        ("", ""),
    ],
)
def test_product_token(user_agent, token):
    assert product_token(user_agent) == token


ROBOTS = b"User-agent: combine-scrapy\nDisallow: /private/\nCrawl-delay: 7\n\nUser-agent: *\nDisallow: /\n"


def test_rules_for_our_product_token():
    policy = policy_from_response(200, ROBOTS, "combine-scrapy/0.1 (+http://example.org/bot)")
    assert policy.allowed("http://example.com/plants.html")
    assert not policy.allowed("http://example.com/private/x.html")
    assert policy.crawl_delay == 7
    assert policy.ttl == TTL_SUCCESS
    assert not policy_from_response(200, ROBOTS, "OtherBot/1").allowed("http://example.com/plants.html")


@pytest.mark.parametrize("status", [401, 403, 404, 410])
def test_client_errors_mean_no_rules(status):
    policy = policy_from_response(status, b"User-agent: *\nDisallow: /\n", "bot")
    assert policy.allowed("http://example.com/anything")
    assert policy.ttl == TTL_SUCCESS


@pytest.mark.parametrize("status", [500, 503, 429, None])
def test_server_errors_and_no_answer_close_the_site_for_a_day(status):
    policy = policy_from_response(status, None, "bot")
    assert not policy.allowed("http://example.com/")
    assert policy.ttl == TTL_DEFAULT


def test_a_binary_or_oversized_body_does_not_raise():
    policy = policy_from_response(200, b"\xff\xfe\x00garbage" + b"x" * 1_000_000, "bot")
    assert policy.allowed("http://example.com/")


@pytest.mark.parametrize(
    ("line", "agent", "ours"),
    [
        ("User-agent: FooBot", "FooBot/2.0", True),
        ("User-agent: foobot", "FooBot/2.0", True),           # case-insensitive
        ("User-agent: FooBot/1.0", "FooBot/2.0", True),       # the line names the token it starts with
        ("User-agent: Foo Bar", "Foo/1", True),
        ("User-agent: Foo", "FooBar/1", False),               # a prefix of our token is another agent
        ("User-agent: FooBot*", "FooBot-News/1", False),
        ("User-agent: AB42bot", "AB42bot/1", False),           # digits end a token: the line names AB
    ],
)
def test_a_group_is_ours_only_when_it_names_our_whole_token(line, agent, ours):
    body = f"User-agent: *\nDisallow: /\n\n{line}\nDisallow: /private/\n"
    assert parse_robots(body, agent).allowed("http://example.com/public.html") is ours


def test_an_unknown_line_does_not_end_a_group():
    body = "User-agent: FooBot\nNoindex-Later: yes\nUser-agent: BarBot\nDisallow: /\n"
    assert not parse_robots(body, "FooBot/1").allowed("http://example.com/")


@pytest.mark.parametrize(
    ("rule", "url", "matches"),
    [
        ("/caf%c3%a9/", "http://example.com/caf%C3%A9/x", True),   # escapes compared upper-cased
        ("/café/", "http://example.com/caf%C3%A9/x", True),        # the rule's non-ASCII is percent-encoded
        ("/a%2Fb", "http://example.com/a/b", False),               # an escaped '/' is not a '/'
        ("/a%62c", "http://example.com/abc", False),               # octet by octet, as Google compares
        ("/a%62c", "http://example.com/a%62c", True),
        ("/p?q=1", "http://example.com/p?q=1&r=2", True),
        ("/x#comment", "http://example.com/x", True),              # '#' starts a comment
        ("/*.pdf$", "http://example.com/a/b.pdf", True),
        ("/*.pdf$", "http://example.com/a/b.pdf?x=1", False),
    ],
)
def test_rule_paths_match_percent_encoded_urls_octet_by_octet(rule, url, matches):
    policy = parse_robots(f"User-agent: *\nDisallow: {rule}\n", "bot")
    assert policy.allowed(url) is not matches


def test_robots_txt_itself_is_always_allowed():
    assert parse_robots("User-agent: *\nDisallow: /\n", "bot").allowed("http://example.com/robots.txt")
