"""URL canonicalization and validation: Combine's "URL filtering", table-tested."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from combine_scrapy.access.urls import (
    DEFAULT_EXCLUDE,
    EXCLUDED,
    MALFORMED,
    NOT_ALLOWED,
    REPEATED_SEGMENTS,
    RULE_TIMEOUT_REASON,
    SCHEME,
    TOO_DEEP,
    TOO_LONG,
    UrlRule,
    UrlRules,
    backtracking,
    canonicalize,
    check_url,
    host_of,
    parse_serveralias,
)
from combine_scrapy.job import load_job

RULES = UrlRules()
CASES = Path(__file__).parent / "data" / "canonical_urls.tsv"


def _table() -> list:
    """The canonicalization table: ``# kind`` lines, then ``URL<TAB>canonical`` (``!reason`` when refused)."""
    cases, kind = [], ""
    for line in CASES.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            kind = line[2:]
        elif line and not line.startswith("#"):
            url, expected = line.split("\t")
            cases.append(pytest.param(url, expected, id=f"{kind[:40]}: {url.strip()[:60]}"))
    return cases


@pytest.mark.parametrize(("url", "expected"), _table())
def test_canonicalization_table(url, expected):
    verdict = check_url(url, dataclasses.replace(RULES, exclude=()))
    if expected.startswith("!"):
        assert verdict.reason == expected[1:]
    else:
        assert verdict.url == expected
        assert canonicalize(expected, RULES) == expected


def test_the_table_covers_every_kind():
    assert len(_table()) >= 200


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("HTTP://WWW.Example.COM/a.html", "http://www.example.com/a.html"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("ftp://example.com:21/pub/", "ftp://example.com/pub/"),
        ("http://example.com:8080/a", "http://example.com:8080/a"),
        ("http://example.com", "http://example.com/"),
        ("http://example.com/a.html#part-2", "http://example.com/a.html"),
        ("http://example.com/a/./b/../c.html", "http://example.com/a/c.html"),
        ("http://example.com/../../c.html", "http://example.com/c.html"),
        ("http://example.com/p;jsessionid=0123ABCD", "http://example.com/p"),
        ("http://example.com/shop/(S(lit3py55t21z5v55vlm25s55))/cart.aspx", "http://example.com/shop/cart.aspx"),
        ("http://example.com/%7euser/", "http://example.com/~user/"),
        ("http://example.com/a b", "http://example.com/a%20b"),
        ("http://Exämple.com/", "http://xn--exmple-cua.com/"),
        ("http://example.com./", "http://example.com/"),
        ("  http://example.com/x  ", "http://example.com/x"),
    ],
)
def test_canonical_form(url, canonical):
    assert canonicalize(url, RULES) == canonical


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("?b=2&a=1", "?a=1&b=2"),                 # w3lib's canonical order
        ("?a=1&a=1&b=2", "?a=1&b=2"),             # repeated CGI parameters cleaned
        ("?a=1&a=2", "?a=1&a=2"),                 # same name, other value: kept
        ("?PHPSESSID=99ff&page=2", "?page=2"),
        ("?page=2&sid=42", "?page=2"),
        ("?ASPSESSIONIDQQGGGNCG=x&page=2", "?page=2"),
        ("?CFID=1&CFTOKEN=2&page=2", "?page=2"),
        ("?jsessionid=1", ""),
        ("?sidebar=1", "?sidebar=1"),             # a name merely starting like one is kept
    ],
)
def test_query_cleaning(query, expected):
    assert canonicalize("http://example.com/p" + query, RULES) == "http://example.com/p" + expected


def test_sessionids_are_configurable():
    rules = dataclasses.replace(RULES, sessionids=("mysid",))
    assert canonicalize("http://example.com/p?mysid=1&PHPSESSID=2", rules) == "http://example.com/p?PHPSESSID=2"


def test_server_aliases_resolve_to_the_first_host_of_a_group():
    rules = dataclasses.replace(RULES, serveralias=parse_serveralias("www.example.com example.com www2.example.com:8080"))
    assert canonicalize("http://EXAMPLE.com/a", rules) == "http://www.example.com/a"
    assert canonicalize("http://www2.example.com:8080/a", rules) == "http://www.example.com/a"
    assert canonicalize("http://www2.example.com/a", rules) == "http://www2.example.com/a"


