"""The record stores, one suite run on SQLite and on the real MariaDB: one record per content,
all its URLs, deletion with the last URL, schema upgrades, near-duplicates, search, and
(MariaDB) a connection killed in the middle of a transaction."""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
import zlib

import MySQLdb
import pytest
from tcpproxy import TcpProxy

from combine_scrapy.document import neardup
from combine_scrapy.records.record import Record, RecordLink, TopicClass, content_key
from combine_scrapy.records.store import Deletion, Stored, open_store
from combine_scrapy.records.store.mysql import (
    TABLES,
    MysqlRecordStore,
    MysqlUnavailable,
    connection_arguments,
    table_prefix,
)
from combine_scrapy.records.store.sql.tables import SCHEMA_VERSION, compress, compress_document, inflate_document, url_hash
from combine_scrapy.records.store.sqlite import SqliteRecordStore

MYSQL_URL = "mysql://root@127.0.0.1:3306/test"
ARTICLE = (
    "Sundews catch insects with sticky glands on their leaves. The glands glisten like dew and lure flies, "
    "which stick to the mucilage; the tentacles then bend over the prey and enzymes digest it over days. "
    "Drosera capensis is the easiest species to grow on a sunny windowsill, in a pot of peat and sand kept "
    "standing in rain water. Feed it a fly now and then in spring, let it rest cooler in winter, and it "
    "flowers every summer with small pink blooms on long stalks, setting seed that sprouts readily. "
)


def mysql_admin():
    return MySQLdb.connect(**{**connection_arguments(MYSQL_URL), "autocommit": True})


def drop_mysql_tables(prefix: str) -> None:
    """Drop this test's tables only (they all start with its own prefix)."""
    with mysql_admin() as db:
        cursor = db.cursor()
        cursor.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()")
        tables = [name for (name,) in cursor.fetchall() if name.startswith(prefix)]
        cursor.execute("SET FOREIGN_KEY_CHECKS = 0")
        for name in tables:
            cursor.execute(f"DROP TABLE `{name}`")


@pytest.fixture(params=["sqlite", pytest.param("mysql", marks=pytest.mark.services)])
def backend(request, tmp_path):
    """A factory of stores of one backend, all on the same records; each test has its own file or table prefix."""
    job = f"t{uuid.uuid4().hex[:12]}"
    opened = []

    def open_(cls=None):
        if request.param == "sqlite":
            store = (cls or SqliteRecordStore)(tmp_path / job / "records.sqlite")
        else:
            store = (cls or MysqlRecordStore).from_url(MYSQL_URL, job, reconnect_timeout=10)
        opened.append(store)
        return store

    open_.kind = request.param
    open_.job = job
    yield open_
    for store in opened:
        store.close()
    if request.param == "mysql":
        drop_mysql_tables(table_prefix(job))


@pytest.fixture
def store(backend):
    return backend()


def record(url, text="sundews catch insects", title="Sundews", **fields):
    values = dict(
        headings=["Drosera"], meta={"keywords": ["sundew"]}, links=[RecordLink("http://x/", "x", "a")],
        classes=[TopicClass("CP", 500.0, 12.5, ("sundews",))], terms=["sundews"], checked=1.0, score=500.0,
        fingerprint=neardup.simhash(text),
    )
    return Record(
        key=content_key(title, text, url, "text/html"), url=url, title=title, text=text, mime_type="text/html",
        **{**values, **fields},
    )


def test_content_key_ignores_whitespace_and_falls_back_to_url():
    assert content_key("T", "a b\n c", "http://x/", "text/html") == content_key("T", "abc", "http://y/", "text/html")
    assert content_key("T", "abc", "u", "m") == content_key("", "abcT", "u", "m")  # text then title, as Combine
    assert content_key("", "", "http://x/", "image/png") != content_key("", "", "http://y/", "image/png")
    assert content_key("", "", "u", "m").isupper()


def test_same_content_under_two_urls_is_one_record(store):
    assert store.store(record("http://a/1")) is Stored.NEW
    assert store.store(record("http://b/copy")) is Stored.KNOWN
    assert store.count() == 1
    assert store.urls(record("http://a/1").key) == ["http://a/1", "http://b/copy"]
    assert store.key_for_url("http://b/copy") == record("http://a/1").key


