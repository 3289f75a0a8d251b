"""Topic definitions and Combine's classifiers, with the documentation's own examples."""

from __future__ import annotations

import math
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from combine_scrapy.topic import (
    Cutoffs,
    Document,
    PlainMatcher,
    PositionMatcher,
    TopicDefinitionError,
    build_filter,
    load_topic_definition,
    parse_topic_definition,
)
from combine_scrapy.topic import text as prepare

GLASS = """\
# Combine's own example topic (optical glass).
50: optical glass=A.14.5, D.2.2
30: glass @and fiberoptics=D.2.2.8
50: glass @and technical @and history=D.2
50: ceramic materials @and glass=D.2.1.7
-10000: glass @and art=A
"""
PLANTS = """\
#This is a comment
75: d\\.?\\s*californica=CP.Drosophyllum
10: pitcher[^\\s]*=CP
-10: pitcher[^\\s]* @and baseball=CP
"""
NO_GATES = Cutoffs(total=-math.inf, normalized=-math.inf, relative=0)


def plain(definition: str, cutoffs: Cutoffs = NO_GATES) -> PlainMatcher:
    return PlainMatcher(parse_topic_definition(definition), cutoffs)


def test_rows_weights_terms_and_classes():
    definition = parse_topic_definition(GLASS)
    first, second, *_, last = definition.terms
    assert (first.weight, first.parts, first.classes, first.line) == (50, ("optical glass",), ("A.14.5", "D.2.2"), 2)
    assert second.parts == ("glass", "fiberoptics")
    assert (last.weight, last.parts) == (-10000, ("glass", "art"))
    assert definition.classes == ("A.14.5", "D.2.2", "D.2.2.8", "D.2", "D.2.1.7", "A")


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("50 optical glass=A\n", 1, "expected 'WEIGHT: TERMS=CLASS-LIST'"),
        ("# c\n\nfifty: glass=A\n", 3, "the weight is a signed integer"),
        ("50: optical glass\n", 1, "no '=' before the class list"),
        ("50:optical glass=A\n", 1, "with a space after the colon"),
        ("50: glass=\n", 1, "no class after '='"),
        ("50: glass=A B\n", 1, "a class name has a space"),
        ("50: glass[=A\n", 1, "bad regular expression 'glass['"),
        ("50: glass @and =A\n", 1, "'@and' needs a term on both sides"),
        ("# only a comment\n", None, "no term rows"),
    ],
)
def test_bad_rows_name_the_line_and_the_problem(text, line, message):
    with pytest.raises(TopicDefinitionError) as raised:
        parse_topic_definition(text, "topicdefinition.txt")
    assert raised.value.line == line
    assert message in str(raised.value)
    assert str(raised.value).startswith(f"topicdefinition.txt:{line}:" if line else "topicdefinition.txt:")


def test_stopwords_beside_the_definition_are_dropped_and_short_terms_skipped(tmp_path):
    (tmp_path / "topicdefinition.txt").write_text("50: the glass=A\n20: of=A\n")
    (tmp_path / "stopwords.txt").write_text("the of\n")
    definition = load_topic_definition(tmp_path / "topicdefinition.txt")
    assert [term.parts for term in definition.terms] == [("glass",)]
    assert definition.skipped[0][0] == 2


def test_glass_at_and_art_excludes_a_document():
    matcher = plain(GLASS, Cutoffs(total=90, normalized=0.2, relative=10))
    technical = Document("http://x/", title="Optical glass", text="optical glass in technical history of glass fiberoptics")
    artistic = Document("http://x/", title="Optical glass", text="optical glass in art: the glass art museum")
    assert matcher.classify(technical).relevant
    result = matcher.classify(artistic)
    assert not result.relevant
    assert result.score < -10000


def test_pitcher_with_baseball_cancels():
    matcher = plain(PLANTS)
    assert matcher.classify(Document("http://x/", text="a pitcher plant")).score == 10
    assert matcher.classify(Document("http://x/", text="the pitchers of the baseball team")).score == 0


