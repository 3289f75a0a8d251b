"""Dublin Core export: one ``oai_dc:dc`` element a record, valid against the OAI-PMH oai_dc schema.

Combine's ``combineExport --profile dc`` wrote a ``documentCollection`` of
``documentRecord`` elements; here each record holds one standard ``oai_dc:dc``
(schemas/oai_dc.xsd) so any OAI-PMH tool reads it. Its fields follow
Combine's XWI2XML export: the title; every meta element
that maps onto one of the fifteen Dublin Core elements (Combine's table in
XWI2XML.pm, plus ``dc.*`` names), keywords and other subjects split on
commas; the first 500 characters of the text as the description when the
page has none; the modification date; the MIME type; every URL as an
identifier; the language.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TextIO

from combine_scrapy.records.export.xmltext import escape, quote, xml_chars
from combine_scrapy.records.record import Record
from combine_scrapy.records.store import Deletion

OAI_DC_NAMESPACE = "http://www.openarchives.org/OAI/2.0/oai_dc/"
DC_NAMESPACE = "http://purl.org/dc/elements/1.1/"
OAI_DC_SCHEMA_LOCATION = f"{OAI_DC_NAMESPACE} http://www.openarchives.org/OAI/2.0/oai_dc.xsd"

# The fifteen elements, in the order the DCMI element set lists them.
ELEMENTS = (
    "title", "creator", "subject", "description", "publisher", "contributor", "date", "type",
    "format", "identifier", "source", "language", "relation", "coverage", "rights",
)
DESCRIPTION_CHARS = 500

# Meta names (lower-cased) and the Dublin Core element each maps onto: Combine's %dcMap.
META_TO_DC = {
    "abstract": "description", "author": "creator", "category": "subject", "classification": "subject",
    "content": "description", "content-language": "language", "content-type": "format",
    "copyright": "rights", "country": "coverage", "coverage": "coverage", "created": "date",
    "creation-date": "date", "creator": "creator", "description": "description", "doc-rights": "rights",
    "doc-type": "type", "document-classification": "subject", "document-rights": "rights",
    "documenttype": "type", "email": "publisher", "geo.country": "coverage", "identifier-url": "identifier",
    "keyword": "subject", "keywords": "subject", "language": "language", "location": "coverage",
    "mimetype": "type", "originator": "creator", "page-topic": "subject", "pd": "date", "progid": "format",
    "publisher": "publisher", "publisher-email": "publisher", "resource-type": "type", "rights": "rights",
    "subject": "subject", "summary": "description", "timecreated": "date", "timemodified": "date",
    "title": "title", "type": "type", "url": "identifier",
}
_DC_META = re.compile(r"dc(?:terms)?\.([a-z]+)")
_LIST_SEPARATOR = re.compile(r",\s*")


def dc_element(meta_name: str) -> str | None:
    """The Dublin Core element a ``<meta name>`` maps onto: ``dc.subject.keyword`` -> subject."""
    name = meta_name.strip().lower()
    match = _DC_META.match(name)
    if match:
        return match.group(1) if match.group(1) in ELEMENTS else None
    return META_TO_DC.get(name)


def w3cdtf(timestamp: float) -> str:
    """A Unix time as the W3C date-time profile DCMI recommends for dc:date."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def dc_fields(record: Record, urls: list[str]) -> list[tuple[str, str]]:
    """``(element, value)`` pairs of one record, in DCMI order, without blanks or repeats."""
    found: dict[str, list[str]] = {name: [] for name in ELEMENTS}
    found["title"].append(record.title)
    for name, values in record.meta.items():
        element = dc_element(name)
        if element is None:
            continue
        for value in values:
            found[element].extend(_LIST_SEPARATOR.split(value) if element == "subject" else [value])
    if not any(value.strip() for value in found["description"]):
        found["description"].append(record.text[:DESCRIPTION_CHARS])
    if record.modified is not None:
        found["date"].append(w3cdtf(record.modified))
    found["format"].append(record.mime_type)
    found["identifier"].extend(urls or [record.url])
    if record.language:
        found["language"].append(record.language)
    fields: list[tuple[str, str]] = []
    for element in ELEMENTS:
        seen: set[str] = set()
        for value in found[element]:
            value = " ".join(xml_chars(value).split())
            if value and value not in seen:
                seen.add(value)
                fields.append((element, value))
    return fields


def dc_record(record: Record, urls: list[str]) -> str:
    """One ``documentRecord`` holding the record's ``oai_dc:dc`` element."""
    lines = [f'<documentRecord id={quote(record.key)}>\n<oai_dc:dc xsi:schemaLocation="{OAI_DC_SCHEMA_LOCATION}">\n']
    lines.extend(f"  <dc:{element}>{escape(value)}</dc:{element}>\n" for element, value in dc_fields(record, urls))
    lines.append("</oai_dc:dc>\n</documentRecord>\n")
    return "".join(lines)


def deleted_record(deletion: Deletion) -> str:
    """A deleted record: ``documentRecord`` with OAI-PMH's ``status="deleted"``, when (W3CDTF) and its URLs."""
    urls = "".join(f"  <url>{escape(url)}</url>\n" for url in deletion.urls)
    return (
        f'<documentRecord id={quote(deletion.key)} status="deleted" datestamp="{w3cdtf(deletion.deleted)}">\n'
        f"{urls}</documentRecord>\n"
    )


def write_dc(records: Iterable[tuple[Record, list[str]]], out: TextIO, deletions: Iterable[Deletion] = ()) -> int:
    """Write ``(record, urls)`` pairs as a Dublin Core document, one record at a time, then the deleted
    records; returns how many records."""
    out.write(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<documentCollection version="1.1" xmlns:oai_dc="{OAI_DC_NAMESPACE}" xmlns:dc="{DC_NAMESPACE}"'
        ' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
    )
    count = 0
    for record, urls in records:
        out.write(dc_record(record, urls))
        count += 1
    for deletion in deletions:
        out.write(deleted_record(deletion))
    out.write("</documentCollection>\n")
    return count

