"""When to revisit a page: a Poisson change model, for the freshness and age of the stored copy.

Pages change as a Poisson process of rate λ. From ``visits`` fetches spaced
``mean_interval`` apart, of which ``changes`` found the page changed, the
bias-reduced estimator of Cho and Garcia-Molina gives
λ = -ln((n - X + 0.5) / (n + 0.5)) / I. The expected age of our copy t
seconds after a fetch is Age(λ, t) = t - (1 - e^(-λt)) / λ; the next visit is
when that age reaches the job's ``max_age``, within [shortest, longest].
"""

from __future__ import annotations

import math


def change_rate(visits: int, changes: int, mean_interval: float) -> float:
    """Estimated changes per second; 0 when nothing is known yet."""
    if visits <= 0 or mean_interval <= 0:
        return 0.0
    changes = min(max(changes, 0), visits)
    return -math.log((visits - changes + 0.5) / (visits + 0.5)) / mean_interval


def expected_age(rate: float, elapsed: float) -> float:
    """Age(λ, t): how stale, on average, a copy is ``elapsed`` seconds after it was fetched."""
    if rate <= 0:
        return 0.0
    return elapsed - (1 - math.exp(-rate * elapsed)) / rate


def revisit_interval(rate: float, max_age: float, shortest: float, longest: float) -> float:
    """Seconds until the expected age reaches ``max_age``, bounded to [shortest, longest]."""
    if rate <= 0 or expected_age(rate, longest) <= max_age:
        return longest
    low, high = shortest, longest
    if expected_age(rate, low) >= max_age:
        return shortest
    for _ in range(60):  # Age grows with t: bisect
        middle = (low + high) / 2
        if expected_age(rate, middle) < max_age:
            low = middle
        else:
            high = middle
    return high