def test_record_round_trip_keeps_every_field(store):
    original = record(
        "http://a/1", text=ARTICLE + " Emoji 🪴 and 中文 survive.", title="Sundews 🌱",
        html="<html><body>Sundews 🌱 catch insects</body></html>", charset="utf-8", server="Apache",
        modified=1700000000.5, expires=1800000000.0, normalized=0.25, algorithm="plain",
        language="en", country="se", meta={"keywords": ["sundew", "drosera"], "author": ["Å. Nilsson"]},
    )
    original.links = [RecordLink(f"http://x/{i}", f"anchor {i}", "a") for i in range(5)] + [RecordLink("http://x/i.png", "", "img")]
    original.classes = [TopicClass("CP.Drosera", 300.0, 7.5, ("sundews", "drosera")), TopicClass("CP", 500.0, 12.5, ())]
    store.store(original)
    assert store.get(original.key) == original
    assert store.get("0" * 32) is None


def test_fingerprint_with_the_top_bit_set_round_trips(store):
    high = record("http://a/1", text=ARTICLE)
    high.fingerprint = 2**64 - 2
    store.store(high)
    assert store.get(high.key).fingerprint == 2**64 - 2


def test_record_deleted_only_with_its_last_url(store):
    store.store(record("http://a/1"))
    store.store(record("http://b/copy"))
    assert store.forget_url("http://a/1") is None
    assert store.count() == 1
    assert store.forget_url("http://b/copy") == record("http://a/1").key
    assert store.count() == 0
    assert store.forget_url("http://never/seen") is None


def test_changed_content_moves_the_url_and_drops_the_orphan(store):
    store.store(record("http://a/1", text="old text"))
    store.store(record("http://a/1", text="new text"))
    assert store.count() == 1
    assert [r.text for r in store] == ["new text"]


def test_iteration_reads_every_record_in_order(store):
    for i in range(1003):
        store.store(record(f"http://a/{i}", text=f"text {i}"))
    texts = [r.text for r in store]
    assert texts == [f"text {i}" for i in range(1003)]
    assert [r.links for r in store][-1] == [RecordLink("http://x/", "x", "a")]


def test_newer_schema_is_refused(backend):
    store = backend()
    store._write(lambda c: store._run(c, "INSERT INTO {p}schema_version (version, description, applied) VALUES (99, 'x', 0)"))
    with pytest.raises(RuntimeError, match="schema version 99 is newer"):
        backend()


def _insert_version_1_record(store, kind: str, item: Record) -> None:
    """Write ``item`` as the version 1 schema held it, by hand."""
    if kind == "sqlite":
        db = store._db
        db.execute(
            "INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (item.key, item.url, item.title, item.text, item.mime_type, '["Drosera"]', '{"keywords": ["sundew"]}',
             item.html, "", "", None, None, item.checked, item.score, 0.0, "", '["sundews"]', "en", None),
        )
        db.execute("INSERT INTO record_urls VALUES (?, ?, ?)", (item.url, item.key, item.checked))
        db.executemany("INSERT INTO links VALUES (?, ?, ?, ?)", [(item.key, link.url, link.anchor, link.kind) for link in item.links])
        db.execute("INSERT INTO topics VALUES (?, 'CP', 500.0, 12.5, '[\"sundews\"]')", (item.key,))
        db.execute("DROP TABLE schema_version")  # the first store kept its version here instead
        db.execute("PRAGMA user_version = 1")
        return

    def work(c):
        store._run(
            c,
            "INSERT INTO {p}records (`key`, url, title, text, mime_type, headings, meta, html, charset, server, "
            "checked, score, normalized, algorithm, terms, language) VALUES (?, ?, ?, ?, ?, ?, ?, ?, '', '', ?, ?, 0, '', ?, 'en')",
            (item.key, item.url, item.title, item.text, item.mime_type, '["Drosera"]', '{"keywords": ["sundew"]}',
             zlib.compress(item.html.encode()), item.checked, item.score, '["sundews"]'),
        )
        record_id = c.lastrowid
        store._run(
            c, "INSERT INTO {p}record_urls (url_hash, url, `key`, host, checked) VALUES (?, ?, ?, 'a', ?)",
            (url_hash(item.url), item.url, item.key, item.checked),
        )
        for position, link in enumerate(item.links):
            store._run(c, "INSERT INTO {p}links VALUES (?, ?, ?, ?, ?)", (record_id, position, link.url, link.anchor, link.kind))
        store._run(c, "INSERT INTO {p}topics VALUES (?, 0, 'CP', 500.0, 12.5, '[\"sundews\"]')", (record_id,))

    store._write(work)


