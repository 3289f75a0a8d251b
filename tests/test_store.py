"""The embedded record store: one record per content, all its URLs, deletion with the last URL."""

from __future__ import annotations

import pytest

from combine_scrapy.record import Record, RecordLink, TopicClass, content_key
from combine_scrapy.store.sqlite import SqliteRecordStore


@pytest.fixture
def store(tmp_path):
    s = SqliteRecordStore(tmp_path / "records.sqlite")
    yield s
    s.close()


def record(url, text="sundews catch insects", title="Sundews"):
    return Record(
        key=content_key(title, text, url, "text/html"), url=url, title=title, text=text, mime_type="text/html",
        headings=["Drosera"], meta={"keywords": ["sundew"]}, links=[RecordLink("http://x/", "x", "a")],
        classes=[TopicClass("CP", 500.0, 12.5, ("sundews",))], terms=["sundews"], checked=1.0, score=500.0,
    )


def test_content_key_ignores_whitespace_and_falls_back_to_url():
    assert content_key("T", "a b\n c", "http://x/", "text/html") == content_key("T", "abc", "http://y/", "text/html")
    assert content_key("T", "abc", "u", "m") == content_key("", "abcT", "u", "m")  # text then title, as Combine
    assert content_key("", "", "http://x/", "image/png") != content_key("", "", "http://y/", "image/png")
    assert content_key("", "", "u", "m").isupper()


def test_same_content_under_two_urls_is_one_record(store):
    assert store.store(record("http://a/1")) is True
    assert store.store(record("http://b/copy")) is False
    assert store.count() == 1
    assert store.urls(record("http://a/1").key) == ["http://a/1", "http://b/copy"]


def test_record_round_trip(store):
    original = record("http://a/1")
    store.store(original)
    assert store.get(original.key) == original


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


def test_iteration_reads_every_record(store):
    for i in range(1203):
        store.store(record(f"http://a/{i}", text=f"text {i}"))
    assert sum(1 for _ in store) == 1203


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "r.sqlite"
    SqliteRecordStore(path).close()
    import sqlite3

    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 99")
    with pytest.raises(RuntimeError, match="schema version 99 is newer"):
        SqliteRecordStore(path)
