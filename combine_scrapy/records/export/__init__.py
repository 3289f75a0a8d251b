"""Exports of a job's records: Dublin Core (oai_dc), ALVIS XML full and lightweight, JSON Lines, Markdown.

Every writer takes ``(record, urls)`` pairs and writes each record as it is
read, so memory stays flat however many records there are. An incremental
export (``--since``) also lists the records deleted since then, after the
others, each as a deleted entry (key, URLs, time), as an OAI-PMH repository
marks a deleted record with ``status="deleted"``. With ``text="main"`` a
record's text is its main content (the article without menus) where it has
one, its full text otherwise (a PDF, a page stored before main contents were).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO

from combine_scrapy.records.export.alvis import Inlinks, LinkTargets, write_alvis, write_alvis_light
from combine_scrapy.records.export.dc import write_dc
from combine_scrapy.records.export.jsonl import write_jsonl
from combine_scrapy.records.export.markdown import write_markdown
from combine_scrapy.records.export.select import Selection
from combine_scrapy.records.record import Record
from combine_scrapy.records.store import Deletion, RecordReader

FORMATS = ("dc", "alvis", "alvis-light", "jsonl", "markdown")
#: Which text a record is exported with: all its text, or its main content.
TEXTS = ("all", "main")


def with_text(records: Iterable[tuple[Record, list[str]]], text: str) -> Iterator[tuple[Record, list[str]]]:
    """The records with ``text`` as their text: ``all`` as stored, ``main`` their main content where they have one."""
    if text not in TEXTS:
        raise ValueError(f"unknown text {text!r}: use one of {', '.join(TEXTS)}")
    for record, urls in records:
        if text == "main" and record.main_text is not None:
            record = dataclasses.replace(record, text=record.main_text)
        yield record, urls


def write_records(
    format: str,
    records: Iterable[tuple[Record, list[str]]],
    out: TextIO,
    link_targets: LinkTargets | None = None,
    inlinks: Inlinks | None = None,
    deletions: Iterable[Deletion] = (),
    text: str = "all",
) -> int:
    """Write the records in ``format``, then ``deletions`` as deleted entries; ``link_targets`` finds the
    record a link leads to, ``inlinks`` the stored links that lead to a URL (ALVIS); ``text`` is the text
    written (:data:`TEXTS`; Markdown is always the main content). Returns the records written."""
    if format == "markdown":
        return write_markdown(records, out, deletions)
    records = with_text(records, text)
    if format == "dc":
        return write_dc(records, out, deletions)
    if format == "alvis":
        return write_alvis(records, out, link_targets, inlinks, deletions)
    if format == "alvis-light":
        return write_alvis_light(records, out, link_targets, inlinks, deletions)
    if format == "jsonl":
        return write_jsonl(records, out, deletions)
    raise ValueError(f"unknown export format {format!r}: use one of {', '.join(FORMATS)}")


def export_store(
    store: RecordReader,
    format: str,
    out: TextIO,
    selection: Selection = Selection(),
    on_record: Callable[[], object] = lambda: None,
    order: str = "id",
    deletions: Iterable[Deletion] = (),
    text: str = "all",
) -> int:
    """Write the store's selected records in ``format``, in ``order`` (``id``: oldest first, or a stored rank:
    ``pagerank``, ``ipagerank``), then ``deletions``; ``on_record`` is called for every record read."""

    def selected() -> Iterator[tuple[Record, list[str]]]:
        for record in store.records(order):
            on_record()
            if selection.matches(record):
                yield record, store.urls(record.key)

    return write_records(format, selected(), out, store.key_for_url, store.links_to, deletions, text)