def test_upgrade_from_version_1_keeps_records_and_fingerprints_and_indexes_them(backend):
    first = backend(type("FirstStore", (SqliteRecordStore if backend.kind == "sqlite" else MysqlRecordStore,), {"schema_version": 1}))
    assert first.schema() == 1
    old = record("http://a/1", text=ARTICLE, html="<p>Sundews</p>", language="en")
    old.links = [RecordLink("http://x/1", "one", "a"), RecordLink("http://x/2", "two", "a")]
    _insert_version_1_record(first, backend.kind, old)
    first.close()

    upgraded = backend()
    assert upgraded.schema() == SCHEMA_VERSION
    assert upgraded.get(old.key) == old  # fingerprint computed by the upgrade
    assert upgraded.urls(old.key) == ["http://a/1"]
    assert [hit.key for hit in upgraded.search("glands")] == [old.key]
    assert upgraded.near_duplicate(old.fingerprint ^ 0b101, 3) == (old.key, 2)
    assert upgraded.store(record("http://b/2", text=ARTICLE)) is Stored.KNOWN


def stored_text_column(store, key):
    return store._read(lambda c: store._one(c, "SELECT text FROM {p}records WHERE `key` = ?", (key,)))[0]


def test_upgrade_from_version_5_compresses_the_text_and_keeps_it_searchable(backend):
    fifth = backend(type("FifthStore", (SqliteRecordStore if backend.kind == "sqlite" else MysqlRecordStore,), {"schema_version": 5}))
    old = record("http://a/1", text=ARTICLE + " Ünïcode ✓", html="<p>Sundews</p>")
    fifth.store(old)
    fifth.store(record("http://a/2", text="Pitcher plants drown insects in fluid.", title="Pitchers"))
    assert stored_text_column(fifth, old.key) == old.text
    fifth.close()

    upgraded = backend()
    assert upgraded.schema() == SCHEMA_VERSION
    assert zlib.decompress(stored_text_column(upgraded, old.key)).decode() == old.text
    assert upgraded.get(old.key) == old
    hits = upgraded.search("sticky glands insects")
    assert [hit.url for hit in hits] == ["http://a/1", "http://a/2"] and hits[0].score > hits[1].score
    assert "[sticky] [glands]" in hits[0].snippet
    new = record("http://a/3", text="Butterworts trap gnats with greasy leaves.", title="Butterworts")
    upgraded.store(new)
    assert zlib.decompress(stored_text_column(upgraded, new.key)).decode() == new.text
    assert [hit.url for hit in upgraded.search("gnats")] == ["http://a/3"]
    upgraded.forget_url("http://a/1")
    assert [hit.url for hit in upgraded.search("glands insects")] == ["http://a/2"]  # the index follows deletions


def stored_column(store, key, column):
    """A ``records`` column as stored, bytes."""
    return bytes(store._read(lambda c: store._one(c, f"SELECT {column} FROM {{p}}records WHERE `key` = ?", (key,)))[0])


def stored_html_column(store, key):
    return bytes(store._read(lambda c: store._one(c, "SELECT html FROM {p}records WHERE `key` = ?", (key,)))[0])


def test_original_document_is_compressed_against_its_text(store):
    page = record("http://a/1", text=ARTICLE, html=f"<html><body><h1>Sundews</h1><p>{ARTICLE}</p></body></html>")
    image = record("http://a/i.png", text="", title="", html="<svg>no text at all</svg>")
    store.store(page)
    store.store(image)
    assert store.get(page.key) == page and store.get(image.key) == image
    column = stored_html_column(store, page.key)
    assert len(column) < len(compress(page.html)) / 2  # the text it shares with the document is not kept again
    assert inflate_document(column, page.text) == page.html
    assert inflate_document(compress(page.html), page.text) == page.html  # one compressed by itself (schema 6)


