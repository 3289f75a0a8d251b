"""WARC/1.1 output: every HTTP exchange of a crawl as a request and a response record, as archives keep them.

What is recorded (what Scrapy gives; the difference from the wire is said in
the records themselves):

- the request line, and the headers as the request left Scrapy's downloader
  middlewares (names as Scrapy writes them), with the ``Host`` header the HTTP
  client adds;
- the response status line (the protocol as the server answered, the
  standard reason phrase: Scrapy does not keep the server's own), the headers
  as received, and the body after Twisted undid the chunked transfer coding
  but before any content decoding: a gzip or brotli body is archived as the
  server sent it, with its ``Content-Encoding``. A ``Transfer-Encoding`` header
  no longer describes the archived body, so it is kept renamed as
  ``X-Crawler-Transfer-Encoding``;
- a body the crawl stopped reading (UAmaxSize, robots.txt's 500 KiB) is marked
  ``WARC-Truncated: length``, one the connection cut ``WARC-Truncated: disconnect``;
- a page rendered in the browser (``Render`` in combine.cfg): its rendered DOM
  as a ``conversion`` record (``text/html; charset=utf-8``) that refers to the
  response record of its HTTP fetch (``WARC-Refers-To``) and names the
  rendering in ``WARC-Crawler-Rendered``; it is not in the CDXJ index, which
  lists what the server sent.

Each record is gzipped on its own (a ``.warc.gz`` any WARC reader seeks in);
a file starts with a ``warcinfo`` record, is written as ``NAME.warc.gz.open``
and renamed when closed, after passing the job's size bound. Each file gets a
CDXJ index ``NAME.warc.gz.cdxj`` (one line a response record, SURT-sorted, in
pywb's layout: SURT, 14-digit time, JSON with url, mime, status, digest,
length, offset, filename).
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.client import responses as REASONS
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, TextIO
from urllib.parse import urlsplit

from surt import surt
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

if TYPE_CHECKING:
    from warcio.recordloader import ArcWarcRecord

WARC_VERSION = "1.1"
#: Heritrix's default: a WARC file is closed once it reaches about a gigabyte.
DEFAULT_MAX_SIZE = 1_000_000_000
OPEN_SUFFIX = ".open"
CDXJ_SUFFIX = ".cdxj"
#: Hop-by-hop framing that no longer describes the archived body.
_RENAMED = {"transfer-encoding": "X-Crawler-Transfer-Encoding"}


@dataclass(frozen=True)
class Exchange:
    """One HTTP request and the response it got (see the module docstring for what each field holds)."""

    url: str
    method: str
    request_headers: list[tuple[str, str]]
    status: int
    protocol: str
    response_headers: list[tuple[str, str]]
    body: bytes
    fetched_at: float
    request_body: bytes = b""
    ip_address: str | None = None
    truncated: str | None = None  # WARC-Truncated: "length", "disconnect"


@dataclass(frozen=True)
class ArchivedResponse:
    """Where a response record went: its file, offset and length in bytes (gzipped), and its WARC-Record-ID."""

    filename: str
    offset: int
    length: int
    record_id: str = ""


def _request_target(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return target, parts.netloc


def _warc_date(moment: float) -> str:
    """WARC-Date in UTC with microseconds, as WARC/1.1 allows."""
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def cdxj_line(url: str, moment: float, status: int, mime: str, digest: str, where: ArchivedResponse) -> str:
    """One CDXJ index line for a response record fetched at ``moment``, as pywb's indexer writes it."""
    fields = {
        "url": url,
        "mime": mime.split(";", 1)[0].strip().lower() or "unk",
        "status": str(status),
        "digest": digest.split(":", 1)[-1],
        "length": str(where.length),
        "offset": str(where.offset),
        "filename": where.filename,
    }
    stamp = datetime.fromtimestamp(moment, UTC).strftime("%Y%m%d%H%M%S")
    return f"{surt(url)} {stamp} {json.dumps(fields, ensure_ascii=False)}\n"


@dataclass
class _OpenFile:
    path: Path
    out: BinaryIO
    writer: WARCWriter
    index: TextIO


