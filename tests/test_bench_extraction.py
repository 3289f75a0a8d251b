"""bench.extraction: the shipped data sets load whole, and the Zyte benchmark's shingle measure is the one it defines."""

from __future__ import annotations

import pytest

from bench.extraction import SETS, load_set, page_counts, scores


def test_the_data_sets_ship_whole_with_their_licences():
    from bench.extraction import DATA

    sizes = {name: len(load_set(name)) for name in SETS}
    assert sizes == {"zyte": 181, "readability": 94}
    for name in SETS:
        assert (DATA / name / "LICENSE").read_text().strip()
        assert "Licence" in (DATA / name / "README.md").read_text()


def test_page_counts_are_shingle_multisets_normalized_per_page():
    assert page_counts("a b c d e", "a b c d e") == (1.0, 0.0, 0.0)
    assert page_counts("a b c d", "w x y z") == (0.0, 0.5, 0.5)
    # truth shingles: (a b c d), (b c d e); predicted: (a b c d), (b c d x): one of each kind, a third each
    assert page_counts("a b c d e", "a b c d x") == pytest.approx((1 / 3, 1 / 3, 1 / 3))
    assert page_counts("a, b!", "a b") == (1.0, 0.0, 0.0)  # \w+ tokens: punctuation and spacing do not count
    assert page_counts("", "") == (0.0, 0.0, 0.0)


def test_scores_average_precision_and_recall_over_pages_then_take_f1():
    perfect, half = (1.0, 0.0, 0.0), page_counts("a b c d e f g", "a b c d")  # recall 1/4, precision 1
    result = scores([perfect, half])
    assert result["precision"] == 1.0 and result["recall"] == 0.625
    assert result["f1"] == round(2 * 0.625 / 1.625, 3)
    # A page whose truth and prediction are both empty counts for neither mean.
    assert scores([perfect, (0.0, 0.0, 0.0)]) == {"f1": 1.0, "precision": 1.0, "recall": 1.0}