def test_regular_expression_terms_match_the_documented_variants():
    matcher = plain(PLANTS)
    for text in ("D californica", "D. californica", "D.californica", "d californica"):
        assert matcher.classify(Document("http://x/", text=text)).score == 75, text
    assert matcher.classify(Document("http://x/", text="Dcalifornica")).score == 75
    assert matcher.classify(Document("http://x/", text="californica")).score == 0


def test_plain_score_is_hits_times_term_weight_times_location_weight():
    matcher = plain("7: sundews?=CP\n3: nepenthes=CP.N\n")
    document = Document(
        "http://x/", title="Sundews", meta="sundew sundew", headings="Nepenthes", text="sundews nepenthes nepenthes 42 x"
    )
    result = matcher.classify(document)
    # title 7x10, meta 2x7x4, headings 3x2, text 7x1 + 2x3x1
    assert result.score == 70 + 56 + 6 + 7 + 6
    classes = {c.name: c for c in result.classes}
    assert classes["CP"].absolute == 70 + 56 + 7
    # res: per location points over its token count (the number 42 is not a token)
    assert classes["CP"].relative == pytest.approx(70 / 1 + 56 / 2 + 7 / 4)
    assert classes["CP.N"].relative == pytest.approx(6 / 1 + 6 / 4)
    assert result.algorithm == "Std"
    assert set(result.terms) == {"sundews?", "nepenthes"}


def test_at_and_counts_the_rarest_part():
    matcher = plain("10: glass @and art=A\n")
    assert matcher.classify(Document("http://x/", text="glass glass glass art art")).score == 20
    assert matcher.classify(Document("http://x/", text="glass glass glass")).score == 0


def test_terms_match_whole_words_only():
    matcher = plain("10: art=A\n")
    assert matcher.classify(Document("http://x/", text="artists party art")).score == 10


def test_cutoffs_gate_the_decision():
    definition = "100: carnivorous plants=CP\n"
    page = Document("http://x/", text="carnivorous plants " + "word " * 98)  # 100 tokens
    assert plain(definition, Cutoffs(100, 0.2, 10)).classify(page).relevant is True
    assert plain(definition, Cutoffs(100, 1.01, 10)).classify(page).relevant is False
    assert plain(definition, Cutoffs(101, 0.2, 10)).classify(page).relevant is False


def test_relative_cutoff_keeps_only_classes_with_enough_share():
    matcher = plain("95: sundews?=CP.Drosera\n5: nepenthes=CP.Nepenthes\n", Cutoffs(0, 0, 10))
    result = matcher.classify(Document("http://x/", text="sundew nepenthes"))
    assert [c.name for c in result.classes] == ["CP.Drosera"]


def test_position_weighted_single_terms_and_phrases():
    matcher = PositionMatcher(parse_topic_definition("10: sundew=CP\n20: venus flytrap=CP\n"), NO_GATES)
    # words: title "sundew" (1), URL path "/" (none), text: "a venus flytrap sundew" (2..5)
    result = matcher.classify(Document("http://x/", title="Sundew", text="a venus flytrap sundew"))
    expected = 10 / math.log(0.5 * 1 + 1) + 20 / math.log(0.5 * 3 + 1) + 10 / math.log(0.5 * 5 + 1)
    assert result.score == pytest.approx(expected)
    assert result.normalized == pytest.approx(expected / 4)
    assert result.algorithm == "Pos"


def test_position_weighted_at_and_uses_position_and_proximity():
    matcher = PositionMatcher(parse_topic_definition("10: glass @and art=A\n"), NO_GATES)
    result = matcher.classify(Document("http://x/", text="glass x x art glass art"))
    # occurrence 0: glass 1, art 4; occurrence 1: glass 5, art 6
    expected = 10 / (math.log(1.5) * math.log(3 + 1)) + 10 / (math.log(0.5 * 5 + 1) * math.log(1 + 1))
    assert result.score == pytest.approx(expected)


def test_position_weighting_prefers_early_terms():
    matcher = PositionMatcher(parse_topic_definition("10: sundew=CP\n"), NO_GATES)
    early = matcher.classify(Document("http://x/", text="sundew " + "x " * 50)).score
    late = matcher.classify(Document("http://x/", text="x " * 50 + "sundew")).score
    assert early > late > 0


