"""The content key: stored records are found again by it, so it must not change."""

from __future__ import annotations

import re
import sys

from combine_scrapy.records.record import content_key


def test_content_keys_are_those_stored_before():
    text = "Drosera\u00a0capensis \u2003grows\n in bogs\x1c\x1f and\u3000fens"
    assert content_key("Sundews", text, "http://x/", "text/html") == "726F2130DC2BC3668C16CCA37381A71A"
    assert content_key("", " \n\t", "http://x/a", "text/html") == "68D483AE2823CCB9B6AC961565ED21EE"  # by URL


def test_the_key_leaves_out_what_re_calls_whitespace_and_nothing_else():
    """The key once removed re's ``\\s``; it now splits the text: the two agree on every character."""
    assert content_key("", "a\u2003b\x1cc", "u", "m") == content_key("", "abc", "u", "m")
    whitespace = re.compile(r"\s")
    split_apart = [chr(code) for code in range(sys.maxunicode + 1) if len(f"a{chr(code)}b".split()) == 2]
    assert split_apart == [chr(code) for code in range(sys.maxunicode + 1) if whitespace.match(chr(code))]
