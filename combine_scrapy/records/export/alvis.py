"""ALVIS XML export, full and lightweight, written one record at a time.

``alvis`` is Combine's default export profile: the ALVIS enriched-document
format (namespace ``http://alvis.info/enriched/``), a ``documentRecord`` with
``acquisition`` holding ``acquisitionData`` (dates, server, URLs), the
original document (gzip, then base64) when the job saved it, the canonical
document, the metadata, the outlinks and the analysis (properties, topics).
Combine's documentation puts it at about 42 KB a record.

``alvis-light`` is Combine's compact native profile (``--profile combine``,
about 27 KB a record): the same facts flat under ``documentRecord``, without
the original document and without a namespace.

Both keep what XWI2XML.pm wrote: the title as the first meta, then only meta
that maps onto Dublin Core (named ``dc:ELEMENT``; subjects split on commas);
each outlink once per URL and anchor, with the MD5 of its target when the
target is itself a record; given the store's ``links_to``, the inlinks too
(stored links to any URL of the record, from other records, with the
linking record's MD5 and URL); a topic ``ALL`` with the page's total and
normalised scores before the classes. Dates are GMT ``YYYY-MM-DD hh:mm:ss``
(Combine forgot to zero-pad the hour; padded here).
"""

from __future__ import annotations

import base64
import gzip
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import TextIO
from urllib.parse import urlsplit

from combine_scrapy.records.export.dc import dc_element, deleted_record
from combine_scrapy.records.export.xmltext import cdata, escape, quote, repair_surrogates
from combine_scrapy.records.record import Record
from combine_scrapy.records.store import Deletion

ALVIS_NAMESPACE = "http://alvis.info/enriched/"

LinkTargets = Callable[[str], "str | None"]  # URL -> key of the record it serves, if any
Inlinks = Callable[[str], "list[tuple[str, str, str, str]]"]  # URL -> (key, url, anchor, kind) of stored links to it


def alvis_date(timestamp: float | None) -> str:
    if timestamp is None:
        return ""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _element(name: str, value: str | None, attributes: str = "") -> str:
    """``<name attributes>value</name>``, or nothing for a blank value, as Combine's ToXML."""
    if value is None or not value.strip():
        return ""
    return f"<{name}{attributes}>{escape(value)}</{name}>\n"


def _urls(urls: list[str]) -> str:
    return "<urls>\n" + "".join(_element("url", url) for url in urls) + "</urls>\n"


def _original_document(record: Record) -> str:
    if record.html is None:
        return ""
    html = repair_surrogates(record.html).encode("utf-8")
    packed = base64.encodebytes(gzip.compress(html, compresslevel=6, mtime=0))  # zlib's default, as Combine's memGzip
    return (
        f'<originalDocument mimeType={quote(record.mime_type)} compression="gzip" encoding="base64"'
        f' charSet="UTF-8">\n{packed.decode("ascii")}</originalDocument>\n'
    )


def _canonical_document(record: Record) -> str:
    return f"<canonicalDocument>\n<section>{cdata(record.text)}</section>\n</canonicalDocument>\n"


def _meta_data(record: Record) -> str:
    parts = ["<metaData>\n", _element("meta", record.title, ' name="title"')]
    for name, values in record.meta.items():
        element = dc_element(name)
        if element is None:
            continue
        attribute = f' name="dc:{element}"'
        for value in values:
            for part in value.split(",") if element == "subject" else (value,):
                parts.append(_element("meta", part.strip(), attribute))
    parts.append(_element("meta", record.mime_type, ' name="dc:format"'))
    parts.append("</metaData>\n")
    return "".join(parts)


def _link(kind: str, anchor: str, url: str, record_key: str | None) -> str:
    location = f" documentId={quote(record_key)}" if record_key else ""
    return f"<link type={quote(kind)}>\n{_element('anchorText', anchor)}<location{location}>{escape(url)}</location>\n</link>\n"


def _inlinks(record: Record, urls: list[str], inlinks: Inlinks) -> str:
    """Links from other records to any of the record's URLs, once per linking URL and anchor; nothing when none."""
    parts = []
    seen: set[tuple[str, str]] = set()
    for url in urls:
        for key, source, anchor, kind in inlinks(url):
            if key != record.key and (source, anchor) not in seen:
                seen.add((source, anchor))
                parts.append(_link(kind, anchor, source, key))
    return f"<inlinks>\n{''.join(parts)}</inlinks>\n" if parts else ""


def _links(record: Record, urls: list[str], link_targets: LinkTargets | None, inlinks: Inlinks | None) -> str:
    parts = ["<links>\n<outlinks>\n"]
    seen: set[tuple[str, str]] = set()
    for link in record.links:
        if (link.url, link.anchor) in seen:
            continue
        seen.add((link.url, link.anchor))
        parts.append(_link(link.kind, link.anchor, link.url, link_targets(link.url) if link_targets else None))
    parts.append("</outlinks>\n")
    if inlinks:
        parts.append(_inlinks(record, urls, inlinks))
    parts.append("</links>\n")
    return "".join(parts)