def _as_version_6_left_them(store) -> None:
    """The MariaDB tables as the version 6 code made them: compressed rows, the links' URL hash stored."""
    store._write(lambda c: store._run(
        c, "ALTER TABLE {p}links DROP INDEX {p}links_url_hash, DROP COLUMN url_hash, "
        "ADD COLUMN url_hash BINARY(16) AS (UNHEX(MD5(url))) STORED, ADD INDEX {p}links_url_hash (url_hash)"))
    for table in TABLES:
        store._write(lambda c: store._run(c, f"ALTER TABLE {{p}}{table} ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8 PAGE_COMPRESSED=DEFAULT"))


def mysql_layout(store) -> tuple[set[str], str]:
    """The create options of the job's tables, and what kind of column the links' URL hash is."""
    def work(c):
        options = store._all(c, "SELECT create_options FROM information_schema.tables WHERE table_schema = DATABASE() "
                                "AND table_name LIKE ?", (store.prefix.replace("_", "\\_") + "%",))
        column = store._one(c, "SELECT extra FROM information_schema.columns WHERE table_schema = DATABASE() "
                               "AND table_name = ? AND column_name = 'url_hash'", (store.prefix + "links",))
        return {option for (option,) in options}, column[0]

    return store._read(work)


def test_upgrade_from_version_6_compresses_documents_against_their_texts(backend):
    sixth = backend(type("SixthStore", (SqliteRecordStore if backend.kind == "sqlite" else MysqlRecordStore,), {"schema_version": 6}))
    old = record("http://a/1", text=ARTICLE + " Ünïcode ✓", html=f"<p>{ARTICLE} Ünïcode ✓</p>")
    old.links = [RecordLink("http://x/1.png", "a sundew", "img"), RecordLink("http://x/2", "two", "a")]
    bare = record("http://a/2", text="Pitcher plants drown insects in fluid.", title="Pitchers")
    for item in (old, bare):
        sixth.store(item)
    assert stored_html_column(sixth, old.key) == compress(old.html)
    if backend.kind == "mysql":
        _as_version_6_left_them(sixth)
        assert mysql_layout(sixth) == ({"row_format=COMPRESSED key_block_size=8"}, "STORED GENERATED")
    sixth.close()

    upgraded = backend()
    assert upgraded.schema() == SCHEMA_VERSION == 10
    assert stored_html_column(upgraded, old.key) == compress_document(old.html, old.text)
    assert upgraded.get(old.key) == old and upgraded.get(bare.key) == bare
    assert [hit.url for hit in upgraded.search("sticky glands")] == ["http://a/1"]
    assert upgraded.anchors_to("http://x/1.png") == [("a sundew", "img")]
    assert upgraded.links_to("http://x/2") == [(old.key, old.url, "two", "a")]
    if backend.kind == "mysql":
        assert mysql_layout(upgraded) == ({"row_format=DYNAMIC `PAGE_COMPRESSED`='1'"}, "VIRTUAL GENERATED")
    assert upgraded.forget_url("http://a/1") == old.key
    assert upgraded.anchors_to("http://x/1.png") == [] and upgraded.search("sticky glands") == []
    upgraded.close()
    assert backend().schema() == SCHEMA_VERSION  # opened again: nothing left to do


def test_upgrade_from_version_8_adds_the_main_content(backend):
    """Schema 9 keeps each page's main content beside its text; records stored before have none."""
    eighth = backend(type("EighthStore", (SqliteRecordStore if backend.kind == "sqlite" else MysqlRecordStore,), {"schema_version": 8}))
    old = record("http://a/1", text=f"Menu Shop\n{ARTICLE}", html=f"<p>{ARTICLE}</p>", main_text=ARTICLE)
    eighth.store(old)
    assert eighth.get(old.key).main_text is None  # a version 8 store has no place for it
    eighth.close()

    upgraded = backend()
    assert upgraded.schema() == SCHEMA_VERSION == 10
    assert upgraded.get(old.key) == dataclasses.replace(old, main_text=None)
    new = record("http://a/2", text=f"Menu Shop\n{ARTICLE} Ünïcode ✓", html="<p>x</p>", main_text=f"{ARTICLE} Ünïcode ✓")
    upgraded.store(new)
    assert upgraded.get(new.key) == new
    # Compressed against the text it is part of: a few bytes, not the article again.
    assert len(stored_column(upgraded, new.key, "main_text")) < len(compress(new.main_text)) / 3
    upgraded.close()
    assert backend().schema() == SCHEMA_VERSION  # opened again: nothing left to do


