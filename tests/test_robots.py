"""robots.txt: status codes, caching times, and Google's conformance cases (tests/data, Apache-2.0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from combine_scrapy.robots import TTL_DEFAULT, TTL_SUCCESS, parse_robots, policy_from_response, product_token

DATA = Path(__file__).parent / "data"
#: Conformance cases this implementation is known to fail, by name, with why.
#: A case that starts passing must leave this list, so the count stays honest.
KNOWN_FAILURES = {
    # protego treats a user-agent line as a substring match and reads
    # "Foo Bar" as the agent "Foo Bar"; Google matches the token up to the first space.
    "ID_UserAgentValueCaseInsensitive#4", "ID_UserAgentValueCaseInsensitive#5",
    "ID_UserAgentValueCaseInsensitive#6", "ID_UserAgentValueCaseInsensitive#10",
    "ID_UserAgentValueCaseInsensitive#11", "ID_UserAgentValueCaseInsensitive#12",
    "GoogleOnly_AcceptUserAgentUpToFirstSpace#1",
    "correctness/user-agent-name.textproto#0.0", "correctness/user-agent-name.textproto#1.2",
    "correctness/user-agent-name.textproto#1.3", "correctness/user-agent-name.textproto#2.2",
    "correctness/user-agent-name.textproto#2.3", "correctness/user-agent-name.textproto#3.2",
    "correctness/user-agent-name.textproto#3.3",
    # An unknown line between two user-agent lines ends the group in Google's parser.
    "ID_LineSyntax_Groups_OtherRules#3",
    # Non-ASCII and percent-encoded paths compared after different normalizations.
    "ID_Encoding#3", "ID_Encoding#5", "ID_Encoding#6", "ID_SpecialCharacters#10",
    "correctness/non-ascii-paths.textproto#1.1", "correctness/non-ascii-paths.textproto#2.1",
    "correctness/non-ascii-paths.textproto#3.0", "correctness/special-characters.textproto#2.1",
    # Real-world files from the stress set: agent groups merged differently, robots.txt itself disallowed.
    "stress/327748.textproto#0.5", "stress/369883.textproto#0.5", "stress/369883.textproto#0.8",
    "stress/369883.textproto#0.9", "stress/701159.textproto#0.3", "stress/860237.textproto#0.9",
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
    """516 of 545 cases pass (protego alone: 509); the rest are listed above."""
    assert len(CASES) == 545
    assert len(KNOWN_FAILURES) == 29


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [("combine-scrapy/0.1 (demo)", "combine-scrapy"), ("FooBot", "FooBot"), ("Foo_Bot/2", "Foo_Bot"), ("", "")],
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
