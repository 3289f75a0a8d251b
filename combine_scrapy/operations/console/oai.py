"""An OAI-PMH 2.0 data provider over a job's records (the protocol of 2002, revised 2015).

Verbs: Identify, ListMetadataFormats, ListSets, ListIdentifiers, ListRecords,
GetRecord. Metadata: ``oai_dc``, the Dublin Core of ``scrapy export --format
dc``. Sets: the topic classes, their dotted hierarchy written the OAI way
(``CP.Drosera`` is set ``CP:Drosera``, inside set ``CP``). Datestamps: when
the record last changed (checked again, rescored, ranked, a URL added or
gone; the store's ``changed``), to the second, UTC. Lists longer than the page
size go in pages joined by resumption tokens; deleted records are listed
(``status="deleted"``) when the store keeps tombstones. Errors are the
protocol's codes. Responses validate against schemas/OAI-PMH.xsd and the
oai_dc schema, whatever the request: an argument XML cannot hold (a control
character, U+FFFE) or of the wrong syntax is a badArgument, a forged token a
badResumptionToken, and the request's arguments are echoed only when they
are valid (section 3.6 of the protocol).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol
from urllib.parse import quote

from lxml import etree

from combine_scrapy.records.export.dc import DC_NAMESPACE, OAI_DC_NAMESPACE, dc_fields
from combine_scrapy.records.store import RecordListings, RecordReader
from combine_scrapy.records.store.listing import RecordHead, Tombstone

OAI_NAMESPACE = "http://www.openarchives.org/OAI/2.0/"
XSI_NAMESPACE = "http://www.w3.org/2001/XMLSchema-instance"
OAI_SCHEMA = "http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd"
OAI_DC_SCHEMA = "http://www.openarchives.org/OAI/2.0/oai_dc.xsd"
GRANULARITY = "YYYY-MM-DDThh:mm:ssZ"
DAY = 86400

#: metadataPrefix -> (schema, namespace): what ListMetadataFormats offers.
FORMATS = {"oai_dc": (OAI_DC_SCHEMA, OAI_DC_NAMESPACE)}

LIST_VERBS = ("ListIdentifiers", "ListRecords")
#: verb -> (required arguments, optional arguments); resumptionToken, where allowed, is exclusive.
VERBS = {
    "Identify": (set(), set()),
    "ListMetadataFormats": (set(), {"identifier"}),
    "ListSets": (set(), {"resumptionToken"}),
    "GetRecord": ({"identifier", "metadataPrefix"}, set()),
    "ListIdentifiers": ({"metadataPrefix"}, {"from", "until", "set", "resumptionToken"}),
    "ListRecords": ({"metadataPrefix"}, {"from", "until", "set", "resumptionToken"}),
}

#: Arguments and bytes of a request at most (the protocol has six arguments; a request with more is a badArgument).
MAX_ARGUMENTS = 16
MAX_REQUEST_BYTES = 16 * 1024
#: Largest id, cursor or position a resumption token may carry (SQLite's integers); the moments a from or until
#: argument can give (0001-01-01 to the day after 9999-12-31).
_MAX_INTEGER = 2**63 - 1
_MOMENTS = (-62_135_596_800, 253_402_387_200)

_SET_SEGMENT = re.compile(r"[A-Za-z0-9\-_.!~*'()]+")
_SET_UNSAFE = re.compile(r"[^A-Za-z0-9\-_!*'()]")  # '.' separates classes, '~' starts an escape
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_SECOND = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
#: The schema's metadataPrefix; an identifier is a URI with a scheme (RFC 3986 characters, escapes well formed,
#: and non-ASCII ones, as anyURI takes an IRI).
_PREFIX = re.compile(r"[A-Za-z0-9\-_.!~*'()]+")
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-Fa-f]{2}|[^\x00-\x7f])+")
# What XML 1.0 cannot hold: most control characters, surrogates, U+FFFE and U+FFFF.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


class OaiError(Exception):
    """One of the protocol's error conditions: ``code`` is its name, the message says what was wrong."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


def shown(text: str, limit: int = 80) -> str:
    """``text`` quoted for a message, cut to ``limit`` characters, with what XML cannot hold escaped."""
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", repr(text[:limit]))