@dataclass
class WarcArchive:
    """Writes exchanges into size-rotated ``.warc.gz`` files under ``directory``, each with its CDXJ index."""

    directory: Path
    prefix: str
    max_size: int = DEFAULT_MAX_SIZE
    software: str = "combine-scrapy"
    operator: str = ""
    description: str = ""
    files_written: list[Path] = field(default_factory=list)
    _current: _OpenFile | None = None
    _serial: int = 0

    def write(self, exchange: Exchange) -> ArchivedResponse:
        """Append the exchange's request and response records; returns where the response went."""
        current = self._current or self._open()
        writer = current.writer
        response = self._response_record(writer, exchange)
        request = self._request_record(writer, exchange, response.rec_headers.get_header("WARC-Record-ID"))
        offset = current.out.tell()
        writer.write_record(response)
        where = ArchivedResponse(
            current.path.name, offset, current.out.tell() - offset, response.rec_headers.get_header("WARC-Record-ID") or ""
        )
        writer.write_record(request)
        current.out.flush()
        current.index.write(cdxj_line(
            exchange.url,
            exchange.fetched_at,
            exchange.status,
            response.http_headers.get_header("Content-Type") or "",
            response.rec_headers.get_header("WARC-Payload-Digest") or "",
            where,
        ))
        if current.out.tell() >= self.max_size:
            self._close_current()
        return where

    def write_conversion(self, url: str, html: bytes, fetched_at: float, rendered_by: str, refers_to: str = "") -> ArchivedResponse:
        """Append a page's rendered DOM (UTF-8 HTML) as a conversion record, referring to its response record."""
        current = self._current or self._open()
        warc_headers = {
            "WARC-Date": _warc_date(fetched_at),
            "Content-Type": "text/html; charset=utf-8",
            "WARC-Crawler-Rendered": rendered_by,
        }
        if refers_to:
            warc_headers["WARC-Refers-To"] = refers_to
        record = current.writer.create_warc_record(
            url, "conversion", payload=BytesIO(html), length=len(html), warc_headers_dict=warc_headers,
        )
        offset = current.out.tell()
        current.writer.write_record(record)
        where = ArchivedResponse(current.path.name, offset, current.out.tell() - offset, record.rec_headers.get_header("WARC-Record-ID") or "")
        current.out.flush()
        if current.out.tell() >= self.max_size:
            self._close_current()
        return where

    def close(self) -> None:
        if self._current is not None:
            self._close_current()

    # -- records ----------------------------------------------------------------

    def _response_record(self, writer: WARCWriter, exchange: Exchange) -> ArcWarcRecord:
        reason = REASONS.get(exchange.status, "")
        headers = [(_RENAMED.get(name.lower(), name), value) for name, value in exchange.response_headers]
        http_headers = StatusAndHeaders(f"{exchange.status} {reason}".strip(), headers, protocol=exchange.protocol)
        warc_headers = {"WARC-Date": _warc_date(exchange.fetched_at)}
        if exchange.ip_address:
            warc_headers["WARC-IP-Address"] = exchange.ip_address
        if exchange.truncated:
            warc_headers["WARC-Truncated"] = exchange.truncated
        return writer.create_warc_record(
            exchange.url, "response", payload=BytesIO(exchange.body), length=len(exchange.body),
            http_headers=http_headers, warc_headers_dict=warc_headers,
        )

    def _request_record(self, writer: WARCWriter, exchange: Exchange, response_id: str) -> ArcWarcRecord:
        target, netloc = _request_target(exchange.url)
        headers = list(exchange.request_headers)
        if not any(name.lower() == "host" for name, _ in headers):
            headers.insert(0, ("Host", netloc))
        http_headers = StatusAndHeaders(f"{exchange.method} {target} HTTP/1.1", headers, is_http_request=True)
        warc_headers = {"WARC-Date": _warc_date(exchange.fetched_at), "WARC-Concurrent-To": response_id}
        return writer.create_warc_record(
            exchange.url, "request", payload=BytesIO(exchange.request_body), length=len(exchange.request_body),
            http_headers=http_headers, warc_headers_dict=warc_headers,
        )

    # -- files ------------------------------------------------------------------

    def _open(self) -> _OpenFile:
        self.directory.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S%f")[:17]
        while True:
            self._serial += 1
            name = f"{self.prefix}-{stamp}-{self._serial:05d}-{os.getpid()}.warc.gz"
            path = self.directory / name
            if not path.exists() and not (self.directory / (name + OPEN_SUFFIX)).exists():
                break
        out = open(self.directory / (name + OPEN_SUFFIX), "xb")
        writer = WARCWriter(out, gzip=True, warc_version=WARC_VERSION)
        info = {
            "software": self.software,
            "format": "WARC File Format 1.1",
            "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
            "hostname": socket.gethostname(),
            "robots": "obey",
        }
        if self.operator:
            info["operator"] = self.operator
        if self.description:
            info["description"] = self.description
        writer.write_record(writer.create_warcinfo_record(name, info))
        index = open(self.directory / (name + CDXJ_SUFFIX + OPEN_SUFFIX), "w", encoding="utf-8")
        self._current = _OpenFile(path, out, writer, index)
        return self._current

    def _close_current(self) -> None:
        """Close the file, rename it to its final name and write its index sorted."""
        current, self._current = self._current, None
        if current is None:
            return
        current.out.close()
        current.index.close()
        os.replace(current.path.with_name(current.path.name + OPEN_SUFFIX), current.path)
        unsorted = current.path.with_name(current.path.name + CDXJ_SUFFIX + OPEN_SUFFIX)
        lines = sorted(unsorted.read_text(encoding="utf-8").splitlines(keepends=True))
        index = current.path.with_name(current.path.name + CDXJ_SUFFIX)
        index.write_text("".join(lines), encoding="utf-8")
        unsorted.unlink()
        self.files_written.append(current.path)

