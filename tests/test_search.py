"""Search snippets and query words (the stores' ranking is tested in test_store.py on both backends)."""

from __future__ import annotations

import pytest

from combine_scrapy.records.store.search import query_words, snippet


def test_query_words_are_distinct_lower_case_words():
    assert query_words("Sundews, sundews AND pitcher-plants!") == ["sundews", "and", "pitcher", "plants"]
    with pytest.raises(ValueError, match=r"no word to search for in '!\?'"):
        query_words("!?")


def test_snippet_shows_the_window_with_most_query_words():
    text = "Sundews are mentioned first. " + "Filler words here. " * 30 + "Sticky glands of sundews catch insects. " + "More filler. " * 30
    cut = snippet(text, ["sundews", "insects", "glands"], width=80)
    assert "[Sticky]" not in cut and "[glands] of [sundews] catch [insects]" in cut
    assert cut.startswith("...") and cut.endswith("...")
    assert len(cut) < 100


def test_snippet_matches_whole_words_and_falls_back_to_the_beginning():
    assert snippet("Pitchers and pitcher plants", ["pitcher"]) == "Pitchers and [pitcher] plants"
    assert snippet("Nothing relevant here at all", ["orchid"], width=16) == "Nothing relevant..."
    assert snippet("", ["x"]) == ""
