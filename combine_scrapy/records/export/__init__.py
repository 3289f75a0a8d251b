"""Exports of a job's records: Dublin Core (oai_dc), ALVIS XML full and lightweight, JSON Lines.

Every writer takes ``(record, urls)`` pairs and writes each record as it is
read, so memory stays flat however many records there are. An incremental
export (``--since``) also lists the records deleted since then, after the
others, each as a deleted entry (key, URLs, time), as an OAI-PMH repository
marks a deleted record with ``status="deleted"``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TextIO

from combine_scrapy.records.export.alvis import Inlinks, LinkTargets, write_alvis, write_alvis_light
from combine_scrapy.records.export.dc import write_dc
from combine_scrapy.records.export.jsonl import write_jsonl
from combine_scrapy.records.export.select import Selection
from combine_scrapy.records.record import Record
from combine_scrapy.records.store import Deletion, RecordReader

FORMATS = ("dc", "alvis", "alvis-light", "jsonl")


def write_records(
    format: str,
    records: Iterable[tuple[Record, list[str]]],
    out: TextIO,
    link_targets: LinkTargets | None = None,
    inlinks: Inlinks | None = None,
    deletions: Iterable[Deletion] = (),
) -> int:
    """Write the records in ``format``, then ``deletions`` as deleted entries; ``link_targets`` finds the
    record a link leads to, ``inlinks`` the stored links that lead to a URL (ALVIS). Returns the records written."""
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
    on_record: Callable[[], None] = lambda: None,
    order: str = "id",
    deletions: Iterable[Deletion] = (),
) -> int:
    """Write the store's selected records in ``format``, in ``order`` (``id``: oldest first, or a stored rank:
    ``pagerank``, ``ipagerank``), then ``deletions``; ``on_record`` is called for every record read."""

    def selected() -> Iterator[tuple[Record, list[str]]]:
        for record in store.records(order):
            on_record()
            if selection.matches(record):
                yield record, store.urls(record.key)

    return write_records(format, selected(), out, store.key_for_url, store.links_to, deletions)
