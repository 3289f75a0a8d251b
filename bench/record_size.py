"""Benchmark: bytes per stored record, with and without the original document, beside Combine's figures.

    .venv/bin/python -m bench.record_size --records 5000 [--mysql mysql://root@127.0.0.1:3306/test]

Parses ``--records`` pages of the virtual web (about 17 KB of HTML each, 20
links), stores each as a record the way the crawl does (text, headings, meta,
links, topic classes, simhash; the original document when saveHTML), and
reports what the store grew by per record: the SQLite file after a
checkpoint, or the InnoDB files of the job's tables (full-text index included)
in MySQL/MariaDB. Combine's MySQL records took about 25 KB, 8 KB with
saveHTML = 0 (seed 002, 3.3.3). Writes bench/results/record_size.{json,md}.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from bench.report import environment, write_report
from bench.virtualweb.web import VirtualWeb
from combine_scrapy.content import main_content
from combine_scrapy.neardup import page_fingerprint
from combine_scrapy.parse import parse_document
from combine_scrapy.record import Record, RecordLink, TopicClass, content_key
from combine_scrapy.store.sqlite import SqliteRecordStore

COMBINE_KB = {True: 25, False: 8}


def records(count: int, save_html: bool) -> list[Record]:
    web = VirtualWeb(seed=1)
    made = []
    for page in range(count):
        url = web.url(page)
        parsed = parse_document(url, web.render(page), {"content-type": "text/html; charset=utf-8", "server": "virtualweb"})
        made.append(Record(
            key=content_key(parsed.title, parsed.text, url, parsed.mime_type), url=url, title=parsed.title,
            text=parsed.text, mime_type=parsed.mime_type, headings=list(parsed.headings),
            meta={name: list(values) for name, values in parsed.meta.items()},
            links=[RecordLink(link.url, link.anchor, link.kind) for link in parsed.links],
            html=parsed.html if save_html else None, charset=parsed.charset or "", server=parsed.server or "",
            checked=time.time(), score=120.0, normalized=0.8, algorithm="plain",
            classes=[TopicClass("CP", 120.0, 0.8, ("carnivorous plants", "sundews"))], terms=["carnivorous plants", "sundews"],
            language="en", country="se",
            fingerprint=page_fingerprint(parsed.text, main_content(parsed.html) if parsed.html else None),
        ))
    return made


def _store_all(store, batch: list[Record]) -> float:
    started = time.perf_counter()
    for record in batch:
        store.store(record)
    return time.perf_counter() - started


def measure_sqlite(batch: list[Record]) -> dict:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "records.sqlite"
        store = SqliteRecordStore(path)
        store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        empty = path.stat().st_size
        seconds = _store_all(store, batch)
        store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = path.stat().st_size - empty
        store.close()
    return {"bytes_per_record": round(size / len(batch)), "records_per_second": round(len(batch) / seconds)}


def _innodb_bytes(cursor, prefix: str) -> int:
    """Bytes of the InnoDB files of the tables named ``prefix*`` and of their full-text index tables."""
    cursor.execute(
        "SELECT table_id FROM information_schema.innodb_sys_tables WHERE name LIKE CONCAT(DATABASE(), '/', %s, '%%')",
        (prefix.replace("_", "\\_"),),
    )
    names = [f"{prefix.replace('_', chr(92) + '_')}%"] + [f"FTS\\_{table_id:016x}\\_%" for (table_id,) in cursor.fetchall()]
    total = 0
    for pattern in names:
        cursor.execute(
            "SELECT COALESCE(SUM(file_size), 0) FROM information_schema.innodb_sys_tablespaces "
            "WHERE name LIKE CONCAT(DATABASE(), '/', %s)",
            (pattern,),
        )
        total += int(cursor.fetchone()[0])
    return total


def measure_mysql(batch: list[Record], url: str) -> dict:
    from combine_scrapy.store.mysql import MysqlRecordStore

    job = f"bench{uuid.uuid4().hex[:8]}"
    store = MysqlRecordStore.from_url(url, job)
    cursor = store._db.cursor()
    try:
        empty = _innodb_bytes(cursor, store.prefix)
        seconds = _store_all(store, batch)
        size = _innodb_bytes(cursor, store.prefix) - empty
    finally:
        cursor.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE %s",
            (store.prefix.replace("_", "\\_") + "%",),
        )
        tables = [name for (name,) in cursor.fetchall()]
        cursor.execute("SET FOREIGN_KEY_CHECKS = 0")
        for name in tables:
            cursor.execute(f"DROP TABLE `{name}`")
        store.close()
    return {"bytes_per_record": round(size / len(batch)), "records_per_second": round(len(batch) / seconds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--mysql", help="also measure the MySQL/MariaDB store at this URL")
    args = parser.parse_args()
    sample = records(args.records, save_html=True)
    html_kb = statistics.mean(len(record.html.encode()) for record in sample) / 1024
    text_kb = statistics.mean(len(record.text.encode()) for record in sample) / 1024
    links = statistics.mean(len(record.links) for record in sample)
    rows = {}
    for save_html in (True, False):
        batch = sample if save_html else records(args.records, save_html=False)
        rows[f"sqlite, saveHTML={int(save_html)}"] = {**measure_sqlite(batch), "combine_kb": COMBINE_KB[save_html]}
        if args.mysql:
            rows[f"mysql, saveHTML={int(save_html)}"] = {**measure_mysql(batch, args.mysql), "combine_kb": COMBINE_KB[save_html]}
    result = {
        **environment(f"python -m bench.record_size --records {args.records}" + (f" --mysql {args.mysql}" if args.mysql else "")),
        "records": args.records,
        "page_html_kb": round(html_kb, 1),
        "page_text_kb": round(text_kb, 1),
        "links_per_page": round(links, 1),
        "stores": rows,
    }
    write_report("record_size", result, "Record size", [
        f"{args.records:,} virtual-web pages ({html_kb:.1f} KB of HTML, {text_kb:.1f} KB of text and "
        f"{links:.0f} links each on average) stored as records with their URL, links, topic class and simhash; "
        "the text and the original document are kept zlib-compressed (store schema 6), the full-text index "
        "included: SQLite's FTS5 reads the text through a view, MySQL's FULLTEXT covers the text's distinct words. "
        "MySQL counts the InnoDB files of the job's tables and of their full-text index (MariaDB keeps up to "
        "innodb_ft_cache_size of new index entries in memory). The virtual web's text compresses far better "
        "(7:1) than most real pages (about 3:1).",
        "",
        "| store | bytes per record | Combine (MySQL) | records stored per second |",
        "| --- | --- | --- | --- |",
        *(f"| {name} | {row['bytes_per_record']:,} | about {row['combine_kb']} KB | {row['records_per_second']:,} |"
          for name, row in rows.items()),
    ])


if __name__ == "__main__":
    main()
