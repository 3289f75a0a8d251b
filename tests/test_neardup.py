"""Simhash fingerprints: close for pages that differ in a date or an advert, far for different pages."""

from __future__ import annotations

import random

import pytest

from combine_scrapy import neardup

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
