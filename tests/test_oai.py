"""The OAI-PMH 2.0 provider: harvested by a real client (sickle) from `scrapy serve` after a real crawl, every
response checked against the protocol's schema and oai_dc; deletions, errors and paging on a store built here."""

from __future__ import annotations

import base64
import json
import random
import sqlite3
import urllib.parse
import urllib.request
from datetime import UTC, datetime

import pytest
from conftest import JobDir, free_port
from console_helpers import chain_web, serve, write_job
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from lxml import etree
from sickle import Sickle
from sickle.oaiexceptions import NoRecordsMatch

from combine_scrapy.operations.console.oai import OaiProvider, set_spec, topic_class
from combine_scrapy.operations.console.schemas import oai_pmh_schema
from combine_scrapy.operations.sampleweb import LoopbackWeb
from combine_scrapy.records.record import Record, TopicClass, content_key
from combine_scrapy.records.store.sqlite import SqliteRecordStore

OAI = "{http://www.openarchives.org/OAI/2.0/}"
PAGE_SIZE = 4
HOSTS = ["127.0.0.2", "127.0.0.3"]


@pytest.fixture(scope="module")
def harvested(tmp_path_factory):
    """A finished crawl of 2 hosts x 7 pages, and `scrapy serve` over it with 4 records an OAI page."""
    root = tmp_path_factory.mktemp("oai")
    job_dir = JobDir(topics=root / "topics", data=root / "data")
    port = free_port()
    with LoopbackWeb(chain_web(HOSTS, port, pages=6), port=port) as web:
        write_job(job_dir, [web.url(host) for host in HOSTS], wait=0.05)
        job_dir.crawl()
    with job_dir.records() as db:
        keys = {key for (key,) in db.execute("SELECT key FROM records")}
    served = serve(job_dir, "-s", f"COMBINE_OAI_PAGE_SIZE={PAGE_SIZE}")
    try:
        yield served, keys
    finally:
        served.stop()


def get(url: str, **arguments: str) -> etree._Element:
    with urllib.request.urlopen(f"{url}/oai?{urllib.parse.urlencode(arguments)}", timeout=30) as response:
        assert response.headers["Content-Type"].startswith("text/xml")
        return etree.fromstring(response.read())


def valid(document: etree._Element) -> etree._Element:
    schema = oai_pmh_schema()
    assert schema.validate(document), f"{schema.error_log}\n{etree.tostring(document).decode()[:3000]}"
    return document


def error_code(document: etree._Element) -> str | None:
    error = document.find(f"{OAI}error")
    return None if error is None else error.get("code")


@pytest.mark.crawl
def test_sickle_harvests_every_record_through_resumption_tokens(harvested):
    served, keys = harvested
    assert len(keys) > 2 * PAGE_SIZE  # the harvest needs several pages
    client = Sickle(f"{served.url}/oai", max_retries=0)
    identify = client.Identify()
    assert identify.protocolVersion == "2.0" and identify.adminEmail == "ops@example.org"
    assert identify.baseURL == f"{served.url}/oai"

    records = list(client.ListRecords(metadataPrefix="oai_dc"))
    prefix = "oai:combine-scrapy:t:"
    assert sorted(record.header.identifier for record in records) == sorted(prefix + key for key in keys)
    titles = {record.metadata["title"][0] for record in records}
    assert "Carnivorous plants 127.0.0.2 page 3" in titles
    drosera = [record for record in records if "CP:Drosera" in record.header.setSpecs]
    assert drosera and all("sundews" in " ".join(record.metadata["description"]) for record in drosera)
    assert all(record.metadata["identifier"][0].startswith("http://127.0.0.") for record in records)

    identifiers = [header.identifier for header in client.ListIdentifiers(metadataPrefix="oai_dc")]
    assert sorted(identifiers) == sorted(prefix + key for key in keys)
    sundews = {header.identifier for header in client.ListIdentifiers(metadataPrefix="oai_dc", set="CP:Drosera")}
    assert sundews == {record.header.identifier for record in drosera}
    sets = {entry.setSpec for entry in client.ListSets()}
    assert {"CP", "CP:Drosera", "CP:Nepenthes"} <= sets
    one = client.GetRecord(identifier=identifiers[0], metadataPrefix="oai_dc")
    assert one.header.identifier == identifiers[0] and one.metadata["title"]
    with pytest.raises(NoRecordsMatch):
        list(client.ListRecords(metadataPrefix="oai_dc", **{"from": "2999-01-01"}))


