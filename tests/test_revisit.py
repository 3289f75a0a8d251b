"""The Poisson revisit policy: change-rate estimate, expected age, adaptive interval."""

from __future__ import annotations

import math

import pytest

from combine_scrapy.frontier.revisit import change_rate, expected_age, revisit_interval

DAY = 86_400


def test_change_rate_estimate():
    assert change_rate(0, 0, DAY) == 0
    assert change_rate(10, 0, DAY) == pytest.approx(-math.log(10.5 / 10.5) / DAY) == 0
    assert change_rate(10, 5, DAY) == pytest.approx(-math.log(5.5 / 10.5) / DAY)
    assert change_rate(10, 10, DAY) == pytest.approx(math.log(21) / DAY)   # finite even when every visit saw a change
    assert change_rate(10, 2, DAY) < change_rate(10, 8, DAY)


def test_expected_age_matches_the_integral():
    rate, t = 1 / 7, 3.0   # one change a week, three days after the fetch
    steps = 100_000
    integral = sum(rate * math.exp(-rate * x) * (t - x) * (t / steps) for x in ((i + 0.5) * t / steps for i in range(steps)))
    assert expected_age(rate, t) == pytest.approx(integral, rel=1e-6)
    assert expected_age(0, t) == 0


def test_pages_that_change_often_are_revisited_sooner():
    frequent = revisit_interval(change_rate(10, 9, DAY), max_age=3600, shortest=60, longest=30 * DAY)
    rare = revisit_interval(change_rate(10, 1, DAY), max_age=3600, shortest=60, longest=30 * DAY)
    never = revisit_interval(change_rate(10, 0, DAY), max_age=3600, shortest=60, longest=30 * DAY)
    assert 60 <= frequent < rare < never == 30 * DAY
    assert expected_age(change_rate(10, 9, DAY), frequent) == pytest.approx(3600, rel=1e-3)


def test_interval_is_bounded():
    assert revisit_interval(1.0, max_age=1, shortest=60, longest=DAY) == 60
    assert revisit_interval(1e-9, max_age=3600, shortest=60, longest=DAY) == DAY
