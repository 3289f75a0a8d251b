"""The Redis frontier's robots.txt cache: each host's answer, kept until it expires, for every harvester of the job."""

from __future__ import annotations

from typing import Any, cast

from combine_scrapy.frontier.redis.connection import RedisPart, number


class RedisRobotsCache(RedisPart):
    """Each host's robots.txt answer in ``robots:<host>`` (``RobotsCache``)."""

    def robots(self, host: str, now: float) -> tuple[int | None, bytes | None] | None:
        """The cached robots.txt answer ``(status, body)`` for a host, or None when absent or expired."""
        key = self.connection.key("robots", host)
        # The client returns bytes (RedisConnection refuses decode_responses); redis's types cannot tell. An
        # answer this harvester stored and has not sent yet goes first, in the same round trip.
        expires, status, body = cast("list[bytes | None]", self.connection.run_scripts(
            [], also=lambda pipe: pipe.hmget(key, "expires", "status", "body"))[0])
        if expires is None or float(expires) <= now:
            return None
        return (None if status is None else int(status)), body

    def store_robots(self, host: str, status: int | None, body: bytes | None, expires: float, *,
                     host_delay: float | None) -> None:
        """Keep a host's robots.txt answer until ``expires``, and the host's delay in its bucket.

        On a single Redis that is one script, sent with the harvester's next call (the release of the page the
        robots.txt was read for follows at once): a harvester killed before it loses only the answer, read
        again by the next. On a cluster, where the two are in different slots, a transaction then the
        delay's script.
        """
        connection, key = self.connection, self.connection.key("robots", host)
        delay = "" if host_delay is None else number(host_delay)
        if connection.single_node:
            args: list[Any] = [host, delay, number(expires), "" if status is None else status]
            connection.defer("store_robots", [connection.prefix_of(host), key], args if body is None else [*args, body])
            return
        fields = {"expires": number(expires), "status": status, "body": body}
        with connection.server.pipeline(transaction=True) as pipe:
            pipe.delete(key)
            pipe.hset(key, mapping={k: v for k, v in fields.items() if v is not None})
            pipe.execute()
        connection.run(host, "host_delay", host, delay)