def test_upgrade_from_version_9_notes_which_pages_were_rendered(backend):
    """Schema 10 notes whether a page was rendered in a browser (Render); records stored before were not."""
    ninth = backend(type("NinthStore", (SqliteRecordStore if backend.kind == "sqlite" else MysqlRecordStore,), {"schema_version": 9}))
    old = record("http://a/1", rendered=True)
    ninth.store(old)
    assert ninth.get(old.key).rendered is False  # a version 9 store has no place for it
    ninth.close()

    upgraded = backend()
    assert upgraded.schema() == SCHEMA_VERSION == 10
    assert upgraded.get(old.key) == dataclasses.replace(old, rendered=False)
    new = record("http://a/2", text="sundews rendered by a script", rendered=True)
    upgraded.store(new)
    assert upgraded.get(new.key) == new and upgraded.get(new.key).rendered is True
    upgraded.close()


def test_near_duplicate_joins_the_stored_record_and_a_different_page_does_not(store):
    store.store(record("http://a/1", text="Posted 23 November 2026. " + ARTICLE + " Advert: buy cheap pots today!"))
    dated = record("http://b/1", text="Posted 24 November 2026. " + ARTICLE + " Advert: buy cheap pots today!")
    assert store.store(dated, near_duplicate_distance=neardup.DEFAULT_DISTANCE) is Stored.NEAR_DUPLICATE
    advert = record("http://c/1", text="Posted 23 November 2026. " + ARTICLE + " Advert: new garden gloves on sale!")
    assert store.store(advert, near_duplicate_distance=neardup.MAX_DISTANCE) is Stored.NEAR_DUPLICATE
    other = record("http://d/1", text=ARTICLE.replace("Sundews", "Pitcher plants").replace("sticky glands", "slippery rims")
                   .replace("Drosera capensis", "Sarracenia flava").replace("pink", "yellow").replace("seed", "runners")
                   .replace("rest cooler", "go dormant"))
    assert store.store(other, near_duplicate_distance=neardup.MAX_DISTANCE) is Stored.NEW
    assert store.count() == 2
    assert store.urls(store.key_for_url("http://a/1")) == ["http://a/1", "http://b/1", "http://c/1"]


def test_a_page_that_changed_a_little_replaces_its_own_record(store):
    store.store(record("http://a/1", text="Posted 23 November 2026. " + ARTICLE))
    changed = record("http://a/1", text="Posted 24 December 2026. " + ARTICLE)
    assert store.store(changed, near_duplicate_distance=neardup.DEFAULT_DISTANCE) is Stored.NEW
    assert [r.text for r in store] == [changed.text]


def test_band_lookup_finds_every_fingerprint_within_seven_bits(store):
    base = 0x0123_4567_89AB_CDEF
    stored = record("http://a/1", text=ARTICLE)
    stored.fingerprint = base
    store.store(stored)
    # bit positions spread over the bands: 2 + 2 + 2 + 1 is the worst case for seven bits
    worst = [0, 1, 16, 17, 32, 33, 48]
    for distance in range(8):
        probe = base
        for bit in worst[:distance]:
            probe ^= 1 << bit
        assert store.near_duplicate(probe, neardup.MAX_DISTANCE) == (stored.key, distance)
    assert store.near_duplicate(base ^ 0b11 ^ 0b11 << 16 ^ 0b11 << 32 ^ 0b1, 3) is None  # 7 bits away, asked for 3
    with pytest.raises(ValueError, match="distance must be 0 to 7"):
        store.store(record("http://b/1"), near_duplicate_distance=8)


def test_search_ranks_matches_with_snippets(store):
    store.store(record("http://a/1", text=ARTICLE, title="Sundews"))
    store.store(record("http://a/2", text="Pitcher plants drown insects in fluid. " * 5, title="Pitchers"))
    store.store(record("http://a/3", text="Baseball pitchers throw fastballs. " * 5, title="Baseball"))
    hits = store.search("sticky glands insects")
    assert [hit.url for hit in hits] == ["http://a/1", "http://a/2"]
    assert hits[0].score > hits[1].score
    assert "[sticky] [glands]" in hits[0].snippet
    assert store.search("orchids") == []
    store.forget_url("http://a/1")
    assert [hit.url for hit in store.search("glands")] == []  # the index follows deletions
    with pytest.raises(ValueError, match="no word"):
        store.search("!!!")