def set_spec(topic_class: str) -> str | None:
    """The setSpec of a topic class: dots become the OAI hierarchy's colons, other unsafe characters ``~HH``.

    None for a class no setSpec can name (an empty segment).
    """
    segments = topic_class.split(".")
    if not all(segments):
        return None
    return ":".join(
        _SET_UNSAFE.sub(lambda m: "".join(f"~{byte:02X}" for byte in m.group().encode("utf-8")), segment)
        for segment in segments
    )


def topic_class(spec: str) -> str:
    """The topic class a setSpec names (the inverse of ``set_spec``); OaiError for a malformed spec."""
    segments = spec.split(":")
    if not all(_SET_SEGMENT.fullmatch(segment) for segment in segments):
        raise OaiError("badArgument", f"set {shown(spec)} is not a setSpec")
    try:
        return ".".join(
            re.sub(rb"~([0-9A-F]{2})", lambda m: bytes([int(m.group(1), 16)]), segment.encode()).decode("utf-8")
            for segment in segments
        )
    except UnicodeDecodeError:
        raise OaiError("badArgument", f"set {shown(spec)} is not a setSpec this repository writes") from None


def datestamp(moment: float) -> str:
    return datetime.fromtimestamp(int(moment), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_datestamp(text: str, name: str) -> tuple[float, int]:
    """A from/until argument as ``(Unix time, length of its granularity in seconds)``."""
    if _SECOND.fullmatch(text):
        pattern, step = "%Y-%m-%dT%H:%M:%SZ", 1
    elif _DAY.fullmatch(text):
        pattern, step = "%Y-%m-%d", DAY
    else:
        raise OaiError("badArgument", f"{name} {shown(text)}: use YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ")
    try:
        moment = datetime.strptime(text, pattern).replace(tzinfo=UTC)
    except ValueError:
        raise OaiError("badArgument", f"{name} {shown(text)} is not a date") from None
    return moment.timestamp(), step


@dataclass(frozen=True)
class ListRequest:
    """A list's selection and where the next page starts (what a resumption token carries)."""

    prefix: str
    since: float | None = None
    until: float | None = None     # exclusive
    topic_class: str | None = None
    after_id: int = 0              # last record listed
    deleted_from: int | None = None  # None: still listing records; else the next tombstone's position
    cursor: int = 0                # items listed before this page

    def token(self) -> str:
        state = [self.prefix, self.since, self.until, self.topic_class, self.after_id, self.deleted_from, self.cursor]
        return base64.urlsafe_b64encode(json.dumps(state, separators=(",", ":")).encode()).decode().rstrip("=")

    @classmethod
    def from_token(cls, token: str) -> ListRequest:
        """The list a token continues; badResumptionToken for anything this repository could not have written
        (NaN or Infinity, a negative or huge cursor, a moment past year 9999, the wrong types)."""
        try:
            if len(token) > MAX_REQUEST_BYTES:
                raise ValueError
            state = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)), parse_constant=_no_constant)
            prefix, since, until, topic_class, after_id, deleted_from, cursor = state
            if not isinstance(prefix, str) or (topic_class is not None and not isinstance(topic_class, str)):
                raise ValueError
            for moment in (since, until):
                if moment is not None and not (_is_number(moment) and _MOMENTS[0] <= moment <= _MOMENTS[1]):
                    raise ValueError
            for count in (after_id, cursor, 0 if deleted_from is None else deleted_from):
                if not (isinstance(count, int) and not isinstance(count, bool) and 0 <= count <= _MAX_INTEGER):
                    raise ValueError
            if _NOT_XML.search(prefix) or (topic_class is not None and _NOT_XML.search(topic_class)):
                raise ValueError
            return cls(prefix, since, until, topic_class, after_id, deleted_from, cursor)
        except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
            raise OaiError("badResumptionToken", f"resumptionToken {shown(token)} is not one this repository gave") from None


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} in a resumption token")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class ListedRecords(RecordReader, RecordListings, Protocol):
    """What the provider reads of a record store: its lists, and the records and URLs they name."""