@pytest.mark.crawl
def test_every_response_validates_against_the_oai_pmh_and_oai_dc_schemas(harvested):
    served, keys = harvested
    for verb in ("ListRecords", "ListIdentifiers"):
        document, listed, pages = valid(get(served.url, verb=verb, metadataPrefix="oai_dc")), 0, 0
        while True:
            pages += 1
            listed += len(document.findall(f"{OAI}{verb}/{OAI}{'record' if verb == 'ListRecords' else 'header'}"))
            token = document.find(f"{OAI}{verb}/{OAI}resumptionToken")
            assert token is not None and token.get("completeListSize") == str(len(keys))
            if not token.text:
                break
            assert int(token.get("cursor")) == listed - len(document.findall(f"{OAI}{verb}/*")) + 1
            document = valid(get(served.url, verb=verb, resumptionToken=token.text))
        assert listed == len(keys) and pages == -(-len(keys) // PAGE_SIZE)

    today = datetime.now(UTC).strftime("%Y-%m-%d")
    some_key = sorted(keys)[0]
    answers = {
        ("Identify",): None,
        ("ListMetadataFormats",): None,
        ("ListMetadataFormats", "identifier", f"oai:combine-scrapy:t:{some_key}"): None,
        ("ListSets",): None,
        ("GetRecord", "identifier", f"oai:combine-scrapy:t:{some_key}", "metadataPrefix", "oai_dc"): None,
        ("ListIdentifiers", "metadataPrefix", "oai_dc", "from", today, "until", today, "set", "CP"): None,
        ("Nonsense",): "badVerb",
        ("ListRecords",): "badArgument",
        ("ListRecords", "metadataPrefix", "oai_dc", "from", "2020-01-01", "until", "2021-01-01T00:00:00Z"): "badArgument",
        ("ListRecords", "metadataPrefix", "oai_dc", "from", "yesterday"): "badArgument",
        ("ListRecords", "metadataPrefix", "marc21"): "cannotDisseminateFormat",
        ("ListRecords", "resumptionToken", "not-a-token"): "badResumptionToken",
        ("ListRecords", "metadataPrefix", "oai_dc", "until", "1999-12-31"): "noRecordsMatch",
        ("GetRecord", "identifier", "oai:combine-scrapy:t:0000", "metadataPrefix", "oai_dc"): "idDoesNotExist",
        ("ListSets", "resumptionToken", "x"): "badResumptionToken",
    }
    for request, expected in answers.items():
        arguments = dict(zip(request[1::2], request[2::2]), verb=request[0])
        document = valid(get(served.url, **arguments))
        assert error_code(document) == expected, (request, etree.tostring(document).decode()[:1500])
        echoed = document.find(f"{OAI}request")
        assert echoed.text == f"{served.url}/oai"
        assert (echoed.get("verb") is None) == (expected in ("badVerb", "badArgument"))

    repeated = f"{served.url}/oai?verb=Identify&verb=Identify"
    with urllib.request.urlopen(repeated, timeout=30) as response:
        assert error_code(valid(etree.fromstring(response.read()))) == "badVerb"
    post = urllib.request.Request(
        f"{served.url}/oai", data=urllib.parse.urlencode({"verb": "ListSets"}).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    with urllib.request.urlopen(post, timeout=30) as response:
        assert valid(etree.fromstring(response.read())).find(f"{OAI}ListSets/{OAI}set") is not None


@pytest.mark.crawl
def test_the_schema_checks_the_metadata_inside_a_record(harvested):
    served, keys = harvested
    document = valid(get(served.url, verb="ListRecords", metadataPrefix="oai_dc"))
    dc = document.find(f"{OAI}ListRecords/{OAI}record/{OAI}metadata/{{http://www.openarchives.org/OAI/2.0/oai_dc/}}dc")
    etree.SubElement(dc, "{http://purl.org/dc/elements/1.1/}colour").text = "green"  # not a Dublin Core element
    assert not oai_pmh_schema().validate(document)


def test_set_specs_follow_the_class_hierarchy_and_come_back():
    assert set_spec("CP.Drosera") == "CP:Drosera"
    assert set_spec("A.14.5") == "A:14:5"
    assert set_spec("Glass art/stained") == "Glass~20art~2Fstained"
    assert set_spec("a..b") is None
    for name in ("CP.Drosera", "A.14.5", "Glass art/stained", "Växter.Sileshår~1"):
        assert topic_class(set_spec(name)) == name


def make_record(number: int, checked: float, classes: tuple[str, ...]) -> Record:
    title, text = f"Record {number}", f"carnivorous plants number {number}"
    return Record(
        key=content_key(title, text, f"http://a.example/{number}", "text/html"), url=f"http://a.example/{number}",
        title=title, text=text, mime_type="text/html", checked=checked,
        classes=[TopicClass(name, 10.0, 1.0, ("carnivorous plants",)) for name in classes],
    )


@pytest.fixture
def store_with_deletions(tmp_path):
    """Five records, two of them deleted (their tombstones dated for the assertions)."""
    store = SqliteRecordStore(tmp_path / "records.sqlite")
    records = [make_record(number, 1_700_000_000 + number * 100, ("CP", "CP.Drosera") if number % 2 else ("CP",))
               for number in range(5)]
    for record in records:
        store.store(record)
    deleted = {}
    for record, when in ((records[1], 1_700_001_000.0), (records[3], 1_700_002_000.0)):
        store.delete(record.key)
        deleted[record.key] = when
    with sqlite3.connect(tmp_path / "records.sqlite") as db:
        db.executemany("UPDATE deletions SET deleted = ? WHERE `key` = ?", [(when, key) for key, when in deleted.items()])
    yield store, records, deleted
    store.close()


def respond(provider: OaiProvider, **arguments: str) -> etree._Element:
    document = etree.fromstring(provider.respond(list(arguments.items()), "http://127.0.0.1:1/oai"))
    return valid(document)


def test_deleted_records_are_listed_after_the_others_and_got_as_deleted(store_with_deletions):
    store, records, deleted = store_with_deletions
    provider = OaiProvider.for_job(store, "t", "ops@example.org", page_size=2)
    assert respond(provider, verb="Identify").findtext(f"{OAI}Identify/{OAI}deletedRecord") == "transient"

    headers, document = [], respond(provider, verb="ListIdentifiers", metadataPrefix="oai_dc")
    while True:
        headers += document.findall(f"{OAI}ListIdentifiers/{OAI}header")
        token = document.findtext(f"{OAI}ListIdentifiers/{OAI}resumptionToken")
        if not token:
            break
        document = respond(provider, verb="ListIdentifiers", resumptionToken=token)
    listed = [(header.findtext(f"{OAI}identifier").rsplit(":", 1)[1], header.get("status")) for header in headers]
    live = [record.key for record in records if record.key not in deleted]
    assert listed == [(key, None) for key in live] + [(key, "deleted") for key in deleted]
    stamps = [header.findtext(f"{OAI}datestamp") for header in headers[-2:]]
    assert stamps == ["2023-11-14T22:30:00Z", "2023-11-14T22:46:40Z"]

    gone = next(iter(deleted))
    record = respond(provider, verb="GetRecord", identifier=f"oai:combine-scrapy:t:{gone}", metadataPrefix="oai_dc")
    header = record.find(f"{OAI}GetRecord/{OAI}record/{OAI}header")
    assert header.get("status") == "deleted" and record.find(f"{OAI}GetRecord/{OAI}record/{OAI}metadata") is None

    # A deletion outside from/until is left out; a set's list has no deletions (a deleted record's classes are gone).
    late = respond(provider, verb="ListIdentifiers", metadataPrefix="oai_dc", **{"from": "2023-11-14T22:40:00Z"})
    assert [h.get("status") for h in late.findall(f"{OAI}ListIdentifiers/{OAI}header")] == ["deleted"]
    in_set = respond(provider, verb="ListRecords", metadataPrefix="oai_dc", set="CP:Drosera")
    assert error_code(in_set) == "noRecordsMatch"  # records 1 and 3 were the Drosera ones, both deleted


def test_identify_says_deletions_are_transient_and_names_the_earliest_datestamp(tmp_path):
    store = SqliteRecordStore(tmp_path / "records.sqlite")
    try:
        store.store(make_record(1, 1_700_000_000, ("CP",)))
        provider = OaiProvider.for_job(store, "t", "ops@example.org")
        assert respond(provider, verb="Identify").findtext(f"{OAI}Identify/{OAI}deletedRecord") == "transient"
        assert respond(provider, verb="Identify").findtext(f"{OAI}Identify/{OAI}earliestDatestamp") == "2023-11-14T22:13:20Z"
    finally:
        store.close()


# --- hostile requests -------------------------------------------------------------------------------------------


def forged_token(state: list) -> str:
    return base64.urlsafe_b64encode(json.dumps(state).encode()).decode().rstrip("=")


@pytest.fixture(scope="module")
def provider(tmp_path_factory):
    store = SqliteRecordStore(tmp_path_factory.mktemp("oai-fuzz") / "records.sqlite")
    for number in range(3):
        store.store(make_record(number, 1_700_000_000 + number * 100, ("CP", "CP.Drosera")))
    yield OaiProvider.for_job(store, "t", "ops@example.org", page_size=2)
    store.close()


@pytest.mark.parametrize("arguments, code", [
    ({"verb": "GetRecord", "identifier": "\x01", "metadataPrefix": "oai_dc"}, "badArgument"),
    ({"verb": "ListRecords", "from": "\x01", "metadataPrefix": "oai_dc"}, "badArgument"),
    ({"verb": "ListRecords", "metadataPrefix": "\x01"}, "badArgument"),
    ({"verb": "ListRecords", "metadataPrefix": "oai_dc", "set": "CP\x00"}, "badArgument"),
    ({"verb": "Identify", "foo\x01": "x"}, "badArgument"),
    ({"verb": "ListIdentifiers", "metadataPrefix": "oai_dc", "until": "\ufffe"}, "badArgument"),
    ({"verb": "ListSets\x00"}, "badVerb"),
    ({"verb": "ListRecords", "metadataPrefix": "<x>"}, "badArgument"),
    ({"verb": "ListRecords", "metadataPrefix": "oai_dc", "from": "٢٠٢٠-٠١-٠١"}, "badArgument"),   # Arabic-Indic digits
    ({"verb": "ListRecords", "resumptionToken": forged_token(["oai_dc", "Infinity", None, None, 0, None, 0])}, "badResumptionToken"),
    ({"verb": "ListRecords", "resumptionToken": forged_token(["oai_dc", None, None, None, 0, None, 10**30])}, "badResumptionToken"),
    ({"verb": "ListRecords", "resumptionToken": forged_token(["oai_dc", None, None, None, 10**30, None, 0])}, "badResumptionToken"),
    ({"verb": "ListRecords", "resumptionToken": forged_token(["oai_dc", None, None, None, 0, None, -1])}, "badResumptionToken"),
    ({"verb": "ListRecords", "resumptionToken": forged_token(["oai_dc", 1e300, None, None, 0, None, 0])}, "badResumptionToken"),
    ({"verb": "ListRecords", "resumptionToken": forged_token(["oai_dc", None, None, None, True, None, 0])}, "badResumptionToken"),
    ({"verb": "ListRecords", "resumptionToken": "٣"}, "badResumptionToken"),
    ({"verb": "ListRecords", "metadataPrefix": "marc21"}, "cannotDisseminateFormat"),
])
def test_malformed_requests_get_the_protocols_error_in_valid_xml(provider, arguments, code):
    document = etree.fromstring(provider.respond(list(arguments.items()), "http://127.0.0.1:1/oai"))
    assert error_code(valid(document)) == code
    request = document.find(f"{OAI}request")
    if code in ("badArgument", "badVerb"):
        assert not request.attrib                          # nothing of an invalid request is echoed
    if code == "cannotDisseminateFormat":
        assert request.get("metadataPrefix") == "marc21"   # a valid argument is


def test_forged_token_with_infinity_is_refused(provider):
    """json.dumps writes float('inf') as Infinity, which json.loads reads back: the token decoder must not."""
    token = forged_token(["oai_dc", float("inf"), None, None, 0, None, 0])
    document = valid(etree.fromstring(provider.respond([("verb", "ListRecords"), ("resumptionToken", token)], "http://x/oai")))
    assert error_code(document) == "badResumptionToken"


NAMES = ["verb", "identifier", "metadataPrefix", "from", "until", "set", "resumptionToken"]
GOOD_VALUES = ["Identify", "ListMetadataFormats", "ListSets", "GetRecord", "ListIdentifiers", "ListRecords", "oai_dc",
               "marc21", "CP", "CP:Drosera", "2023-11-14", "2023-11-14T22:30:00Z", "2023-02-30", "oai:combine-scrapy:t:x",
               "", "<x>", "٢٠٢٠-٠١-٠١"]
#: Characters of every awkward kind: controls, NUL, surrogates, U+FFFE/U+FFFF, markup, non-ASCII digits, astral.
AWKWARD = [(0x00, 0x1F), (0x20, 0x7E), (0x7F, 0x9F), (0x660, 0x669), (0xD800, 0xDFFF), (0xFFFE, 0xFFFF), (0x1F600, 0x1F64F)]
#: What a forged token's fields may be: right and wrong types, out of range, not numbers at all.
TOKEN_FIELDS = [None, True, 0, 1, -1, 1_700_000_000, 10**30, 2**63, 1e300, -1e300, float("inf"), float("nan"),
                "oai_dc", "marc21", "CP", "", "\x00"]


def awkward_text(rng: random.Random) -> str:
    return "".join(chr(rng.randint(*rng.choice(AWKWARD))) for _ in range(rng.randint(0, 8)))


def random_arguments(rng: random.Random) -> list[tuple[str, str]]:
    """A verb (mostly a real one) and 0 to 6 arguments: names right or awkward; values right, awkward, or forged
    resumption tokens."""
    arguments = [("verb", rng.choice(GOOD_VALUES[:6]) if rng.random() < 0.85 else awkward_text(rng))]
    for _ in range(rng.randint(0, 6)):
        name = rng.choice(NAMES[1:]) if rng.random() < 0.85 else awkward_text(rng)
        kind = rng.random()
        if kind < 0.5:
            value = rng.choice(GOOD_VALUES)
        elif kind < 0.8:
            value = awkward_text(rng)
        else:
            value = forged_token([rng.choice(TOKEN_FIELDS) for _ in range(rng.choice((6, 7, 7, 7, 8)))])
        arguments.append((name, value))
    rng.shuffle(arguments)
    return arguments


@settings(max_examples=100, deadline=None, database=None, phases=(Phase.explicit, Phase.generate))
@given(rng=st.randoms(use_true_random=True))
def test_any_request_at_all_gets_a_valid_oai_pmh_answer(provider, rng):
    """10,000 random argument sets: 100 of hypothesis's seeds, 100 sets each. The Random is a plain one seeded by
    hypothesis (a failure names its seed): one that records each draw for shrinking costs about a millisecond a
    draw, and an argument set takes dozens, which made this test take minutes instead of seconds."""
    for _ in range(100):
        arguments = random_arguments(rng)
        document = etree.fromstring(provider.respond(arguments, "http://127.0.0.1:1/oai"))
        schema = oai_pmh_schema()
        assert schema.validate(document), f"{arguments!r}: {schema.error_log}"


@pytest.mark.crawl
def test_oversized_and_overfull_requests_get_xml_over_http(harvested):
    served, _ = harvested
    for data, query in ((None, "verb=Identify&x=" + "a" * 20_000),
                        ("&".join(f"f{i}=1" for i in range(1000)).encode(), ""),
                        (None, "verb=GetRecord&metadataPrefix=oai_dc&identifier=%01"),
                        (None, "verb=Identify&foo%01=1")):
        with urllib.request.urlopen(urllib.request.Request(f"{served.url}/oai?{query}", data=data), timeout=30) as response:
            assert response.status == 200 and response.headers["Content-Type"].startswith("text/xml")
            assert error_code(valid(etree.fromstring(response.read()))) == "badArgument"
