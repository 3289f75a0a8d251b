"""Benchmark: bytes per stored record, with and without the original document, beside Combine's figures.

    .venv/bin/python -m bench.record_size --records 5000 [--mysql mysql://root@127.0.0.1:3306/test]

Parses ``--records`` pages of the virtual web (about 17 KB of HTML each, 20
links), stores each as a record the way the crawl does (text, headings, meta,
links, topic classes, simhash; the original document when saveHTML), and
reports what the store grew by per record: the SQLite file after a
checkpoint, or the disk the InnoDB files of the job's tables take (full-text
index included) in MySQL/MariaDB, once the server has written them out (its
full-text cache and changed pages: ``--mysql`` needs a user that may SET
GLOBAL, and one run at a time, as each sets and restores those globals).
Combine's MySQL records took about 25 KB each, 8 KB with saveHTML = 0. Writes bench/results/record_size.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from bench.report import environment, write_report
from bench.virtualweb.web import VirtualWeb
from combine_scrapy.document.content import main_content
from combine_scrapy.document.neardup import page_fingerprint
from combine_scrapy.document.parse import parse_document
from combine_scrapy.records.record import Record, RecordLink, TopicClass, content_key
from combine_scrapy.records.store.sqlite import SqliteRecordStore

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


def _innodb_bytes(cursor, prefix: str) -> dict[str, int]:
    """Bytes of disk each InnoDB file of the tables named ``prefix*`` takes, by table, the full-text index's tables
    together as ``full-text index`` (allocated blocks: a page-compressed file has holes where its pages need no
    blocks and where space is reserved ahead)."""
    cursor.execute(
        "SELECT table_id FROM information_schema.innodb_sys_tables WHERE name = CONCAT(DATABASE(), '/', %s)",
        (f"{prefix}records",),
    )
    (table_id,) = cursor.fetchone()
    cursor.execute(
        "SELECT SUBSTRING_INDEX(name, '/', -1), allocated_size FROM information_schema.innodb_sys_tablespaces "
        "WHERE name LIKE CONCAT(DATABASE(), '/', %s) OR name LIKE CONCAT(DATABASE(), '/', %s)",
        (prefix.replace("_", "\\_") + "%", f"FTS\\_{table_id:016x}\\_%"),
    )
    sizes: dict[str, int] = {}
    for name, allocated in cursor.fetchall():
        part = name.removeprefix(prefix) if name.startswith(prefix) else "full-text index"
        sizes[part] = sizes.get(part, 0) + int(allocated)
    return sizes


def _global(cursor, name: str) -> str:
    cursor.execute(f"SELECT @@GLOBAL.{name}")
    return cursor.fetchone()[0]


def _write_out(cursor, prefix: str, timeout: float = 120.0) -> None:
    """Put the whole job on disk: the FULLTEXT index's cache of new entries (OPTIMIZE TABLE, full-text only) and
    every page changed in memory (the server's page cleaner, told to keep none). Needs a user that may SET GLOBAL."""
    optimize_only = _global(cursor, "innodb_optimize_fulltext_only")
    cursor.execute("SET GLOBAL innodb_optimize_fulltext_only = ON")
    try:
        cursor.execute(f"OPTIMIZE TABLE `{prefix}records`")
        cursor.fetchall()
    finally:
        cursor.execute(f"SET GLOBAL innodb_optimize_fulltext_only = {optimize_only}")
    dirty_pct = _global(cursor, "innodb_max_dirty_pages_pct")
    cursor.execute("SET GLOBAL innodb_max_dirty_pages_pct = 0")
    try:
        deadline, sizes = time.monotonic() + timeout, []
        while time.monotonic() < deadline:  # until no page is dirty, or (other clients writing) the job's size holds
            time.sleep(0.5)
            cursor.execute("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'")
            dirty = int(cursor.fetchone()[1])
            sizes.append(_innodb_bytes(cursor, prefix))
            if dirty == 0 or sizes[-5:] == [sizes[-1]] * 5:
                return
        raise RuntimeError(f"the server did not write {prefix}* to disk within {timeout:.0f} s")
    finally:
        cursor.execute(f"SET GLOBAL innodb_max_dirty_pages_pct = {dirty_pct}")


def measure_mysql(batch: list[Record], url: str) -> dict:
    from combine_scrapy.records.store.mysql import MysqlRecordStore

    job = f"bench{uuid.uuid4().hex[:8]}"
    store = MysqlRecordStore.from_url(url, job)
    cursor = store._db.cursor()
    try:
        _write_out(cursor, store.prefix)
        empty = _innodb_bytes(cursor, store.prefix)
        seconds = _store_all(store, batch)
        _write_out(cursor, store.prefix)
        grown = {part: size - empty.get(part, 0) for part, size in _innodb_bytes(cursor, store.prefix).items()}
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
    return {
        "bytes_per_record": round(sum(grown.values()) / len(batch)),
        "records_per_second": round(len(batch) / seconds),
        "bytes_per_record_by_table": {part: round(size / len(batch)) for part, size in sorted(grown.items(), key=lambda item: -item[1])},
    }


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
        "load_average_at_end": round(os.getloadavg()[0], 1),
        "stores": rows,
    }
    write_report("record_size", result, "Record size", [
        f"{args.records:,} virtual-web pages ({html_kb:.1f} KB of HTML, {text_kb:.1f} KB of text and "
        f"{links:.0f} links each on average) stored as records with their URL, links, topic class and simhash; "
        "the text is kept zlib-compressed, the original document zlib-compressed against the text (store schema 7), "
        "the full-text index included: SQLite's FTS5 reads the text through a view, MySQL's FULLTEXT covers the "
        "text's distinct words. MySQL counts the disk blocks of the InnoDB files of the job's tables and of their "
        "full-text index, after the server has written its full-text cache and every changed page; on MariaDB the "
        "pages are compressed as they are written, and the space InnoDB reserves ahead in each file takes no blocks. "
        f"Load average at the end: {result['load_average_at_end']}. The virtual web's text compresses far better "
        "(7:1) than most real pages (about 3:1).",
        "",
        "| store | bytes per record | Combine (MySQL) | records stored per second |",
        "| --- | --- | --- | --- |",
        *(f"| {name} | {row['bytes_per_record']:,} | about {row['combine_kb']} KB | {row['records_per_second']:,} |"
          for name, row in rows.items()),
        *(["", "Bytes per record by MySQL table:", "",
           "| store | " + " | ".join(parts) + " |", "| --- |" + " --- |" * len(parts),
           *(f"| {name} | " + " | ".join(f"{row['bytes_per_record_by_table'].get(part, 0):,}" for part in parts) + " |"
             for name, row in rows.items() if "bytes_per_record_by_table" in row)]
          if (parts := _parts(rows)) else []),
    ])


def _parts(rows: dict) -> list[str]:
    """The MySQL tables of the by-table figures, largest first."""
    sizes: dict[str, int] = {}
    for row in rows.values():
        for part, size in row.get("bytes_per_record_by_table", {}).items():
            sizes[part] = max(sizes.get(part, 0), size)
    return sorted(sizes, key=lambda part: -sizes[part])


if __name__ == "__main__":
    main()