class OaiProvider:
    """Answers OAI-PMH requests from a job's records: ``respond(arguments, base_url)`` gives the XML."""

    def __init__(
        self,
        store: ListedRecords,
        *,
        repository_name: str,
        identifier_prefix: str,
        admin_email: str,
        page_size: int = 100,
        clock: Callable[[], float] = time.time,
    ):
        if page_size < 1:
            raise ValueError(f"OAI page size must be at least 1, got {page_size}")
        self.index = store.listing
        self.store = store
        self.repository_name = repository_name
        self.identifier_prefix = identifier_prefix
        self.admin_email = admin_email
        self.page_size = page_size
        self.clock = clock

    @classmethod
    def for_job(cls, store: ListedRecords, job: str, admin_email: str, page_size: int = 100) -> OaiProvider:
        return cls(
            store,
            repository_name=f"combine-scrapy job {job}",
            identifier_prefix=f"oai:combine-scrapy:{quote(job, safe='')}:",
            admin_email=admin_email,
            page_size=page_size,
        )

    # -- the request --------------------------------------------------------------

    def respond(self, arguments: list[tuple[str, str]], base_url: str) -> bytes:
        """The response document to one request (its arguments in the order they came)."""
        root, request = self._envelope(base_url)
        try:
            verb, values = self._check(arguments)
            for name, value in values.items():
                request.set(name, value)
            request.set("verb", verb)
            root.append(self._Identify(base_url) if verb == "Identify" else getattr(self, f"_{verb}")(values))
        except OaiError as e:
            if e.code in ("badVerb", "badArgument"):  # the request is echoed only when it was understood
                request.attrib.clear()
            error = self._add(root, "error", str(e))
            error.set("code", e.code)
        return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)

    def refuse(self, message: str, base_url: str) -> bytes:
        """A badArgument answer to a request that was not even read (too large, too many arguments)."""
        root, _ = self._envelope(base_url)
        self._add(root, "error", message).set("code", "badArgument")
        return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)

    def _envelope(self, base_url: str) -> tuple[etree._Element, etree._Element]:
        """The response's root with its responseDate, and its (still empty) request element."""
        root = etree.Element(f"{{{OAI_NAMESPACE}}}OAI-PMH", nsmap={None: OAI_NAMESPACE, "xsi": XSI_NAMESPACE})
        root.set(f"{{{XSI_NAMESPACE}}}schemaLocation", f"{OAI_NAMESPACE} {OAI_SCHEMA}")
        self._add(root, "responseDate", datestamp(self.clock()))
        return root, self._add(root, "request", _NOT_XML.sub("", base_url))

    def _check(self, arguments: list[tuple[str, str]]) -> tuple[str, dict[str, str]]:
        """The verb and its arguments, each of a syntax the schema lets the response echo."""
        values: dict[str, str] = {}
        for name, value in arguments:
            if name in values:
                raise OaiError("badArgument" if name != "verb" else "badVerb", f"argument {shown(name)} is repeated")
            values[name] = value
        verb = values.pop("verb", None)
        if verb not in VERBS:
            raise OaiError("badVerb", "no verb given" if verb is None else f"{shown(verb)} is not an OAI-PMH verb")
        required, optional = VERBS[verb]
        unknown = set(values) - required - optional
        if unknown:
            raise OaiError("badArgument", f"{verb} takes no argument {', '.join(map(shown, sorted(unknown)))}")
        for name, value in values.items():
            if _NOT_XML.search(value):
                raise OaiError("badArgument", f"{name} {shown(value)} holds a character XML cannot carry")
        if "metadataPrefix" in values and not _PREFIX.fullmatch(values["metadataPrefix"]):
            raise OaiError("badArgument", f"metadataPrefix {shown(values['metadataPrefix'])} is not a metadataPrefix")
        if "identifier" in values and not _IDENTIFIER.fullmatch(values["identifier"]):
            raise OaiError("badArgument", f"identifier {shown(values['identifier'])} is not a URI")
        if "resumptionToken" in values:
            if len(values) > 1:
                raise OaiError("badArgument", "resumptionToken is an exclusive argument")
        else:
            missing = required - set(values)
            if missing:
                raise OaiError("badArgument", f"{verb} needs {', '.join(sorted(missing))}")
        return verb, values

    # -- the verbs ----------------------------------------------------------------

    def _Identify(self, base_url: str) -> etree._Element:
        element = etree.Element(f"{{{OAI_NAMESPACE}}}Identify")
        earliest = [moment for moment in (self.index.earliest(),) if moment is not None]
        earliest += [stone.deleted for stone in self.index.tombstones()[:1]]
        for name, value in (
            ("repositoryName", self.repository_name),
            ("baseURL", base_url),
            ("protocolVersion", "2.0"),
            ("adminEmail", self.admin_email),
            ("earliestDatestamp", datestamp(min(earliest) if earliest else self.clock())),
            ("deletedRecord", "transient"),  # scrapy export --reset forgets deletions
            ("granularity", GRANULARITY),
        ):
            self._add(element, name, value)
        return element

    def _ListMetadataFormats(self, values: dict[str, str]) -> etree._Element:
        if "identifier" in values:
            key = self._key(values["identifier"])
            if self.index.head(key) is None and not self._tombstone(key):
                raise OaiError("idDoesNotExist", f"no record {shown(values['identifier'])}")
        element = etree.Element(f"{{{OAI_NAMESPACE}}}ListMetadataFormats")
        for prefix, (schema, namespace) in FORMATS.items():
            entry = self._add(element, "metadataFormat")
            self._add(entry, "metadataPrefix", prefix)
            self._add(entry, "schema", schema)
            self._add(entry, "metadataNamespace", namespace)
        return element

    def _ListSets(self, values: dict[str, str]) -> etree._Element:
        if "resumptionToken" in values:
            raise OaiError("badResumptionToken", "ListSets is answered whole; it gives no resumptionToken")
        specs: dict[str, str] = {}
        for name, _ in self.index.classes():
            spec = set_spec(name)
            if spec is None:
                continue
            parts = spec.split(":")
            for depth in range(1, len(parts) + 1):  # every ancestor is a set too
                specs.setdefault(":".join(parts[:depth]), topic_class(":".join(parts[:depth])))
        if not specs:
            raise OaiError("noSetHierarchy", "no record has a topic class yet")
        element = etree.Element(f"{{{OAI_NAMESPACE}}}ListSets")
        for spec in sorted(specs):
            entry = self._add(element, "set")
            self._add(entry, "setSpec", spec)
            self._add(entry, "setName", specs[spec])
        return element

    def _GetRecord(self, values: dict[str, str]) -> etree._Element:
        self._format(values["metadataPrefix"])
        key = self._key(values["identifier"])
        element = etree.Element(f"{{{OAI_NAMESPACE}}}GetRecord")
        head = self.index.head(key)
        if head is not None:
            record = self._record(head, with_metadata=True)
            if record is not None:
                element.append(record)
                return element
        stone = self._tombstone(key)
        if stone is None:
            raise OaiError("idDoesNotExist", f"no record {shown(values['identifier'])}")
        element.append(self._deleted(stone, with_metadata=True))
        return element

    def _ListIdentifiers(self, values: dict[str, str]) -> etree._Element:
        return self._list("ListIdentifiers", values, with_metadata=False)

    def _ListRecords(self, values: dict[str, str]) -> etree._Element:
        return self._list("ListRecords", values, with_metadata=True)

    # -- lists --------------------------------------------------------------------

    def _list(self, verb: str, values: dict[str, str], *, with_metadata: bool) -> etree._Element:
        resumed = "resumptionToken" in values
        request = ListRequest.from_token(values["resumptionToken"]) if resumed else self._selection(values)
        self._format(request.prefix)
        element = etree.Element(f"{{{OAI_NAMESPACE}}}{verb}")
        items = 0
        after_id, deleted_from = request.after_id, request.deleted_from
        if deleted_from is None:
            heads = self.index.heads(
                since=request.since, until=request.until, topic_class=request.topic_class,
                after_id=after_id, limit=self.page_size + 1,
            )
            for head in heads[:self.page_size]:
                entry = self._record(head, with_metadata)
                if entry is not None:  # gone since the query: listed as deleted on a later harvest
                    element.append(entry if with_metadata else entry[0])
                after_id = head.id
                items += 1
            if len(heads) <= self.page_size:
                deleted_from = 0
        stones = self._stones(request)
        if deleted_from is not None and items < self.page_size:
            page = stones[deleted_from:deleted_from + self.page_size - items]
            for stone in page:
                entry = self._deleted(stone, with_metadata)
                element.append(entry if with_metadata else entry[0])
            deleted_from += len(page)
            items += len(page)
        more = deleted_from is None or deleted_from < len(stones)
        if not items and not resumed:
            raise OaiError("noRecordsMatch", "no record matches the request")
        if more or resumed:
            total = self.index.count(since=request.since, until=request.until, topic_class=request.topic_class)
            token = self._add(element, "resumptionToken")
            if total + len(stones):  # a positiveInteger: left out when everything went meanwhile
                token.set("completeListSize", str(total + len(stones)))
            token.set("cursor", str(request.cursor))
            if more:
                token.text = ListRequest(
                    request.prefix, request.since, request.until, request.topic_class, after_id, deleted_from,
                    request.cursor + items,
                ).token()
        return element

    def _selection(self, values: dict[str, str]) -> ListRequest:
        since = until = None
        steps = []
        if "from" in values:
            since, step = parse_datestamp(values["from"], "from")
            steps.append(step)
        if "until" in values:
            moment, step = parse_datestamp(values["until"], "until")
            until = moment + step  # the whole day, or second, is included
            steps.append(step)
        if len(set(steps)) > 1:
            raise OaiError("badArgument", "from and until must have the same granularity")
        if since is not None and until is not None and since >= until:
            raise OaiError("badArgument", "from is later than until")
        selected = None
        if "set" in values:
            selected = topic_class(values["set"])
            if not self.index.classes():
                raise OaiError("noSetHierarchy", "no record has a topic class yet")
        return ListRequest(values["metadataPrefix"], since, until, selected)

    def _stones(self, request: ListRequest) -> list[Tombstone]:
        """Deletions in the list's time range; a set's list has none (a deleted record's classes are gone)."""
        if request.topic_class is not None:
            return []
        return self.index.tombstones(request.since, request.until)

    # -- records ------------------------------------------------------------------

    def _record(self, head: RecordHead, with_metadata: bool) -> etree._Element | None:
        """A ``record`` element (its ``header`` first); None when the record went meanwhile."""
        element = etree.Element(f"{{{OAI_NAMESPACE}}}record")
        header = self._add(element, "header")
        self._add(header, "identifier", self.identifier_prefix + head.key)
        self._add(header, "datestamp", datestamp(head.changed))
        for spec in dict.fromkeys(filter(None, map(set_spec, head.classes))):
            self._add(header, "setSpec", spec)
        if not with_metadata:
            return element
        record = self.store.get(head.key)
        if record is None:
            return None
        urls = self.store.urls(head.key)
        metadata = self._add(element, "metadata")
        dc = etree.SubElement(
            metadata, f"{{{OAI_DC_NAMESPACE}}}dc", nsmap={"oai_dc": OAI_DC_NAMESPACE, "dc": DC_NAMESPACE, "xsi": XSI_NAMESPACE}
        )
        dc.set(f"{{{XSI_NAMESPACE}}}schemaLocation", f"{OAI_DC_NAMESPACE} {OAI_DC_SCHEMA}")
        for name, value in dc_fields(record, urls):
            etree.SubElement(dc, f"{{{DC_NAMESPACE}}}{name}").text = value
        return element

    def _deleted(self, stone: Tombstone, with_metadata: bool) -> etree._Element:
        element = etree.Element(f"{{{OAI_NAMESPACE}}}record")
        header = self._add(element, "header")
        header.set("status", "deleted")
        self._add(header, "identifier", self.identifier_prefix + stone.key)
        self._add(header, "datestamp", datestamp(stone.deleted))
        return element

    def _tombstone(self, key: str) -> Tombstone | None:
        return next((stone for stone in self.index.tombstones() if stone.key == key), None)

    def _key(self, identifier: str) -> str:
        if not identifier.startswith(self.identifier_prefix):
            raise OaiError("idDoesNotExist", f"{shown(identifier)} is not an identifier of this repository")
        return identifier[len(self.identifier_prefix):]

    @staticmethod
    def _format(prefix: str) -> None:
        if prefix not in FORMATS:
            raise OaiError("cannotDisseminateFormat", f"metadataPrefix {shown(prefix)}: this repository offers {', '.join(FORMATS)}")

    @staticmethod
    def _add(parent: etree._Element, name: str, text: str | None = None) -> etree._Element:
        element = etree.SubElement(parent, f"{{{OAI_NAMESPACE}}}{name}")
        if text is not None:
            element.text = text
        return element
