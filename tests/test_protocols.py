"""The narrow interfaces the crawl's parts are typed against, and the backends that must satisfy them.

Each consumer names the interface it needs (the robots middleware a ``RobotsCache``, the console a
``RecordListing``...), so a backend that lacks a method of it breaks the crawl only where that consumer runs.
mypy --strict checks this module (pyproject.toml lists it): the typed lists below fail scripts/lint.sh when a
backend does not satisfy an interface in its signatures; the tests fail when one lacks a method outright.
"""

from __future__ import annotations

import inspect
from functools import cached_property
from typing import Any, Generic, Protocol

import pytest

from combine_scrapy.access.addresses import AddressesOfJob
from combine_scrapy.frontier import (
    Frontier,
    FrontierOperations,
    LinkGraph,
    LockIntervalsOfJob,
    RevisitHistory,
    RobotsCache,
    UrlQueue,
)
from combine_scrapy.frontier.redis import RedisFrontier
from combine_scrapy.frontier.redis.connection import JobMarker, RedisConnection
from combine_scrapy.frontier.redis.links import RedisLinkGraph
from combine_scrapy.frontier.redis.operations import RedisOperations
from combine_scrapy.frontier.redis.queue import RedisQueue
from combine_scrapy.frontier.redis.revisit import RedisRevisitHistory
from combine_scrapy.frontier.redis.robots import RedisRobotsCache
from combine_scrapy.frontier.redis.sharing import HarvesterShare
from combine_scrapy.frontier.sqlite import SqliteFrontier
from combine_scrapy.frontier.sqlite.connection import SqliteConnection
from combine_scrapy.frontier.sqlite.heads import HeadCache
from combine_scrapy.frontier.sqlite.links import SqliteLinkGraph
from combine_scrapy.frontier.sqlite.operations import SqliteOperations
from combine_scrapy.frontier.sqlite.queue import SqliteQueue
from combine_scrapy.frontier.sqlite.revisit import SqliteRevisitHistory
from combine_scrapy.frontier.sqlite.robots import SqliteRobotsCache
from combine_scrapy.job import Job, LockIntervals
from combine_scrapy.records.store import (
    RecordListings,
    RecordMaintenance,
    RecordReader,
    RecordSearch,
    RecordStore,
    RecordWriter,
)
from combine_scrapy.records.store.listing import RecordListing, SqlRecordListing
from combine_scrapy.records.store.mysql import MysqlRecordStore
from combine_scrapy.records.store.sql import SqlRecordStore
from combine_scrapy.records.store.sql.listings import SqlRecordListings
from combine_scrapy.records.store.sql.maintenance import SqlRecordMaintenance
from combine_scrapy.records.store.sql.reader import SqlRecordReader
from combine_scrapy.records.store.sql.search import SqlRecordSearch
from combine_scrapy.records.store.sql.tables import SqlTables
from combine_scrapy.records.store.sql.writer import SqlRecordWriter
from combine_scrapy.records.store.sqlite import SqliteRecordStore

#: Checked by mypy: each backend as every interface it stands for (Frontier and RecordStore join all of theirs).
FRONTIERS: list[type[Frontier]] = [SqliteFrontier, RedisFrontier]
RECORD_STORES: list[type[RecordStore]] = [SqliteRecordStore, MysqlRecordStore]
LISTINGS: list[type[RecordListing]] = [SqlRecordListing]
JOBS: list[type[AddressesOfJob]] = [Job]
LOCK_INTERVALS: list[type[LockIntervalsOfJob]] = [LockIntervals]

