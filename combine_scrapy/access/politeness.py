"""When a host may be asked again: WaitIntervalHost, stretched for hosts that are slow or overloaded.

Pure code, times passed in. The frontier keeps the host locks between
fetches; :class:`HostPace` is one harvester's memory of its own requests, so
that a request the frontier did not hand out (a followed redirect's next hop,
a robots.txt) waits its host's turn too, and so that a host that struggles
gets more time (adaptive politeness, as Heritrix's delay factor and
StormCrawler's back-off do):

- a 429 or 503 answer doubles the host's back-off (from twice its interval,
  at least :data:`MIN_BACKOFF`, at most :data:`MAX_BACKOFF`); each answer that
  is not an overload halves it again, down to nothing;
- a host whose last answer took :data:`SLOW_ANSWER` seconds or more (time to
  the answer's headers) waits at least :data:`LATENCY_FACTOR` times that, so a
  server that slows down is asked less often;
- a ``Retry-After`` on a 429 or 503 holds the host until then
  (:func:`parse_retry_after`, at most :data:`MAX_RETRY_AFTER`).

The interval never falls below WaitIntervalHost or the host's robots.txt Crawl-delay.
"""

from __future__ import annotations

import email.utils
import math
from dataclasses import dataclass

#: Answers that say "too many requests" or "overloaded, come back later".
OVERLOAD_STATUSES = (429, 503)
#: Seconds a Retry-After may hold a host at most; a longer one is cut to this.
MAX_RETRY_AFTER = 86_400.0
#: A host's interval is at least this many times its last response time (Heritrix's delayFactor) ...
LATENCY_FACTOR = 5.0
#: ... once that response time reaches this many seconds (quicker answers say nothing of load).
SLOW_ANSWER = 1.0
#: Back-off after the first overload answer, at least (seconds), and at most after many.
MIN_BACKOFF = 1.0
MAX_BACKOFF = 600.0
#: The interval the frontier is told about changes only when it moves by this fraction (fewer writes).
REPORT_STEP = 0.25
#: Hosts remembered before the idle ones (turn passed, nothing special) are forgotten.
MAX_HOSTS = 10_000


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds a ``Retry-After`` header asks for (delta-seconds or an HTTP date), at most a day.

    None when absent or nonsense (``soon``, ``-5``, ``1e999``); a date in the past gives 0.
    """
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        seconds = float(text)
    else:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when is None or when.tzinfo is None:
            return None
        seconds = when.timestamp() - now
    if not math.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


@dataclass
class _Host:
    last: float = 0.0            # the last request sent or answer received (or reserved to be sent)
    hold_until: float = 0.0      # Retry-After
    backoff: float = 0.0         # overload back-off, 0 when none
    latency: float = 0.0         # last time to an answer's headers
    crawl_delay: float = 0.0     # robots.txt Crawl-delay
    reported: float | None = None  # the delay last given to the frontier


@dataclass(frozen=True)
class Answer:
    """What one answer changed for its host."""

    interval: float              # the host's interval now
    overloaded: bool = False     # a 429/503
    retry_after: float | None = None  # seconds the host is held, when it said so
    report: bool = False         # the delay the frontier keeps for the host should be updated


class HostPace:
    """Each host's next turn, as this harvester knows it: ``base`` seconds (WaitIntervalHost) or more."""

    def __init__(self, base: float):
        self.base = base
        self._hosts: dict[str, _Host] = {}

    def _host(self, host: str) -> _Host:
        state = self._hosts.get(host)
        if state is None:
            if len(self._hosts) >= MAX_HOSTS:
                self._forget_idle()
            state = self._hosts[host] = _Host()
        return state

    def _forget_idle(self) -> None:
        keep = {host: state for host, state in self._hosts.items() if state.backoff or state.reported}
        self._hosts = keep if len(keep) < MAX_HOSTS else {}

    def interval(self, host: str) -> float:
        """Seconds between two requests to ``host`` now."""
        state = self._hosts.get(host)
        if state is None:
            return self.base
        slow = LATENCY_FACTOR * state.latency if state.latency >= SLOW_ANSWER else 0.0
        return max(self.base, state.crawl_delay, state.backoff, slow)

    def delay(self, host: str) -> float | None:
        """The host's own interval when longer than ``base``, for the frontier's host delay; None otherwise."""
        interval = self.interval(host)
        return interval if interval > self.base else None

    def next_turn(self, host: str) -> float:
        """The earliest time ``host`` may be asked again."""
        state = self._hosts.get(host)
        if state is None:
            return 0.0
        return max(state.last + self.interval(host) if state.last else 0.0, state.hold_until)

    def reserve(self, host: str, now: float, latest: float | None = None) -> float:
        """Take the host's next turn (not before ``now``, not after ``latest``) for a request, and return it."""
        turn = max(now, self.next_turn(host))
        if latest is not None:
            turn = min(turn, latest)
        self._host(host).last = turn
        return turn

    def set_crawl_delay(self, host: str, delay: float | None) -> float | None:
        """Note the host's robots.txt Crawl-delay; returns the delay the frontier should now keep for it."""
        state = self._host(host)
        state.crawl_delay = delay or 0.0
        state.reported = self.delay(host)
        return state.reported

    def answered(self, host: str, now: float, status: int | None, latency: float | None = None,
                 retry_after: float | None = None) -> Answer:
        """Note an answer (``status`` None: none came): the host's turn counts from now, its interval adapts."""
        state = self._host(host)
        state.last = max(state.last, now)
        overloaded = status in OVERLOAD_STATUSES
        if overloaded:
            state.backoff = min(MAX_BACKOFF, max(2 * state.backoff, 2 * self.base, MIN_BACKOFF))
            if retry_after is not None:
                state.hold_until = max(state.hold_until, now + retry_after)
        elif status is not None:
            state.backoff = state.backoff / 2 if state.backoff / 2 > self.base else 0.0
        if latency is not None and status is not None:
            state.latency = latency
        delay = self.delay(host)
        previous = state.reported
        report = (delay is None) != (previous is None) or (
            delay is not None and previous is not None and abs(delay - previous) > REPORT_STEP * previous
        )
        if report:
            state.reported = delay
        return Answer(self.interval(host), overloaded, retry_after if overloaded else None, report)