def test_maintenance_lookups(store):
    store.store(record("http://a.example/1"))
    store.store(record("http://b.example:8080/x"))
    store.store(record("http://b.example:8080/y", text="other text"))
    key = store.key_for_url("http://a.example/1")
    assert store.urls_on_host("b.example:8080") == ["http://b.example:8080/x", "http://b.example:8080/y"]
    assert sorted(store.url_keys()) == sorted(
        [("http://a.example/1", key), ("http://b.example:8080/x", key), ("http://b.example:8080/y", store.key_for_url("http://b.example:8080/y"))]
    )
    first_id = next(iter(store._read(lambda c: store._all(c, "SELECT id FROM {p}records WHERE `key` = ?", (key,)))))[0]
    assert store.key_for_id(first_id) == key
    assert store.rename_url("http://b.example:8080/x", "http://c.example/x") is True
    assert store.urls(key) == ["http://a.example/1", "http://c.example/x"]
    assert store.rename_url("http://nowhere/", "http://c.example/") is False
    assert store.delete(key) == ["http://a.example/1", "http://c.example/x"]
    assert store.count() == 1 and store.key_for_url("http://c.example/x") is None
    assert store.orphans() == []


def test_every_way_a_record_goes_leaves_a_tombstone_and_its_return_removes_it(backend):
    store = backend()
    start = time.time()
    for url, text in (("http://a/1", "one"), ("http://a/2", "two"), ("http://a/3", "three"), ("http://a/4", "four")):
        store.store(record(url, text=text))
    store.store(record("http://b/1", text="one"))        # a second URL on record one
    keys = {record.url: record.key for record in store}
    assert store.forget_url("http://a/1") is None         # record one keeps http://b/1
    assert store.forget_url("http://b/1") == keys["http://a/1"]
    store.delete(keys["http://a/2"])
    store.store(record("http://a/3", text="three, changed"))  # the URL moved: the old content went
    store.rename_url("http://a/4", "http://a/4b")          # a rename loses nothing
    deletions = store.deleted_since(start)
    assert [(d.key, d.urls) for d in deletions] == [
        (keys["http://a/1"], ["http://b/1"]), (keys["http://a/2"], ["http://a/2"]), (keys["http://a/3"], ["http://a/3"]),
    ]
    assert all(isinstance(d, Deletion) and start <= d.deleted <= time.time() for d in deletions)
    assert store.deleted_since(deletions[1].deleted) == deletions[1:]
    assert store.deleted_since(None, until=deletions[1].deleted) == deletions[:1]
    assert store.deleted_since(time.time() + 1) == []
    store.store(record("http://c/1", text="two"))          # the content of record two is back
    assert keys["http://a/2"] not in {d.key for d in store.deleted_since(None)}
    assert store.forget_deletions(before=deletions[2].deleted) == 1
    assert [d.key for d in store.deleted_since(None)] == [keys["http://a/3"]]
    assert store.forget_deletions() == 1 and store.deleted_since(None) == []


def test_upgrade_from_version_4_adds_tombstones_and_ranks_to_the_records_there(backend):
    fourth = backend(type("FourthStore", (SqliteRecordStore if backend.kind == "sqlite" else MysqlRecordStore,),
                          {"schema_version": 4}))
    fourth.store(record("http://a/1", text="one"))
    fourth.close()
    upgraded = backend()
    assert upgraded.schema() == SCHEMA_VERSION
    stored = next(iter(upgraded))
    assert (stored.pagerank, stored.ipagerank, stored.off_topic) == (None, None, False)
    upgraded.set_ranks({stored.key: 0.5}, {stored.key: 0.25})
    assert (upgraded.get(stored.key).pagerank, upgraded.get(stored.key).ipagerank) == (0.5, 0.25)
    upgraded.delete(stored.key)
    assert [d.key for d in upgraded.deleted_since(None)] == [stored.key]