@pytest.mark.parametrize("line", ["example.com", "", "exa mple.com!bad other.com"])
def test_bad_serveralias_lines_say_why(line):
    with pytest.raises(ValueError):
        parse_serveralias(line)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://example.com/a.html", ""),
        ("https://example.com/", ""),
        ("ftp://example.com/pub/readme.txt", ""),
        ("mailto:someone@example.com", SCHEME),
        ("javascript:void(0)", SCHEME),
        ("file:///etc/passwd", SCHEME),
        ("", MALFORMED),
        ("http://", MALFORMED),
        ("http://example.com:99999/", MALFORMED),
        ("http://exa\x00mple.com/", MALFORMED),
        ("http://example.com/" + "a" * 240, TOO_LONG),
        ("http://.example.com/", MALFORMED),         # Combine excluded it with HOST: http:\/\/\.
        ("http://user@example.com/", ""),            # the user is dropped (Combine excluded it with HOST: \@)
        ("http://example.com/cgi-bin/x", EXCLUDED),
        ("http://example.com/search?q=x", EXCLUDED),  # Combine excludes every query by default
        ("http://example.com/image.map", EXCLUDED),
        ("http://example.com/_vti_bin/x", EXCLUDED),
        ("http://example.com/photo.jpg", EXCLUDED),
        ("http://example.com/PHOTO.JPG", EXCLUDED),
        ("http://example.com/setup.exe", EXCLUDED),
        ("http://example.com/a.tar", EXCLUDED),
        ("http://example.com/song.mp3", EXCLUDED),
        ("http://example.com/paper.pdf", ""),        # documents are converted, not excluded
    ],
)
def test_validation_reasons(url, reason):
    assert check_url(url, RULES).reason == reason


def test_length_limit_is_below_max_url_length():
    rules = dataclasses.replace(RULES, max_url_length=30)
    assert check_url("http://example.com/abcdefghij", rules).ok          # 29 characters
    assert check_url("http://example.com/abcdefghijk", rules).reason == TOO_LONG


def test_allow_rules_one_must_match_host_rules_see_only_the_host():
    rules = dataclasses.replace(RULES, allow=(UrlRule.parse(r"HOST: \.se$"), UrlRule.parse("URL /plants/")))
    assert check_url("http://www.example.se/x", rules).ok
    assert check_url("http://www.example.com/plants/x", rules).ok
    assert check_url("http://www.example.com/x.se", rules).reason == NOT_ALLOWED


def test_a_url_rule_sees_the_whole_url():
    rules = dataclasses.replace(RULES, exclude=(UrlRule.parse("URL example"),))
    assert check_url("http://other.org/example.html", rules).reason == EXCLUDED
    rules = dataclasses.replace(RULES, exclude=(UrlRule.parse("HOST: example"),))
    assert check_url("http://other.org/example.html", rules).ok


@pytest.mark.parametrize("text", ["example", "HOST:", "URL (unclosed", "host: x"])
def test_bad_rules_are_refused(text):
    with pytest.raises(ValueError):
        UrlRule.parse(text)


def test_relative_links_resolve_against_their_page():
    assert check_url("../b.html", RULES, base="http://example.com/a/c.html").url == "http://example.com/b.html"


def test_session_ids_are_removed_before_the_exclude_test():
    assert check_url("http://example.com/a.html?PHPSESSID=1", RULES).url == "http://example.com/a.html"
    assert check_url("http://example.com/a.html?PHPSESSID=1", RULES).ok


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://Example.com/a", "example.com"),
        ("http://example.com:80/a", "example.com"),
        ("https://example.com:8443/a", "example.com:8443"),
        ("http://user:pw@example.com:81/", "example.com:81"),
        ("http://127.0.0.2:8931/", "127.0.0.2:8931"),
    ],
)
def test_host_of(url, host):
    assert host_of(url) == host


urls = st.one_of(
    st.text(max_size=80),
    st.builds(
        lambda scheme, host, path, query, fragment: f"{scheme}://{host}{path}{query}{fragment}",
        st.sampled_from(["http", "HTTP", "https", "ftp", "gopher", ""]),
        st.from_regex(r"[A-Za-z0-9.\-@:\[\]]{0,20}", fullmatch=True),
        st.text(alphabet="/.;=%abcAZ09 ~é()", max_size=30),
        st.text(alphabet="?&=;%abSIDPHPESjsession019", max_size=30),
        st.text(alphabet="#ab/", max_size=5),
    ),
)


