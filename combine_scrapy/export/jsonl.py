"""JSON Lines export: one record a line, with all its URLs, streamed in constant memory."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import TextIO

from combine_scrapy.record import Record


def record_document(record: Record, urls: list[str]) -> dict:
    document = dataclasses.asdict(record)
    document["urls"] = urls
    return document


def write_jsonl(records: Iterable[tuple[Record, list[str]]], out: TextIO) -> int:
    """Write ``(record, urls)`` pairs, one JSON object a line; returns how many."""
    count = 0
    for record, urls in records:
        out.write(json.dumps(record_document(record, urls), ensure_ascii=False))
        out.write("\n")
        count += 1
    return count
