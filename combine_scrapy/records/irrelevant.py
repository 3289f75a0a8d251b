"""saveIrrelevant = 1: keep the pages the topic filter turned down, as ACHE keeps its negative pages.

They go to ``data/<job>/irrelevant.sqlite``, apart from the records, so no
export, search or record count ever sees them; ``scrapy train JOB --crawled``
reads them as negative examples beside the job's records as positive ones, so
a job can learn an SVM filter from its own crawl. Each is kept as the topic
filter read it (title, meta, headings, text; the main content block with
``topicText = main``), with its score and when it was fetched. A page that
turns relevant later, or goes (404, robots.txt), leaves the file; at most
``IrrelevantMaxPages`` pages are kept (``irrelevant/limit`` counts the
others), and the text is stored compressed.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from combine_scrapy.records.record import record_document
from combine_scrapy.records.store import open_store
from combine_scrapy.sqlitetx import use_write_ahead_log
from combine_scrapy.topic.text import Document

if TYPE_CHECKING:
    pass

IRRELEVANT_FILE = "irrelevant.sqlite"
PAGE = 500

SCHEMA = """
CREATE TABLE IF NOT EXISTS pages (
    url TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    meta TEXT NOT NULL,
    headings TEXT NOT NULL,
    text BLOB NOT NULL,          -- zlib-compressed UTF-8
    score REAL NOT NULL,
    checked REAL NOT NULL
);
"""


@dataclass(frozen=True)
class IrrelevantPage:
    document: Document
    score: float
    checked: float


class IrrelevantPages:
    """A job's turned-down pages, one row a URL (the latest fetch), in one SQLite file."""

    def __init__(self, path: str | Path, max_pages: int | None = None):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.path = str(path)
        self.max_pages = max_pages
        self._db = sqlite3.connect(self.path, isolation_level=None)
        use_write_ahead_log(self._db)
        self._db.executescript(SCHEMA)
        self._count: int = self._db.execute("SELECT COUNT(*) FROM pages").fetchone()[0]

    def keep(self, page: IrrelevantPage) -> bool:
        """Keep (or update) a page; False when the file is full and the URL new."""
        document = page.document
        known = self._db.execute("SELECT 1 FROM pages WHERE url = ?", (document.url,)).fetchone()
        if not known and self.max_pages is not None and self._count >= self.max_pages:
            return False
        self._db.execute(
            "INSERT OR REPLACE INTO pages (url, title, meta, headings, text, score, checked) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (document.url, document.title, document.meta, document.headings,
             zlib.compress(document.text.encode("utf-8", "surrogatepass")), page.score, page.checked),
        )
        self._count += not known
        return True

    def forget(self, url: str) -> bool:
        removed = self._db.execute("DELETE FROM pages WHERE url = ?", (url,)).rowcount > 0
        self._count -= removed
        return removed

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[IrrelevantPage]:
        """Every page, by URL, read PAGE rows at a time."""
        last = ""
        while rows := self._db.execute(
            "SELECT url, title, meta, headings, text, score, checked FROM pages WHERE url > ? ORDER BY url LIMIT ?",
            (last, PAGE),
        ).fetchall():
            for url, title, meta, headings, text, score, checked in rows:
                document = Document(url, title, meta, headings, zlib.decompress(text).decode("utf-8", "surrogatepass"))
                yield IrrelevantPage(document, score, checked)
            last = rows[-1][0]

    def close(self) -> None:
        self._db.close()


def crawl_examples(
    job: str, data_dir: str | Path, mysql_url: str | None = None, main_content: bool = False
) -> tuple[list[Document], list[Document]]:
    """A job's own examples: its records (positive) and the irrelevant pages it kept (negative).

    Raises FileNotFoundError, naming what is missing, when the job has no records or kept no irrelevant page.
    """
    path = Path(data_dir) / job / IRRELEVANT_FILE
    if not path.exists():
        raise FileNotFoundError(f"job {job} kept no irrelevant pages ({path} does not exist): crawl it with saveIrrelevant = 1")
    pages = IrrelevantPages(path)
    try:
        negative = [page.document for page in pages]
    finally:
        pages.close()
    store = open_store(job, data_dir, mysql_url, create=False)
    try:
        positive = [record_document(record, main_content) for record in store]
    finally:
        store.close()
    return positive, negative
