"""Links looked up by their target (an image's alt texts, a record's ALVIS inlinks), on SQLite
and on the real MariaDB, and the schema upgrade from version 3 that indexes them."""

from __future__ import annotations

import dataclasses
import io

import pytest
from lxml import etree
from test_store import backend  # noqa: F401  (the fixture: stores on SQLite and on the real MariaDB)

from combine_scrapy.records.export.alvis import ALVIS_NAMESPACE, write_alvis
from combine_scrapy.records.record import Record, RecordLink, content_key
from combine_scrapy.records.store.mysql import MysqlRecordStore
from combine_scrapy.records.store.sql.tables import SCHEMA_VERSION
from combine_scrapy.records.store.sqlite import SqliteRecordStore

PLANT = "http://garden.example/img/plant.png"


def page(url: str, *links: RecordLink) -> Record:
    text = f"sundews on {url}"
    return Record(
        key=content_key("Sundews", text, url, "text/html"), url=url, title="Sundews", text=text, mime_type="text/html",
        links=list(links), checked=1.0, score=100.0,
    )


def uses_link_index(store, kind: str) -> bool:
    """Whether the database can answer anchors_to through the index of the version 4 migration."""
    column, parameter = store._link_target(PLANT)
    query = f"SELECT anchor, kind FROM {{p}}links WHERE {column} = ?"
    if kind == "sqlite":
        plan = store._read(lambda c: store._all(c, f"EXPLAIN QUERY PLAN {query}", (parameter,)))
        return any("links_url" in row[-1] for row in plan)
    plan = store._read(lambda c: store._all(c, f"EXPLAIN {query}", (parameter,)))
    # possible_keys: on a table this small the optimizer may rather scan it
    return any(store.prefix + "links_url_hash" in (row[4] or "").split(",") for row in plan)


def link_indexes(store, kind: str) -> list[str]:
    if kind == "sqlite":
        rows = store._read(lambda c: store._all(c, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'links'"))
    else:
        rows = store._read(lambda c: store._all(
            c, "SELECT DISTINCT index_name FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ?",
            (store.prefix + "links",),
        ))
    return sorted(name.removeprefix(store.prefix) for (name,) in rows if not name.startswith(("sqlite_autoindex", "PRIMARY")))


def test_anchors_to_gathers_the_alt_texts_of_every_page_showing_the_image(backend):
    store = backend()
    store.store(page(
        "http://garden.example/a",
        RecordLink(PLANT, "Drosera capensis in flower", "img"),
        RecordLink(PLANT.replace("plant", "Plant"), "another image: the path differs in case", "img"),
        RecordLink("http://garden.example/b", "next page", "a"),
    ))
    store.store(page(
        "http://garden.example/b",
        RecordLink(PLANT, "", "img"),                            # an image without alt text
        RecordLink(PLANT, "full-size photo", "a"),
        RecordLink(PLANT + "?size=2", "another image: a query", "img"),
    ))
    store.store(page("http://garden.example/c", RecordLink(PLANT, "Drosera capensis in flower", "img")))

    assert store.anchors_to(PLANT) == [("Drosera capensis in flower", "img"), ("full-size photo", "a")]
    assert store.anchors_to(PLANT, limit=1) == [("Drosera capensis in flower", "img")]
    assert store.anchors_to("http://garden.example/nothing.png") == []
    assert uses_link_index(store, backend.kind)


def test_anchors_leave_with_the_record_that_held_them(backend):
    store = backend()
    store.store(page("http://garden.example/a", RecordLink(PLANT, "Drosera capensis", "img")))
    store.store(page("http://garden.example/b", RecordLink(PLANT, "sundew leaf", "img")))
    store.forget_url("http://garden.example/a")
    assert store.anchors_to(PLANT) == [("sundew leaf", "img")]


def test_upgrade_from_version_3_indexes_the_links_already_stored(backend):
    third = backend(type("ThirdStore", (SqliteRecordStore if backend.kind == "sqlite" else MysqlRecordStore,), {"schema_version": 3}))
    assert third.schema() == 3
    third.store(page("http://garden.example/a", RecordLink(PLANT, "Drosera capensis 🌱 in flower", "img")))
    assert link_indexes(third, backend.kind) == []
    third.close()

    upgraded = backend()
    assert upgraded.schema() == SCHEMA_VERSION
    assert uses_link_index(upgraded, backend.kind)
    assert link_indexes(upgraded, backend.kind) == (["links_url"] if backend.kind == "sqlite" else ["links_url_hash"])
    assert upgraded.anchors_to(PLANT) == [("Drosera capensis 🌱 in flower", "img")]  # the rows already there, hashed
    upgraded.store(page("http://garden.example/b", RecordLink(PLANT, "sundew leaf", "img")))
    assert upgraded.anchors_to(PLANT) == [("Drosera capensis 🌱 in flower", "img"), ("sundew leaf", "img")]


@pytest.mark.crawl
def test_alvis_export_lists_the_inlinks_of_every_url_of_a_record(backend):
    store = backend()
    first = page("http://garden.example/a", RecordLink(PLANT, "Drosera capensis", "img"), RecordLink("http://garden.example/a", "home", "a"))
    second = page("http://garden.example/b", RecordLink(PLANT + "?copy", "the photo", "a"), RecordLink(PLANT, "Drosera capensis", "img"))
    image = Record(key=content_key("", "", PLANT, "image/png"), url=PLANT, title="", text="Drosera capensis", mime_type="image/png", checked=1.0)
    for record in (first, second, image):
        store.store(record)
    store.store(dataclasses.replace(image, url=PLANT + "?copy"))
    assert store.links_to(PLANT) == [
        (first.key, first.url, "Drosera capensis", "img"), (second.key, second.url, "Drosera capensis", "img"),
    ]

    out = io.StringIO()
    write_alvis(((record, store.urls(record.key)) for record in store), out, store.key_for_url, store.links_to)
    root = etree.fromstring(out.getvalue().encode())
    a = f"{{{ALVIS_NAMESPACE}}}"

    def inlinks(record: Record) -> list[tuple[str, str, str, str]]:
        document = root.find(f"{a}documentRecord[@id='{record.key}']")
        return [
            (link.get("type"), link.findtext(f"{a}anchorText"), link.findtext(f"{a}location"), link.find(f"{a}location").get("documentId"))
            for link in document.iterfind(f"{a}acquisition/{a}links/{a}inlinks/{a}link")
        ]

    assert inlinks(image) == [
        ("img", "Drosera capensis", first.url, first.key),
        ("img", "Drosera capensis", second.url, second.key),
        ("a", "the photo", second.url, second.key),  # a link to the image's other URL
    ]
    assert inlinks(first) == []  # its link to itself is no inlink
    assert root.find(f".//{a}documentRecord[@id='{first.key}']//{a}inlinks") is None
