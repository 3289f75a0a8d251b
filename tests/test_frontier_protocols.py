"""Each part of the Redis frontier satisfies the narrow interface it stands for, and RedisFrontier the whole.

mypy strict checks this module (pyproject.toml): the annotated assignments in
``redis_parts`` fail the lint when a part's methods stop matching their
protocol. The tests check the same at run time, signature by signature, so a
run of the suite without the lint catches it too. No Redis is reached: making
the parts only registers the scripts with the client.
"""

from __future__ import annotations

import inspect
from functools import cached_property

import pytest
import redis

from combine_scrapy.frontier import Frontier, FrontierOperations, LinkGraph, RevisitHistory, RobotsCache, UrlQueue
from combine_scrapy.frontier.redis import RedisFrontier
from combine_scrapy.frontier.redis.connection import JobMarker, RedisConnection
from combine_scrapy.frontier.redis.links import RedisLinkGraph
from combine_scrapy.frontier.redis.operations import RedisOperations
from combine_scrapy.frontier.redis.queue import RedisQueue
from combine_scrapy.frontier.redis.revisit import RedisRevisitHistory
from combine_scrapy.frontier.redis.robots import RedisRobotsCache

PARTS: list[tuple[type, type]] = [
    (UrlQueue, RedisQueue),
    (RobotsCache, RedisRobotsCache),
    (LinkGraph, RedisLinkGraph),
    (RevisitHistory, RedisRevisitHistory),
    (FrontierOperations, RedisOperations),
    (Frontier, RedisFrontier),
]


def redis_parts(
    server: redis.Redis,
) -> tuple[UrlQueue, RobotsCache, LinkGraph, RevisitHistory, FrontierOperations, Frontier]:
    """One of each part over one connection, each typed as its protocol (what mypy checks)."""
    connection = RedisConnection(server, "protocols")
    queue: UrlQueue = RedisQueue(connection)
    robots: RobotsCache = RedisRobotsCache(connection)
    links: LinkGraph = RedisLinkGraph(connection)
    revisits: RevisitHistory = RedisRevisitHistory(connection)
    operations: FrontierOperations = RedisOperations(connection)
    frontier: Frontier = RedisFrontier(server, "protocols")
    return queue, robots, links, revisits, operations, frontier


def members(protocol: type) -> list[str]:
    """The methods a protocol declares, its bases' included."""
    return sorted({name for cls in protocol.__mro__ if cls not in (object,) and getattr(cls, "_is_protocol", False)
                   for name, value in vars(cls).items() if inspect.isfunction(value) and not name.startswith("_")})


@pytest.mark.parametrize(("protocol", "part"), PARTS, ids=[protocol.__name__ for protocol, _ in PARTS])
def test_each_redis_part_has_its_protocols_methods_with_the_same_signatures(protocol: type, part: type) -> None:
    declared = members(protocol)
    assert declared  # the protocol is read
    for name in declared:
        wanted, found = inspect.signature(getattr(protocol, name)), inspect.signature(getattr(part, name))
        assert list(found.parameters.values()) == list(wanted.parameters.values()), (part.__name__, name)
        assert found.return_annotation == wanted.return_annotation, (part.__name__, name)


def test_the_redis_parts_are_each_within_fifteen_public_methods_and_make_a_frontier() -> None:
    for part in (RedisConnection, JobMarker, *(part for _, part in PARTS)):
        own = [name for name, value in vars(part).items()
               if not name.startswith("_") and (callable(value) or isinstance(value, (property, cached_property)))]
        assert len(own) <= 15, (part.__name__, own)
    *_, frontier = redis_parts(redis.Redis())  # the client connects at its first command: none is sent
    assert isinstance(frontier, RedisFrontier) and frontier.prefix == "combine:{protocols}:"
