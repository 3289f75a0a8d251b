"""Each harvester says what it is doing, for the console: alive, paused, and the URLs it is fetching.

A harvester writes ``data/<job>/harvesters/<pid>.json`` beside its pid file
every COMBINE_BEACON_INTERVAL seconds; on a shared (Redis) frontier it also
sets ``combine:{job}:harvester:<machine>:<pid>``, which expires three
intervals after the last write, so a console on any machine sees every
harvester and forgets a dead one by itself. The extension that writes them is
:class:`combine_scrapy.extensions.beacon.HarvesterBeacon`; the console reads them.
"""

from __future__ import annotations

#: Intervals a Redis beacon outlives its last write.
REDIS_LIFETIMES = 3
#: URLs in flight reported at most.
FETCHING_SHOWN = 50


def beacon_key(prefix: str, machine: str, pid: int | str) -> str:
    """The Redis key of a harvester's beacon (``*`` for either part: the pattern that finds them all)."""
    return f"{prefix}harvester:{machine}:{pid}"
