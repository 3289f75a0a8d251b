"""The Redis frontier's robots.txt cache: each host's answer, kept until it expires, for every harvester of the job."""

from __future__ import annotations

from typing import cast

from combine_scrapy.frontier.redis.connection import RedisPart, number


class RedisRobotsCache(RedisPart):
    """Each host's robots.txt answer in ``robots:<host>`` (``RobotsCache``)."""

    def robots(self, host: str, now: float) -> tuple[int | None, bytes | None] | None:
        """The cached robots.txt answer ``(status, body)`` for a host, or None when absent or expired."""
        # The client returns bytes (RedisConnection refuses decode_responses); redis's types cannot tell.
        expires, status, body = cast("list[bytes | None]", self.connection.server.hmget(
            self.connection.key("robots", host), "expires", "status", "body"))
        if expires is None or float(expires) <= now:
            return None
        return (None if status is None else int(status)), body

    def store_robots(self, host: str, status: int | None, body: bytes | None, expires: float) -> None:
        fields = {"expires": number(expires), "status": status, "body": body}
        with self.connection.server.pipeline(transaction=True) as pipe:
            pipe.delete(self.connection.key("robots", host))
            pipe.hset(self.connection.key("robots", host), mapping={k: v for k, v in fields.items() if v is not None})
            pipe.execute()