FRONTIER_INTERFACES = [UrlQueue, RobotsCache, LinkGraph, RevisitHistory, FrontierOperations]
#: Checked by mypy: the Redis frontier's parts (over one RedisConnection), each as the interface it stands for, in
#: the order of FRONTIER_INTERFACES; RedisFrontier is all of them.
REDIS_PARTS: tuple[type[UrlQueue], type[RobotsCache], type[LinkGraph], type[RevisitHistory], type[FrontierOperations]] = (
    RedisQueue, RedisRobotsCache, RedisLinkGraph, RedisRevisitHistory, RedisOperations,
)
#: The same of the SQLite frontier's parts (over one SqliteConnection); SqliteFrontier is all of them.
SQLITE_PARTS: tuple[type[UrlQueue], type[RobotsCache], type[LinkGraph], type[RevisitHistory], type[FrontierOperations]] = (
    SqliteQueue, SqliteRobotsCache, SqliteLinkGraph, SqliteRevisitHistory, SqliteOperations,
)
STORE_INTERFACES = [RecordWriter, RecordReader, RecordSearch, RecordMaintenance, RecordListings]
#: Checked by mypy: the SQL record store's parts (over its SqlTables), each as the interface it stands for, in the
#: order of STORE_INTERFACES; SqlRecordStore (and each backend) is all of them.
SQL_STORE_PARTS: tuple[type[RecordWriter], type[RecordReader], type[RecordSearch], type[RecordMaintenance],
                       type[RecordListings]] = (
    SqlRecordWriter, SqlRecordReader, SqlRecordSearch, SqlRecordMaintenance, SqlRecordListings,
)


def members(protocol: type[Any], attributes: bool = True) -> set[str]:
    """The public methods and properties a protocol declares, its base protocols' too, and with ``attributes`` its
    data attributes (which a backend sets on its instances, so only mypy sees them on the class)."""
    names: set[str] = set()
    for cls in protocol.__mro__:
        if cls in (object, Protocol, Generic) or not getattr(cls, "_is_protocol", False):
            continue
        names.update(name for name in vars(cls) if not name.startswith("_"))
        if attributes:
            names.update(name for name in vars(cls).get("__annotations__", {}) if not name.startswith("_"))
    return names


def _callable(member: Any) -> Any:
    """A method as it is, a property as its getter."""
    return member.fget if isinstance(member, property) else member


def test_the_joined_interfaces_are_their_parts() -> None:
    """A consumer typed against a part asks nothing the whole lacks, and the whole adds only close()."""
    assert set().union(*map(members, FRONTIER_INTERFACES)) == members(Frontier)
    assert set().union(*map(members, STORE_INTERFACES)) | {"close"} == members(RecordStore)
    assert {"listing"} == members(RecordListings)


@pytest.mark.parametrize(
    ("backend", "interfaces"),
    [*((frontier, FRONTIER_INTERFACES) for frontier in FRONTIERS),
     *((store, [*STORE_INTERFACES, RecordStore]) for store in RECORD_STORES),
     (SqlRecordListing, [RecordListing])],
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_each_backend_has_every_method_of_its_interfaces(backend: type[Any], interfaces: list[type[Any]]) -> None:
    for interface in interfaces:
        missing = sorted(name for name in members(interface, attributes=False) if not hasattr(backend, name))
        assert not missing, f"{backend.__name__} lacks {interface.__name__}'s {', '.join(missing)}"


@pytest.mark.parametrize(
    ("part", "interface"),
    [*zip(REDIS_PARTS, FRONTIER_INTERFACES), *zip(SQLITE_PARTS, FRONTIER_INTERFACES), *zip(SQL_STORE_PARTS, STORE_INTERFACES)],
    ids=[part.__name__ for part in (*REDIS_PARTS, *SQLITE_PARTS, *SQL_STORE_PARTS)],
)
def test_each_part_of_a_backend_has_its_interfaces_methods_as_declared(part: type[Any], interface: type[Any]) -> None:
    for name in members(interface, attributes=False):
        declared, found = (inspect.signature(_callable(getattr(cls, name))) for cls in (interface, part))
        assert list(found.parameters.values()) == list(declared.parameters.values()), f"{part.__name__}.{name}"
        assert found.return_annotation == declared.return_annotation, f"{part.__name__}.{name}"


def test_no_class_of_a_backend_has_more_than_fifteen_public_methods_of_its_own() -> None:
    for cls in (RedisConnection, JobMarker, HarvesterShare, RedisFrontier, *REDIS_PARTS,
                SqliteConnection, HeadCache, SqliteFrontier, *SQLITE_PARTS,
                SqlTables, SqlRecordStore, *SQL_STORE_PARTS, SqliteRecordStore, MysqlRecordStore):
        own = [name for name, value in vars(cls).items()
               if not name.startswith("_") and (callable(value) or isinstance(value, (property, cached_property)))]
        assert len(own) <= 15, f"{cls.__name__}: {own}"
