"""The Redis frontier's revisit history: how often each page was fetched and changed."""

from __future__ import annotations

from combine_scrapy.access.urls import host_of
from combine_scrapy.frontier.redis.connection import RedisPart, number, read_records, text


class RedisRevisitHistory(RedisPart):
    """Each page's visits and changes, kept in its URL's record (``RevisitHistory``)."""

    def change_history(self, url: str) -> tuple[int, int, float | None, str | None]:
        """``(visits, changes, first visit, last content digest)`` of a page, for its revisit interval."""
        (record,) = read_records(self.connection, [url])
        if not record:
            return 0, 0, None, None
        _, _, visits, changes, first_visit, digest = record
        return int(visits), int(changes), None if first_visit is None else float(first_visit), text(digest)

    def record_visit(self, url: str, now: float, digest: str | None, changed: bool) -> None:
        """Count a fetch that gave the page (``digest`` None for a 304: unchanged)."""
        host = host_of(url)
        self.connection.run(host, "record_visit", url, host, number(now), int(changed), digest or "")