@settings(max_examples=1000, deadline=None)
@given(urls)
def test_check_url_never_raises_and_canonical_urls_are_fixed_points(url):
    verdict = check_url(url, RULES)
    assert isinstance(verdict.reason, str)
    if verdict.reason in ("", EXCLUDED, NOT_ALLOWED, TOO_LONG):
        assert canonicalize(verdict.url, RULES) == verdict.url
        assert check_url(verdict.url, RULES) == verdict


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/a/b/c/d.html", ""),
        ("/" + "/".join(f"d{i}" for i in range(20)), ""),
        ("/" + "/".join(f"d{i}" for i in range(21)), TOO_DEEP),
        ("/cal/2024/cal/2025/cal/2026/x.html", ""),                    # three times: still fine
        ("/cal/2024/cal/2025/cal/2026/cal/2027/x.html", REPEATED_SEGMENTS),
        ("/a/b/a/b/a/b/a/b/", REPEATED_SEGMENTS),
    ],
)
def test_spider_trap_bounds(path, reason):
    assert check_url("http://example.com" + path, RULES).reason == reason


def test_spider_trap_bounds_are_configurable():
    rules = dataclasses.replace(RULES, max_path_depth=2, max_repeated_segments=1)
    assert check_url("http://example.com/a/b/c", rules).reason == TOO_DEEP
    assert check_url("http://example.com/a/a", rules).reason == REPEATED_SEGMENTS


def test_host_rules_see_the_host_name_alone():
    rules = dataclasses.replace(RULES, allow=(UrlRule.parse(r"HOST: ^docs\.example\.test$"),), exclude=())
    assert check_url("http://docs.example.test:8080/", rules).ok
    assert check_url("https://user@DOCS.example.test/a", rules).ok
    assert check_url("http://www.docs.example.test/", rules).reason == NOT_ALLOWED
    ipv6 = dataclasses.replace(rules, allow=(UrlRule.parse(r"HOST: ^\[::1\]$"),))
    assert check_url("http://[::1]:8080/", ipv6).ok


@pytest.mark.parametrize("text", [r"HOST: http:\/\/\.", r"HOST: \@", r"HOST: ^https://example\.com", "HOST: example.com:8080/"])
def test_host_rules_written_for_a_scheme_user_or_port_are_refused_with_a_hint(text):
    with pytest.raises(ValueError, match="host name alone"):
        UrlRule.parse(text)


def test_a_refusal_names_the_rule_and_the_string_it_matched():
    rule = UrlRule.parse(r"HOST: ^docs\.example\.test$", source="combine.cfg line 40")
    verdict = check_url("http://www.example.test:8080/a", dataclasses.replace(RULES, allow=(rule,)))
    assert verdict.reason == NOT_ALLOWED
    assert "'HOST: ^docs\\.example\\.test$' (combine.cfg line 40)" in verdict.detail
    assert "host 'www.example.test'" in verdict.detail
    exclude = UrlRule.parse(r"URL \.pdf$", source="combine.cfg line 44")
    verdict = check_url("http://example.com/a.pdf", dataclasses.replace(RULES, exclude=(exclude,)))
    assert verdict.detail == "exclude rule 'URL \\.pdf$' (combine.cfg line 44) matches URL 'http://example.com/a.pdf'"
    assert check_url("http://example.com:99999/").detail == "bad port in 'example.com:99999'"


@pytest.mark.parametrize(
    ("name", "sessionid"),
    [("sid", True), ("_sid", True), ("_sessionID", True), ("__sessionid", True), ("jsid", True), ("Bv_SessionID", True),
     ("PHPSESSID", True), ("NewsID", False), ("sidebar", False), ("consider", False), ("_pid", False)],
)
def test_session_id_names_match_whole_and_case_insensitively_after_a_leading_underscore(name, sessionid):
    assert RULES.is_sessionid(name) is sessionid


def test_a_seed_refused_by_a_rule_names_the_rule_with_its_line_and_the_host_it_saw(tmp_path):
    directory = tmp_path / "j"
    directory.mkdir()
    (directory / "combine.cfg").write_text("# a comment\n<allow>\nHOST: ^docs\\.example\\.test$\n</allow>\n")
    (directory / "topicdefinition.txt").write_text("50: carnivorous plants=CP\n")
    (directory / "seeds.txt").write_text("http://docs.example.test:8080/\nhttp://www.example.test:8080/\n")
    job = load_job("j", tmp_path)
    assert job.seeds == ("http://docs.example.test:8080/",)  # HOST rules see the host without its port
    [refused] = job.refused_seeds
    assert refused.line == 2
    assert "not_allowed" in refused.reason and "'HOST: ^docs\\.example\\.test$' (combine.cfg line 3)" in refused.reason
    assert "host 'www.example.test'" in refused.reason