@pytest.mark.services
def test_open_store_picks_the_backend(tmp_path):
    with pytest.raises(FileNotFoundError, match="job j has no records yet"):
        open_store("j", tmp_path, create=False)
    sqlite_store = open_store("j", tmp_path)
    assert sqlite_store.location == str(tmp_path / "j" / "records.sqlite")
    sqlite_store.close()
    job = f"t{uuid.uuid4().hex[:12]}"
    mysql_store = open_store(job, tmp_path, MYSQL_URL)
    try:
        assert mysql_store.location == f"mysql://root@127.0.0.1:3306/test (tables combine_{job}_*)"
    finally:
        mysql_store.close()
        drop_mysql_tables(table_prefix(job))


def test_mysql_url_errors_name_the_problem():
    with pytest.raises(ValueError, match="name one database"):
        connection_arguments("mysql://root:pw@db:3306/")
    with pytest.raises(ValueError, match=r"expected mysql://") as caught:
        connection_arguments("postgres://root:pw@db/x")
    assert "pw" not in str(caught.value)  # the password never shows
    assert table_prefix("glass") == "combine_glass_"
    assert table_prefix("my-job.v2") != table_prefix("my_job_v2")


# -- MariaDB only: jobs side by side, connections killed --------------------------------


@pytest.fixture
def mysql_backend(backend):
    if backend.kind != "mysql":
        pytest.skip("MariaDB only")
    return backend


def kill(connection_id: int) -> None:
    with mysql_admin() as db:
        db.cursor().execute(f"KILL {connection_id}")


def test_jobs_in_one_database_do_not_see_each_other(mysql_backend):
    mine = mysql_backend()
    other_job = f"t{uuid.uuid4().hex[:12]}"
    other = MysqlRecordStore.from_url(MYSQL_URL, other_job)
    try:
        mine.store(record("http://a/1"))
        assert other.count() == 0
        assert other.store(record("http://a/1")) is Stored.NEW
    finally:
        other.close()
        drop_mysql_tables(table_prefix(other_job))


def test_killed_connection_between_transactions_reconnects(mysql_backend):
    store = mysql_backend()
    store.store(record("http://a/1"))
    kill(store.connection_id)
    assert store.store(record("http://a/2", text="second text")) is Stored.NEW
    assert store.count() == 2


def test_killed_connection_inside_a_transaction_retries_it_whole(mysql_backend, monkeypatch):
    """The connection dies after the record row went in but before its URL did: the server rolls the
    transaction back, the store runs it again, and the record is there once, complete."""
    store = mysql_backend()
    store.store(record("http://a/0", text="first text"))
    original = store._put_url
    calls = []

    def put_url_then_die(cursor, url, key, checked):
        calls.append(url)
        if len(calls) == 1:
            kill(store.connection_id)
        original(cursor, url, key, checked)

    monkeypatch.setattr(store, "_put_url", put_url_then_die)
    item = record("http://a/1", text=ARTICLE)
    item.links = [RecordLink(f"http://x/{i}", f"link {i}", "a") for i in range(50)]
    assert store.store(item) is Stored.NEW
    assert calls == ["http://a/1", "http://a/1"]
    monkeypatch.undo()
    assert store.count() == 2
    assert store.get(item.key) == item
    assert store.urls(item.key) == ["http://a/1"]
    assert store.orphans() == []


def test_a_server_that_stops_answering_is_an_outage_not_a_hang(mysql_backend):
    """The server keeps the connection but answers nothing more (hung, or cut off by a network that drops its
    packets). Before: a statement waited for ever, and the crawl with it; now each connection has a read and
    write timeout (1 s here; STATEMENT_SILENCE by default), after which the outage is waited out and given up on
    as one that refuses."""
    assert connection_arguments(MYSQL_URL)["read_timeout"] == connection_arguments(MYSQL_URL)["write_timeout"] > 0
    with TcpProxy(("127.0.0.1", 3306)) as proxy:
        arguments = {**connection_arguments(MYSQL_URL), "port": proxy.port, "read_timeout": 1, "write_timeout": 1,
                     "connect_timeout": 1}
        store = MysqlRecordStore(arguments, mysql_backend.job, location="proxied", reconnect_timeout=2)
        try:
            store.store(record("http://a/1"))
            proxy.stall()
            outcome: list[BaseException | None] = []

            def store_one() -> None:
                try:
                    store.store(record("http://a/2", text="second text"))
                    outcome.append(None)
                except BaseException as error:  # noqa: BLE001 - the thread hands whatever it met to the test
                    outcome.append(error)

            writer = threading.Thread(target=store_one, daemon=True)
            writer.start()
            writer.join(30)
            assert not writer.is_alive(), "the store still waits for a server that answers nothing"
            assert isinstance(outcome[0], MysqlUnavailable), outcome
        finally:
            proxy.cut()
            store.close()
    assert mysql_backend().count() == 1   # what was stored before the stall is kept