def test_a_runaway_regular_expression_is_abandoned_not_hung(caplog):
    matcher = plain("10: (a|a)+b=A\n")
    started = time.monotonic()
    result = matcher.classify(Document("http://x/", text="a" * 60 + "c"))
    assert time.monotonic() - started < 10
    assert result.score == 0
    assert "took too long" in caplog.text


def test_sites_ok_hosts_pass_regardless_of_score():
    definition = parse_topic_definition("100: carnivorous plants=CP\n")
    topic_filter = build_filter("plain", definition, sites_ok=frozenset({"plants.example.org"}))
    assert topic_filter.classify(Document("http://plants.example.org/", host="plants.example.org:8080")).relevant
    assert not topic_filter.classify(Document("http://other.org/", host="other.org")).relevant


def test_combine_module_names_select_the_algorithms():
    definition = parse_topic_definition("100: carnivorous plants=CP\n")
    assert build_filter("Combine::PosCheck_record", definition).classifier.algorithm == "Pos"
    assert build_filter("Combine::Check_record", definition).classifier.algorithm == "Std"


def test_a_plug_in_beside_the_job_decides_relevance(tmp_path):
    (tmp_path / "myfilter.py").write_text(
        "def classify(document):\n    return len(document.text.split()) * 10\n"
    )
    topic_filter = build_filter("myfilter.py:classify", None, tot_cutoff=30, job_dir=tmp_path)
    assert topic_filter.classify(Document("http://x/", text="one two three")).relevant
    assert not topic_filter.classify(Document("http://x/", text="one two")).relevant


def test_the_example_plug_in_in_the_package():
    topic_filter = build_filter("combine_scrapy.topic.examples:needs_title_and_words", None)
    assert topic_filter.classify(Document("http://x/", title="T", text="word " * 200)).relevant
    assert not topic_filter.classify(Document("http://x/", title="", text="word " * 200)).relevant


@pytest.mark.parametrize(
    ("name", "error"),
    [("no.such.module:classify", ImportError), ("combine_scrapy.topic:nothing_here", ImportError), ("nonsense", ValueError)],
)
def test_a_bad_plug_in_is_refused(name, error):
    with pytest.raises(error):
        build_filter(name, None)


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200))
def test_ascii_text_is_prepared_as_the_regular_expression_prepares_it(text):
    assert prepare._prepared(text) == prepare._NOT_WORD.sub(" ", text).lower()
    expected = [t for t in prepare._NOT_WORD.sub(" ", text).lower().split() if not prepare._NUMBER.match(t) and t != "the"]
    assert prepare.tokens(text, frozenset({"the"})) == expected


def test_tokens_drop_numbers_and_stopwords_in_any_script():
    text = "The 12 Größe-Tabelle, 3/4 ΣΊΣΥΦΟΣ and ٣٤٥ don't_stop 'quoted' -"
    assert prepare.tokens(text, frozenset({"and"})) == ["the", "größe-tabelle", "σίσυφος", "don't", "stop", "'quoted'"]


def test_meta_that_instructs_the_browser_is_no_topic_text():
    """A documentation site declares its charset in a meta element on every page: a topic about character
    encodings must not find every page relevant by it. Descriptive meta (keywords, description) still counts."""
    from combine_scrapy.document.parse import parse_document

    html = (b'<html><head><meta http-equiv="Content-Type" content="text/html; charset=UTF-8">'
            b'<meta name="keywords" content="sundews"><title>Backups</title></head>'
            b'<body><p>How to back up a database.</p></body></html>')
    page = parse_document("http://docs.example/backup.html", html, {"content-type": "text/html"})
    document = prepare.Document.from_page(page)
    assert "utf-8" not in document.meta.lower() and "sundews" in document.meta
    encoding = build_filter("plain", parse_topic_definition("100: utf-8=E\n100: charset=E\n"))
    assert not encoding.classify(document).relevant
