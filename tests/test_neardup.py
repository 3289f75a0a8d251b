"""Simhash fingerprints: close for pages that differ in a date or an advert, far for different pages."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from combine_scrapy.document import neardup

WORDS = (
    "sundew pitcher flytrap bog peat moss rain water leaf gland insect prey enzyme root seed flower stalk pot "
    "window winter summer spring light humid tropical highland lowland species grower nursery tray cutting"
).split()


def text(seed: int, words: int = 400) -> str:
    chooser = random.Random(seed)
    return " ".join(chooser.choice(WORDS) for _ in range(words))


def test_digits_are_folded_so_a_changed_date_changes_no_shingle():
    body = text(1)
    assert neardup.simhash(f"Updated 23.11.2026 {body}") == neardup.simhash(f"Updated 1.2.1999 {body}")
    assert neardup.words("Price 12 euros now") == ["price", "0", "euros", "now"]


def test_a_shingle_hash_depends_on_its_words_and_their_order():
    hashes = list(neardup.shingle_hashes("a b c x a b c c b a".split()))
    assert len(hashes) == 8
    assert hashes[0] == hashes[4]                           # "a b c" twice: one hash
    assert len({hashes[0], hashes[7]}) == 2                 # "a b c" and "c b a" differ
    assert len(set(hashes)) == 7


def test_a_small_change_moves_few_bits_and_another_page_many():
    """Simhash is a vote: a change decides only bits whose vote was close, so judge it over many pages."""
    near, far = [], []
    for seed in range(40):
        body = text(seed)
        fingerprint = neardup.simhash(body)
        near.append(neardup.distance(fingerprint, neardup.simhash(body + " buy cheap pots today")))
        near.append(neardup.distance(fingerprint, neardup.simhash(body.replace("sundew", "orchid", 1))))
        far.append(neardup.distance(fingerprint, neardup.simhash(text(seed + 1000))))
    assert sum(d <= neardup.DEFAULT_DISTANCE for d in near) >= 2 / 3 * len(near)
    assert max(near) <= neardup.MAX_DISTANCE + 2
    assert min(far) > 2 * neardup.MAX_DISTANCE


def test_short_texts_get_no_fingerprint():
    assert neardup.simhash("Page not found") is None
    assert neardup.simhash(" ".join(["word"] * (neardup.MIN_WORDS - 1))) is None
    assert neardup.simhash(" ".join(["word"] * neardup.MIN_WORDS)) is not None


def test_main_content_is_fingerprinted_when_it_has_enough_words():
    main, page = text(4, 100), text(5, 50) + " " + text(4, 100)
    assert neardup.page_fingerprint(page, main) == neardup.simhash(main)
    assert neardup.page_fingerprint(page, "too short") == neardup.simhash(page)
    assert neardup.page_fingerprint(page, None) == neardup.simhash(page)


def test_distance_and_bands():
    assert neardup.distance(0, 2**64 - 1) == 64
    assert neardup.distance(0b1011, 0b0001) == 2
    assert neardup.bands(0x0001_0002_0003_0004) == (4, 3, 2, 1)
    assert neardup.to_unsigned(neardup.to_signed(2**64 - 1)) == 2**64 - 1
    assert neardup.to_signed(2**63) == -(2**63)


@pytest.mark.parametrize("distance", range(neardup.MAX_DISTANCE + 1))
def test_probes_find_every_fingerprint_within_max_distance(distance):
    """Pigeonhole: flip ``distance`` bits anywhere, some band still shows one of the probed values."""
    chooser = random.Random(distance)
    for _ in range(200):
        fingerprint = chooser.getrandbits(64)
        other = fingerprint
        for bit in chooser.sample(range(64), distance):
            other ^= 1 << bit
        probes = neardup.probes(fingerprint)
        assert any(band in values for band, values in zip(neardup.bands(other), probes))


# Fingerprints computed before simhash was made faster: stored fingerprints must stay comparable.
STORED_FINGERPRINTS = {
    "http://h0000.web.test/": 3091714882742267832,
    "http://h0000.web.test/articles/160.html": 4251392065963036474,
    "http://h0000.web.test/guides/320.html": 4233382444531773353,
    "http://h0001.web.test/news/51.html": 13459181766262967450,
    "http://h0005.web.test/news/39.html": 4243510590521307068,
    "http://h0005.web.test/archive/199.html": 4197346915150770104,
    "http://h0005.web.test/private/359.html": 4231099857452183465,
    "http://h0005.web.test/private/519.html": 4318950687128170393,
    "http://h0007.web.test/news/27.html": 4323447702569398200,
    "http://h0009.web.test/archive/36.html": 17004734191393070802,
    "http://h0012.web.test/articles/68.html": 11163322669984766037,
    "http://h0016.web.test/guides/10.html": 14416463074745452181,
    "http://h0017.web.test/articles/48.html": 13468188965517708442,
    "http://h0019.web.test/guides/29.html": 15772891034926242897,
    "http://h0021.web.test/docs/20.html": 4246871115741310904,
    "http://h0022.web.test/docs/124.html": 13757932902374759938,
    "http://h0022.web.test/docs/284.html": 13469667892750765579,
    "http://h0022.web.test/guides/444.html": 1454064086857076267,
    "http://h0027.web.test/news/44.html": 4251178899220811720,
    "http://h0028.web.test/guides/156.html": 4228874309552107448,
    "http://h0030.web.test/articles/2.html": 2210704283503185498,
    "http://h0034.web.test/guides/13.html": 10565628189383190647,
    "http://h0036.web.test/articles/44.html": 10588111002082605137,
    "http://h0036.web.test/news/204.html": 11141941537410767989,
    "http://h0036.web.test/news/364.html": 11142469327982258243,
}
STORED_TEXT_FINGERPRINTS = {
    "accents": (" ".join(["Größe der Kannenpflanze", "İstanbul", "ΣΊΣΥΦΟΣ", "café", "ﬁne"] * 6), 2461939429557960704),
    "digits": (" ".join(["Updated ١٢.٣.٢٠٢٦", "price 12,50", "x٣y", "room 101b", "v2"] * 6), 15685335966147630007),
    "cjk": ("東京都 の 食虫植物 モウセンゴケ " * 8, 12481429585356205877),
    "repeated": ("sundew " * 40, 2532262485760763890),
}


def test_fingerprints_of_sample_pages_are_those_stored_before():
    from bench.virtualweb import VirtualWeb
    from combine_scrapy.document.parse import parse_document

    web = VirtualWeb(2, 40, 4000)
    found = {}
    for number in range(0, 4000, 160):
        page = parse_document(web.url(number), web.render(number), {"content-type": "text/html; charset=utf-8"})
        found[web.url(number)] = neardup.page_fingerprint(page.text, page.main_text)
    assert found == STORED_FINGERPRINTS
    for name, (sample, fingerprint) in STORED_TEXT_FINGERPRINTS.items():
        assert neardup.simhash(sample) == fingerprint, name


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200))
def test_ascii_words_are_those_the_regular_expression_finds(sample):
    assert neardup.words(sample) == [neardup._DIGITS.sub("0", word) for word in neardup._WORD.findall(sample.lower())]