def _top_level_domain(url: str) -> str:
    """``se`` for ``http://www.lth.se/``; nothing for an IP address or a URL that does not parse."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return ""
    domain = host.rsplit(".", 1)[-1] if "." in host else ""
    return "" if domain.isdigit() else domain


def _analysis(record: Record) -> str:
    parts = [
        _element("property", _top_level_domain(record.url), ' name="topLevelDomain"'),
        _element("property", record.language, ' name="language"'),
        _element("property", record.country, ' name="country"'),
        _element("property", None if record.pagerank is None else repr(record.pagerank), ' name="pagerank"'),
        _element("property", None if record.ipagerank is None else repr(record.ipagerank), ' name="ipagerank"'),
        f'<topic absoluteScore="{_number(record.score)}" relativeScore="{_number(record.normalized)}">\n'
        "<class>ALL</class>\n</topic>\n",
    ]
    for topic in record.classes:
        parts.append(
            f'<topic absoluteScore="{_number(topic.absolute)}" relativeScore="{_number(topic.relative)}">\n'
            + _element("class", topic.name)
            + "".join(_element("terms", term) for term in topic.terms)
            + "</topic>\n"
        )
    return "".join(parts)


def _dates(record: Record) -> str:
    return "".join((
        _element("modifiedDate", alvis_date(record.modified)),
        _element("expiryDate", alvis_date(record.expires)),
        _element("checkedDate", alvis_date(record.checked)),
    ))


def alvis_record(
    record: Record, urls: list[str], link_targets: LinkTargets | None = None, inlinks: Inlinks | None = None
) -> str:
    """One ``documentRecord`` in the ALVIS enriched-document format."""
    return "".join((
        f"<documentRecord id={quote(record.key)}>\n<acquisition>\n<acquisitionData>\n",
        _dates(record),
        _element("httpServer", record.server),
        _urls(urls),
        "</acquisitionData>\n",
        _original_document(record),
        _canonical_document(record),
        _meta_data(record),
        _links(record, urls, link_targets, inlinks),
        "<analysis>\n",
        _analysis(record),
        "</analysis>\n</acquisition>\n</documentRecord>\n",
    ))


def alvis_light_record(
    record: Record, urls: list[str], link_targets: LinkTargets | None = None, inlinks: Inlinks | None = None
) -> str:
    """One ``documentRecord`` in Combine's compact native format."""
    headings = "".join(_element("heading", heading) for heading in record.headings)
    return "".join((
        f"<documentRecord id={quote(record.key)}>\n",
        _dates(record),
        _element("mimeType", record.mime_type),
        _element("httpServer", record.server),
        _urls(urls),
        _canonical_document(record),
        _meta_data(record),
        _links(record, urls, link_targets, inlinks),
        f"<headings>\n{headings}</headings>\n" if headings else "",
        _analysis(record),
        "</documentRecord>\n",
    ))


def _write(
    records: Iterable[tuple[Record, list[str]]],
    out: TextIO,
    collection: str,
    render: Callable[[Record, list[str], LinkTargets | None, Inlinks | None], str],
    link_targets: LinkTargets | None,
    inlinks: Inlinks | None,
    deletions: Iterable[Deletion] = (),
) -> int:
    out.write(f'<?xml version="1.0" encoding="UTF-8"?>\n{collection}\n')
    count = 0
    for record, urls in records:
        out.write(render(record, urls, link_targets, inlinks))
        count += 1
    for deletion in deletions:
        out.write(deleted_record(deletion))
    out.write("</documentCollection>\n")
    return count


def write_alvis(
    records: Iterable[tuple[Record, list[str]]],
    out: TextIO,
    link_targets: LinkTargets | None = None,
    inlinks: Inlinks | None = None,
    deletions: Iterable[Deletion] = (),
) -> int:
    """Write ``(record, urls)`` pairs as an ALVIS documentCollection, then the deleted records; returns how many records."""
    collection = f'<documentCollection version="1.1" xmlns="{ALVIS_NAMESPACE}">'
    return _write(records, out, collection, alvis_record, link_targets, inlinks, deletions)


def write_alvis_light(
    records: Iterable[tuple[Record, list[str]]],
    out: TextIO,
    link_targets: LinkTargets | None = None,
    inlinks: Inlinks | None = None,
    deletions: Iterable[Deletion] = (),
) -> int:
    """Write ``(record, urls)`` pairs in the lightweight (Combine native) format, then the deleted records;
    returns how many records."""
    return _write(records, out, '<documentCollection version="1.1">', alvis_light_record, link_targets, inlinks, deletions)
