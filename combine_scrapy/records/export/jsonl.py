"""JSON Lines export: one record a line, every field of the record and all its URLs, streamed."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO

from combine_scrapy.records.export.xmltext import repair_surrogates
from combine_scrapy.records.record import Record
from combine_scrapy.records.store import Deletion

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


def _json_value(value: object) -> object:
    """A dataclass (a record, a link, a topic class) as an object of its fields; any other unknown type as text."""
    if dataclasses.is_dataclass(value):
        return _fields(value)
    return str(value)


def _fields(value: DataclassInstance | type[DataclassInstance]) -> dict[str, object]:
    return {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}


def record_document(record: Record, urls: list[str]) -> dict[str, object]:
    """Every field of the record (fields added later included) and its URLs."""
    document = _fields(record)
    document["urls"] = urls
    return document


def record_line(record: Record, urls: list[str]) -> str:
    """The record's JSON Lines line (without its line end)."""
    return repair_surrogates(json.dumps(record_document(record, urls), ensure_ascii=False, default=_json_value))


def record_values(record: Record, urls: list[str]) -> dict[str, object]:
    """The record as its JSON Lines line holds it, as plain values (text, numbers, lists, objects): what Scrapy's
    own feed formats (CSV, XML, JSON, ...) write of a record, so that they have the fields ``scrapy export`` writes."""
    values: dict[str, object] = json.loads(record_line(record, urls))
    return values


def deletion_document(deletion: Deletion) -> dict[str, object]:
    """A deleted record's line: its key, the URLs it had, when it was deleted, and ``"status": "deleted"``."""
    return {"key": deletion.key, "urls": deletion.urls, "deleted": deletion.deleted, "status": "deleted"}


def write_jsonl(records: Iterable[tuple[Record, list[str]]], out: TextIO, deletions: Iterable[Deletion] = ()) -> int:
    """Write ``(record, urls)`` pairs, one JSON object a line, then a line per deletion; returns the records written.

    Lone surrogates (text that no UTF-8 file can hold) become U+FFFD; values
    JSON has no type for (a date, bytes) are written as their ``str``.
    """
    count = 0
    for record, urls in records:
        out.write(record_line(record, urls))
        out.write("\n")
        count += 1
    for deletion in deletions:
        out.write(repair_surrogates(json.dumps(deletion_document(deletion), ensure_ascii=False)))
        out.write("\n")
    return count