def test_url_checker_remembers_verdicts_and_forgets_when_full():
    from combine_scrapy.access.urls import UrlChecker

    checker = UrlChecker(UrlRules(), size=2)
    first = checker("HTTP://Example.COM:80/a/../b?PHPSESSID=1")
    assert first == check_url("HTTP://Example.COM:80/a/../b?PHPSESSID=1", UrlRules())
    assert first.url == "http://example.com/b"
    assert checker("HTTP://Example.COM:80/a/../b?PHPSESSID=1") is first
    assert not checker("javascript:alert(1)").ok
    checker("http://example.com/c")  # the third: the remembered ones are forgotten
    assert checker("HTTP://Example.COM:80/a/../b?PHPSESSID=1") is not first


# --- rules that backtrack ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("expression, reason, unbounded", [
    (r"(a+)+$", "a repeated group that holds a quantifier or an alternative", 2),
    (r"(a|aa)+$", "a repeated group that holds a quantifier or an alternative", 1),
    (r"(?:x|y)*z", "a repeated group that holds a quantifier or an alternative", 1),
    (r"(a*){3}", "a repeated group that holds a quantifier or an alternative", 1),
    (r"(\w+)-\1", "a backreference", 1),
    (r"(?P<x>a)(?P=x)", "a backreference", 0),
    (r"\.(gz|tgz|zip)$", "", 0),
    (r"cgi-bin|htbin|cgi|\?|\.map$|_vti_", "", 0),
    (r"(www\.)?example\.com$", "", 0),
    (r"[(a+)]+", "", 1),                     # a character class is one character
    (r"\((a)\)+", "", 1),                    # the quantifier repeats an escaped ')'
    (r".*example.*", "", 2),
])
def test_rules_that_may_backtrack_are_recognised(expression, reason, unbounded):
    assert backtracking(expression) == (reason, unbounded)


def test_combines_default_rules_run_without_a_time_limit_and_backtracking_ones_with_one():
    assert not any(rule.timed for rule in (*DEFAULT_EXCLUDE, *UrlRules().allow))
    assert UrlRule.parse(r"URL (a|aa)+$").timed and UrlRule.parse(r"HOST: .*example.*").timed
    assert UrlRule.parse(r"URL (a|aa)+$").backtracks and not UrlRule.parse(r"HOST: .*example.*").backtracks


def test_a_rule_that_backtracks_on_a_url_refuses_it_in_time_and_says_so_once(caplog):
    """re would take seconds on this URL (and twice as long for each more 'a'); the rule gets RULE_TIMEOUT."""
    exclude = UrlRule.parse(r"URL (a|aa)+$", "combine.cfg line 7")
    rules = UrlRules(exclude=(exclude,))
    first = check_url("http://example.org/" + "a" * 34 + "!", rules)
    second = check_url("http://example.org/" + "a" * 35 + "!", rules)
    assert first.reason == second.reason == RULE_TIMEOUT_REASON
    assert "'URL (a|aa)+$' (combine.cfg line 7) ran past" in first.detail and "aaaa!" in first.detail
    warnings = [r.getMessage() for r in caplog.records if "ran past" in r.getMessage()]
    assert len(warnings) == 1 and "http://example.org/aaa" in warnings[0] and "combine.cfg line 7" in warnings[0]
    assert check_url("http://example.org/plain.html", rules).ok
    allow = UrlRule.parse(r"URL ^http://(a|aa)+\.org/$", "combine.cfg line 9")
    assert check_url("http://" + "a" * 34 + ".org/x", UrlRules(allow=(allow,))).reason == RULE_TIMEOUT_REASON


def test_the_job_loader_warns_of_rules_that_backtrack(tmp_path, caplog):
    job = tmp_path / "t"
    job.mkdir()
    (job / "combine.cfg").write_text("<exclude>\nURL \\.pdf$\nURL (a|aa)+$\n</exclude>\n")
    (job / "topicdefinition.txt").write_text("50: carnivorous plants=CP\n")
    (job / "seeds.txt").write_text("http://example.org/\n")
    load_job("t", tmp_path)
    warnings = [r.getMessage() for r in caplog.records if "may backtrack" in r.getMessage()]
    assert len(warnings) == 1
    assert "combine.cfg line 3: exclude rule 'URL (a|aa)+$' may backtrack" in warnings[0]
