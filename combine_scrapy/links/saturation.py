"""When a crawl has run dry: how many fetches since the last new relevant record, and the recent rate of them.

A fetch counts as new when its page was relevant and made a new record (a
duplicate of a stored record does not). ``StopWhenSaturated = N`` ends a
crawl once N fetches in a row found nothing new and the link model, asked
about the best N links waiting in the frontier, expects less than one new
relevant page from them all. Pure code: no Scrapy.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

#: The finish reason of a crawl ended by StopWhenSaturated.
SATURATED = "saturated"
#: Fetches over which the recent rate of new relevant records is taken.
RECENT_FETCHES = 500
#: With the dry run long enough, the link model is asked again every this share of N fetches, not every fetch
#: (its answer costs a prediction over every waiting link).
ASK_EVERY_SHARE = 0.1


class NoveltyWatch:
    """The crawl's recent yield of new relevant records, and whether it is saturated."""

    def __init__(self, stop_after: int = 0, window: int = RECENT_FETCHES) -> None:
        self.stop_after = stop_after
        self.recent: deque[bool] = deque(maxlen=window)
        self.since_new = 0
        self.expected: float | None = None  # what the model expected when last asked, for the summary

    def add(self, new_relevant: bool) -> None:
        self.recent.append(new_relevant)
        self.since_new = 0 if new_relevant else self.since_new + 1

    @property
    def recent_rate(self) -> float:
        """New relevant records per fetch over the last RECENT_FETCHES fetches."""
        return sum(self.recent) / len(self.recent) if self.recent else 0.0

    def saturated(self, expected_new: Callable[[int], float | None]) -> bool:
        """Whether ``stop_after`` fetches in a row found nothing new and ``expected_new(n)``, the new relevant
        pages the model expects from the best ``n`` waiting links (None: it has not learned enough to say),
        is under one."""
        limit = self.stop_after
        if not limit or self.since_new < limit:
            return False
        if (self.since_new - limit) % max(1, int(limit * ASK_EVERY_SHARE)):
            return False
        self.expected = expected_new(limit)
        return self.expected is None or self.expected < 1.0

    def reason(self) -> str:
        model = ("the link model has not learned enough to expect anything" if self.expected is None
                 else f"the link model expects {self.expected:.2f} from the best {self.stop_after} waiting links")
        return f"{self.since_new} fetches in a row gave no new relevant record and {model}"