def test_server_away_for_a_while_is_waited_for_and_then_given_up_on(mysql_backend):
    """While the server cannot be reached (as during a restart) the store keeps trying, up to its reconnect timeout."""
    store = mysql_backend()
    store.store(record("http://a/1"))
    port = store._arguments["port"]
    store._arguments["port"] = 1  # nothing listens there: connecting fails at once, as with a server restarting
    kill(store.connection_id)
    back = threading.Timer(1.0, store._arguments.update, kwargs={"port": port})
    back.start()
    assert store.store(record("http://a/2", text="second text")) is Stored.NEW
    back.join()
    assert store.count() == 2

    store.reconnect_timeout = 0.5
    store._arguments["port"] = 1
    kill(store.connection_id)
    with pytest.raises(MysqlUnavailable, match=r"unreachable for \d+ s .*nothing stored is lost"):
        store.store(record("http://a/3", text="third text"))
    store._arguments["port"] = port
    started = time.monotonic()
    with pytest.raises(MysqlUnavailable, match="still unreachable"):  # given up on: tried once, not waited for
        store._arguments["port"] = 1
        store.count()
    assert time.monotonic() - started < 0.5
    store._arguments["port"] = port


def test_a_records_datestamp_moves_with_every_change_an_export_writes(store):
    """Issue 28 (7): rescored and reclassified records kept their datestamp, so `export --since` and OAI-PMH
    `from` missed them. The datestamp (``changed``) starts at the record's check and only moves forward."""
    sundews = record("http://a/1", checked=100.0)
    pitchers = record("http://b/1", text="pitchers drown insects", title="Pitchers", checked=100.0)
    for item in (sundews, pitchers):
        store.store(item)

    def changed(key):
        return store.get(key).changed

    def head_changed(key):
        return store.listing.head(key).changed

    assert changed(sundews.key) == 100.0 == head_changed(sundews.key)
    before = time.time()
    store.reclassify(sundews.key, 10.0, 0.1, "plain", [TopicClass("CP", 10.0, 0.1, ("x",))], ["x"])
    assert changed(sundews.key) >= before and changed(pitchers.key) == 100.0
    assert head_changed(sundews.key) == changed(sundews.key)
    assert [head.key for head in store.listing.heads(since=before)] == [sundews.key]  # OAI-PMH from=

    before = time.time()
    store.set_ranks({pitchers.key: 0.5}, {pitchers.key: 0.25})
    assert changed(pitchers.key) >= before and changed(sundews.key) < before  # only the record ranked anew
    before = time.time()
    store.set_ranks({pitchers.key: 0.5}, {pitchers.key: 0.25})
    assert changed(pitchers.key) < before  # the same ranks again change nothing

    store.store(record("http://a/2", checked=200.0))  # the same content under another URL: a URL added
    assert changed(sundews.key) >= 200.0
    before = time.time()
    store.forget_url("http://a/2")
    assert changed(sundews.key) >= before
    before = time.time()
    assert store.rename_url("http://a/1", "http://a/3")
    assert changed(sundews.key) >= before
    store.store(record("http://a/3", checked=50.0))  # an old check time never moves it back
    assert changed(sundews.key) >= before


def test_upgrade_to_version_8_dates_each_record_by_its_last_check(backend):
    seventh = backend(type("SeventhStore", (SqliteRecordStore if backend.kind == "sqlite" else MysqlRecordStore,), {"schema_version": 7}))
    seventh.store(record("http://a/1", checked=1234.0))
    seventh.close()
    upgraded = backend()
    assert upgraded.schema() == SCHEMA_VERSION
    assert [head.changed for head in upgraded.listing.heads()] == [1234.0]
