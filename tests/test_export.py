"""Exports: oai_dc valid against its schema, ALVIS well-formed whatever the crawled text, selection, the command."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import io
import json
import os
import subprocess
import sys
import uuid
import zipfile
from datetime import UTC, datetime

import MySQLdb
import pytest
from conftest import PROJECT, JobDir, free_port
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from combine_scrapy.operations.sampleweb import DEMO_HOSTS, LoopbackWeb, demo_sites
from combine_scrapy.records.export import FORMATS, write_records
from combine_scrapy.records.export.alvis import ALVIS_NAMESPACE, write_alvis, write_alvis_light
from combine_scrapy.records.export.dc import DC_NAMESPACE, OAI_DC_NAMESPACE, write_dc
from combine_scrapy.records.export.jsonl import write_jsonl
from combine_scrapy.records.export.schemas import oai_dc_schema
from combine_scrapy.records.export.select import Selection, parse_date
from combine_scrapy.records.export.xmltext import cdata, escape, quote, xml_chars
from combine_scrapy.records.record import Record, RecordLink, TopicClass
from combine_scrapy.records.store import Deletion
from combine_scrapy.records.store.mysql import MysqlRecordStore, connection_arguments, table_prefix
from combine_scrapy.records.store.sqlite import SqliteRecordStore

# What a hostile page can hold: C0 controls, a lone surrogate, a surrogate pair held as two
# code points, U+FFFE/U+FFFF, "]]>", markup, quotes, a carriage return and non-BMP characters.
HOSTILE = 'a\x00b\x01\x08\x0b\x0c\x1f c \ud800 \udc00x \ud83d\ude00 \ufffe\uffff ]]> ]]]]> <script>alert("x")</script> \'&amp;\' \r\n\t 𝄞 😀 ü'
HOSTILE_CLEAN = 'a b  c \ufffd \ufffdx 😀 \ufffd\ufffd ]]> ]]]]> <script>alert("x")</script> \'&amp;\' \r\n\t 𝄞 😀 ü'
# The original document travels as bytes (gzip, base64) and JSON escapes controls: only surrogates need repair.
HOSTILE_REPAIRED = HOSTILE.replace("\ud83d\ude00", "😀").replace("\ud800", "\ufffd").replace("\udc00", "\ufffd")
DAY = 86400.0
JAN_1 = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
DC = f"{{{DC_NAMESPACE}}}"
A = f"{{{ALVIS_NAMESPACE}}}"


def make_record(key: str, **fields) -> Record:
    values = dict(
        url=f"http://127.0.0.2/{key}.html", title=f"Title {key}", text=f"Text of {key}.", mime_type="text/html",
        checked=JAN_1, modified=JAN_1 - DAY, server="Apache", score=150.0, normalized=0.5,
        classes=[TopicClass("CP.Drosera", 100.0, 0.4, ("drosera", "sundews?"))],
    )
    values.update(fields)
    return Record(key=key, **values)


def hostile_record() -> Record:
    return make_record(
        "HOSTILE",
        url="http://www.example.se/hostile.html?a=1&b=<2>",
        title=HOSTILE,
        text=HOSTILE,
        headings=[HOSTILE],
        meta={"keywords": [f"one, {HOSTILE}"], "description": [HOSTILE], "author": ['"Quoted" <me>']},
        links=[RecordLink('http://127.0.0.2/x.html?q="1"&r=2', HOSTILE, 'a" onclick="evil()')],
        html=f"<html><title>{HOSTILE}</title></html>",
        server=HOSTILE,
        language="en",
        classes=[TopicClass('CP."Drosera"]]>', 1.5, 0.25, (HOSTILE,))],
    )


def export(writer, records, **kwargs) -> bytes:
    out = io.StringIO()
    assert writer([(r, [r.url]) for r in records], out, **kwargs) == len(records)
    return out.getvalue().encode("utf-8")


def parse(document: bytes) -> etree._Element:
    return etree.fromstring(document, etree.XMLParser(recover=False, resolve_entities=False))


# --- escaping ------------------------------------------------------------------------------


def test_xml_chars_replaces_only_what_xml_cannot_carry():
    assert xml_chars(HOSTILE) == HOSTILE_CLEAN
    assert xml_chars("plain 😀 text\t\r\n") == "plain 😀 text\t\r\n"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_any_text_round_trips_through_text_attribute_and_cdata(text):
    document = f"<a v={quote(text)}>{escape(text)}|{cdata(text)}</a>".encode()
    element = parse(document)
    assert element.get("v") == xml_chars(text)
    assert element.text == f"{xml_chars(text)}|{xml_chars(text)}"


def test_cdata_splits_every_end_marker():
    assert cdata("x]]>y") == "<![CDATA[x]]]]><![CDATA[>y]]>"
    assert parse(f"<a>{cdata(']]>]]>')}</a>".encode()).text == "]]>]]>"


# --- Dublin Core ---------------------------------------------------------------------------


def test_dc_records_are_valid_oai_dc_and_carry_combines_fields():
    plain = make_record("PLAIN", meta={"keywords": ["drosera, sundew,carnivorous plants"], "dc.creator": ["Ann"]}, language="sv")
    root = parse(export(write_dc, [plain, hostile_record(), make_record("EMPTY", title="", text="")]))
    schema = oai_dc_schema()
    elements = list(root.iter(f"{{{OAI_DC_NAMESPACE}}}dc"))
    assert len(elements) == 3
    for element in elements:
        assert schema.validate(element), schema.error_log
    first = {child.tag.removeprefix(DC): [] for child in elements[0]}
    for child in elements[0]:
        first[child.tag.removeprefix(DC)].append(child.text)
    assert first == {
        "title": ["Title PLAIN"],
        "creator": ["Ann"],
        "subject": ["drosera", "sundew", "carnivorous plants"],
        "description": ["Text of PLAIN."],  # the text, as the page has no description
        "date": ["2025-12-31T00:00:00Z"],
        "format": ["text/html"],
        "identifier": ["http://127.0.0.2/PLAIN.html"],
        "language": ["sv"],
    }
    hostile_title = elements[1].find(f"{DC}title").text
    assert hostile_title == " ".join(HOSTILE_CLEAN.split())
    assert elements[1].find(f"{DC}identifier").text == "http://www.example.se/hostile.html?a=1&b=<2>"


def test_the_shipped_schema_rejects_what_is_not_simple_dublin_core():
    bad = parse(
        f'<oai_dc:dc xmlns:oai_dc="{OAI_DC_NAMESPACE}" xmlns:dc="{DC_NAMESPACE}"><dc:keywords>x</dc:keywords></oai_dc:dc>'.encode()
    )
    assert not oai_dc_schema().validate(bad)


# Run in a Python of its own that has only the zip on its path, as scrapyd runs a deployed egg.
FROM_ZIP = f"""
import combine_scrapy
from lxml import etree
from combine_scrapy.operations.console.schemas import oai_pmh_schema
from combine_scrapy.records.export.schemas import oai_dc_schema
good = etree.fromstring('<oai_dc:dc xmlns:oai_dc="{OAI_DC_NAMESPACE}" xmlns:dc="{DC_NAMESPACE}"><dc:title>t</dc:title></oai_dc:dc>')
bad = etree.fromstring('<oai_dc:dc xmlns:oai_dc="{OAI_DC_NAMESPACE}" xmlns:dc="{DC_NAMESPACE}"><dc:keywords>x</dc:keywords></oai_dc:dc>')
oai_pmh_schema()
print(combine_scrapy.__file__, oai_dc_schema().validate(good), oai_dc_schema().validate(bad))
"""


@pytest.mark.crawl
def test_the_schemas_load_from_a_zipped_package(tmp_path):
    """scrapyd imports the project from a zipped egg, where the schemas are no files: they are read from the zip."""
    archive = tmp_path / "project.egg"
    with zipfile.ZipFile(archive, "w") as egg:
        for path in sorted((PROJECT / "combine_scrapy").rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                egg.write(path, path.relative_to(PROJECT).as_posix())
    env = {**os.environ, "PYTHONPATH": str(archive)}
    result = subprocess.run(
        [sys.executable, "-c", FROM_ZIP], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(archive / "combine_scrapy" / "__init__.py"), "True", "False"]


# --- ALVIS ---------------------------------------------------------------------------------


def test_alvis_with_hostile_text_is_well_formed_and_reads_back():
    hostile, target = hostile_record(), make_record("TARGET")
    keys = {"http://127.0.0.2/x.html?q=\"1\"&r=2": "TARGET"}
    root = parse(export(write_alvis, [hostile, target], link_targets=keys.get))
    assert root.tag == f"{A}documentCollection"
    record = root.find(f"{A}documentRecord")
    assert record.get("id") == "HOSTILE"
    acquisition = record.find(f"{A}acquisition")
    data = acquisition.find(f"{A}acquisitionData")
    assert data.findtext(f"{A}httpServer") == HOSTILE_CLEAN
    assert data.findtext(f"{A}modifiedDate") == "2025-12-31 00:00:00"
    assert [u.text for u in data.iter(f"{A}url")] == ["http://www.example.se/hostile.html?a=1&b=<2>"]
    assert acquisition.findtext(f"{A}canonicalDocument/{A}section") == HOSTILE_CLEAN
    metas = [(m.get("name"), m.text) for m in acquisition.iter(f"{A}meta")]
    assert metas[0] == ("title", HOSTILE_CLEAN)
    assert ("dc:subject", "one") in metas and ("dc:creator", '"Quoted" <me>') in metas
    link = acquisition.find(f"{A}links/{A}outlinks/{A}link")
    assert link.get("type") == 'a" onclick="evil()'
    assert link.findtext(f"{A}anchorText") == HOSTILE_CLEAN
    assert link.find(f"{A}location").get("documentId") == "TARGET"
    assert link.findtext(f"{A}location") == 'http://127.0.0.2/x.html?q="1"&r=2'
    original = acquisition.find(f"{A}originalDocument")
    html = gzip.decompress(base64.b64decode(original.text)).decode("utf-8")
    assert html == f"<html><title>{HOSTILE_REPAIRED}</title></html>"
    topics = acquisition.findall(f"{A}analysis/{A}topic")
    assert [t.findtext(f"{A}class") for t in topics] == ["ALL", 'CP."Drosera"]]>']
    assert topics[1].get("absoluteScore") == "1.5" and topics[1].findtext(f"{A}terms") == HOSTILE_CLEAN


def test_alvis_light_is_flat_and_well_formed_with_hostile_text():
    root = parse(export(write_alvis_light, [hostile_record(), make_record("PLAIN", html=None)]))
    assert root.tag == "documentCollection" and root.nsmap == {}
    hostile, plain = root.findall("documentRecord")
    assert hostile.find("originalDocument") is None  # the light format never carries it
    assert hostile.findtext("mimeType") == "text/html"
    assert hostile.findtext("canonicalDocument/section") == HOSTILE_CLEAN
    assert [h.text for h in hostile.iter("heading")] == [HOSTILE_CLEAN]
    assert [(p.get("name"), p.text) for p in hostile.iter("property")] == [("topLevelDomain", "se"), ("language", "en")]
    assert [p.get("name") for p in plain.iter("property")] == []  # no top-level domain in an IP address
    assert plain.findtext("topic[2]/class") == "CP.Drosera"
    assert [t.text for t in plain.iter("terms")] == ["drosera", "sundews?"]


def test_writers_stream_each_record_before_reading_the_next():
    out = io.StringIO()

    def records():
        for number in range(3):
            if number:
                written = out.getvalue()
                assert f'id="R{number - 1}"' in written or f'"key": "R{number - 1}"' in written or f"# Title R{number - 1}" in written
            record = make_record(f"R{number}")
            yield record, [record.url]

    for format in FORMATS:
        out.seek(0)
        out.truncate()
        assert write_records(format, records(), out) == 3


def test_text_main_writes_each_records_main_content_where_it_has_one():
    """--text main: the article without its menus as the text; a record without a main content keeps its text."""
    page = make_record("PAGE", text="Home Shop\nSundews catch insects.", main_text="Sundews catch insects.")
    pdf = make_record("PDF", text="A PDF's text.", mime_type="application/pdf")
    out = io.StringIO()
    assert write_records("jsonl", [(page, [page.url]), (pdf, [pdf.url])], out, text="main") == 2
    documents = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(d["text"], d["main_text"]) for d in documents] == [
        ("Sundews catch insects.", "Sundews catch insects."), ("A PDF's text.", None),
    ]
    out = io.StringIO()
    write_records("dc", [(page, [page.url])], out, text="main")
    assert parse(out.getvalue().encode()).findtext(f".//{DC}description") == "Sundews catch insects."
    out = io.StringIO()
    write_records("jsonl", [(page, [page.url])], out)  # all: the text as stored, the main content beside it
    assert json.loads(out.getvalue())["text"] == "Home Shop\nSundews catch insects."
    with pytest.raises(ValueError, match="unknown text 'body'"):
        write_records("jsonl", [(page, [page.url])], io.StringIO(), text="body")


def test_markdown_keeps_the_main_contents_headings_lists_and_links():
    words = " ".join(f"word{n}" for n in range(60))
    html = f"""<html><body><nav><a href="/">Home</a> <a href="/shop">Shop</a></nav><article><h1>Sundews</h1>
    <p>{words} and the <a href="care.html">care guide</a>.</p><h2>Soil</h2>
    <ul><li>Peat and sand</li><li># no tap water <a href="javascript:alert(1)">here</a></li></ul><p>{words}</p>
    <p>{words}</p></article><footer>Copyright</footer></body></html>"""
    page = make_record("PAGE", html=html, text="ignored when the document is kept", title="Sundews | Plants")
    kept_none = make_record("BARE", text="Home\n# Drosera\n- sundews", main_text="# Drosera\n- sundews", title="")
    pdf = make_record("PDF", text="A PDF's text.", mime_type="application/pdf", title="Report")
    out = io.StringIO()
    deletion = Deletion("GONE", ["http://127.0.0.2/gone.html"], JAN_1)
    assert write_records("markdown", [(page, [page.url, "http://127.0.0.3/copy.html"]), (kept_none, []), (pdf, [pdf.url])],
                         out, deletions=[deletion]) == 3
    first, second, third = out.getvalue().split("\n---\n\n")
    assert first == (
        "# Sundews | Plants\n\n<http://127.0.0.2/PAGE.html>\n<http://127.0.0.3/copy.html>\n\n"
        f"{words} and the [care guide](http://127.0.0.2/care.html).\n\n## Soil\n\n- Peat and sand\n"
        f"- \\# no tap water here\n\n{words}\n\n{words}\n"
    )
    # No document kept: the main text, one paragraph a line, its markup characters escaped; no title: the URL.
    assert second == "# http://127.0.0.2/BARE.html\n\n<http://127.0.0.2/BARE.html>\n\n\\# Drosera\n\n\\- sundews\n"
    assert third.startswith("# Report\n\n<http://127.0.0.2/PDF.html>\n\nA PDF's text.\n")
    assert third.endswith(f"<!-- deleted GONE {JAN_1} http://127.0.0.2/gone.html -->\n")


# --- JSON Lines ----------------------------------------------------------------------------


def test_jsonl_holds_every_field_and_survives_lone_surrogates():
    lines = export(write_jsonl, [hostile_record()]).decode("utf-8").splitlines()
    document = json.loads(lines[0])
    assert set(document) == {f.name for f in dataclasses.fields(Record)} | {"urls"}
    assert document["title"] == HOSTILE_REPAIRED
    assert document["classes"][0]["name"] == 'CP."Drosera"]]>'


# --- selection -----------------------------------------------------------------------------


def test_selection_by_class_takes_sub_classes_only_at_a_dot():
    drosera = make_record("D", classes=[TopicClass("CP.Drosera", 1, 1, ())])
    cpx = make_record("X", classes=[TopicClass("CPX", 1, 1, ())])
    assert Selection(topic_class="CP").matches(drosera)
    assert Selection(topic_class="CP.Drosera").matches(drosera)
    assert not Selection(topic_class="CP").matches(cpx)
    assert not Selection(topic_class="CP.Drosera.x").matches(drosera)


def test_selection_by_date_checked_or_modified():
    record = make_record("R", checked=JAN_1 + 12 * 3600, modified=None)
    assert Selection(since=parse_date("2026-01-01"), until=parse_date("2026-01-01", end_of_day=True)).matches(record)
    assert not Selection(since=parse_date("2026-01-02")).matches(record)
    assert not Selection(until=parse_date("2026-01-01T12:00:00")).matches(record)  # until is exclusive
    assert not Selection(until=parse_date("2026-01-01T13:00:00+01:00")).matches(record)  # 12:00 UTC
    assert not Selection(since=0, date_field="modified").matches(record)  # no modification date
    modified = make_record("M", checked=JAN_1, modified=JAN_1 - 5 * DAY)
    assert Selection(until=JAN_1 - 4 * DAY, date_field="modified").matches(modified)
    assert not Selection(until=JAN_1 - 4 * DAY).matches(modified)  # checked later
    rescored = make_record("S", checked=JAN_1, changed=JAN_1 + 3 * DAY)  # its datestamp moved when it was rescored
    assert Selection(since=JAN_1 + 2 * DAY).matches(rescored)
    assert not Selection(since=JAN_1 + 2 * DAY, date_field="checked").matches(rescored)
    with pytest.raises(ValueError, match="bad date '2026-13-01'"):
        parse_date("2026-13-01")
    with pytest.raises(ValueError, match="bad date field 'created'"):
        Selection(date_field="created")


# --- the command, as a user runs it -------------------------------------------------------


MYSQL_URL = "mysql://root@127.0.0.1:3306/test"


def store_three(store) -> None:
    """Three records: two dates, two classes."""
    store.store(make_record("OLD", checked=JAN_1 - 10 * DAY))
    store.store(make_record("NEW", checked=JAN_1 + DAY, title="New <&> ]]> \x07"))
    store.store(make_record("OTHER", checked=JAN_1 + DAY, classes=[TopicClass("GARDEN", 1, 1, ())]))
    store.close()


@pytest.fixture
def stored(job_dir):
    """A job whose records are stored directly in its SQLite file (no crawl)."""
    job_dir.write("classifyPlugIn = plain\n", "100: drosera=CP.Drosera\n", ["http://127.0.0.2/"])
    store_three(SqliteRecordStore(job_dir.data / job_dir.name / "records.sqlite"))
    return job_dir


@pytest.fixture(params=["sqlite", pytest.param("mariadb", marks=pytest.mark.services)])
def stored_anywhere(request, tmp_path):
    """The same records in either backend; ``extra`` is what the command needs to find them."""
    job_dir = JobDir(topics=tmp_path / "topics", data=tmp_path / "data", name=f"export{uuid.uuid4().hex[:10]}")
    job_dir.write("classifyPlugIn = plain\n", "100: drosera=CP.Drosera\n", ["http://127.0.0.2/"])
    if request.param == "sqlite":
        store_three(SqliteRecordStore(job_dir.data / job_dir.name / "records.sqlite"))
        yield job_dir, ()
        return
    store_three(MysqlRecordStore.from_url(MYSQL_URL, job_dir.name))
    try:
        yield job_dir, ("-s", f"MYSQL_URL={MYSQL_URL}")
    finally:
        with MySQLdb.connect(**{**connection_arguments(MYSQL_URL), "autocommit": True}) as db, db.cursor() as cursor:
            cursor.execute("SET SESSION foreign_key_checks = 0")  # drop this job's tables in any order
            cursor.execute("SHOW TABLES LIKE %s", (table_prefix(job_dir.name).replace("_", "\\_") + "%",))
            for (table,) in cursor.fetchall():
                cursor.execute(f"DROP TABLE `{table}`")


@pytest.mark.crawl
def test_export_command_selects_by_class_and_date(stored_anywhere, tmp_path):
    job_dir, extra = stored_anywhere
    out = tmp_path / "new.xml"
    result = job_dir.scrapy(
        "export", job_dir.name, "--format", "dc", "--output", str(out), "--class", "CP", "--since", "2026-01-01", *extra
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == f"exported 1 of 3 records and 0 deletions of job {job_dir.name} as dc to {out}"
    root = parse(out.read_bytes())
    assert [r.get("id") for r in root.iter("documentRecord")] == ["NEW"]
    assert all(oai_dc_schema().validate(dc) for dc in root.iter(f"{{{OAI_DC_NAMESPACE}}}dc"))
    assert not (tmp_path / "new.xml.part").exists()

    result = job_dir.scrapy("export", job_dir.name, "--format", "alvis", "--until", "2025-12-31", *extra)
    assert result.returncode == 0, result.stderr
    assert [r.get("id") for r in parse(result.stdout.encode()).iter(f"{A}documentRecord")] == ["OLD"]


@pytest.mark.crawl
@pytest.mark.parametrize(
    ("args", "message", "exitcode"),
    [
        (("nosuchjob",), "no such job; known jobs: t", 2),
        (("t", "--since", "yesterday"), "bad date 'yesterday'", 2),
        (("t", "--format", "pdf"), "unknown format 'pdf': use one of dc, alvis, alvis-light, jsonl", 2),
        (("t", "-o", "/nonexistent/dir/out.xml"), "cannot write /nonexistent/dir/out.xml.part: No such file", 1),
    ],
)
def test_export_command_errors_are_one_line(stored, args, message, exitcode):
    result = stored.scrapy("export", *args)
    assert result.returncode == exitcode
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.stderr


@pytest.mark.crawl
def test_export_command_help_names_formats_and_selection(stored):
    result = stored.scrapy("export", "--help")
    assert result.returncode == 0
    for option in ("--format", "--output", "--class", "--since", "--until", "alvis-light"):
        assert option in result.stdout


@pytest.mark.crawl
def test_crawl_then_export_every_format(job_dir, tmp_path):
    port = free_port()
    topic = (PROJECT / "topics" / "demo" / "topicdefinition.txt").read_text()
    with LoopbackWeb(demo_sites(port), port=port) as web:
        job_dir.write("WaitIntervalHost = 0.2\nclassifyPlugIn = plain\nsaveHTML = 1\nAllowPrivateAddresses = 1\n", topic, [web.url(DEMO_HOSTS[0])])
        job_dir.crawl()
    with job_dir.records() as db:
        stored = db.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    assert stored >= 5
    dc = tmp_path / "demo.xml"
    assert job_dir.scrapy("export", "t", "-f", "dc", "-o", str(dc)).returncode == 0
    elements = list(parse(dc.read_bytes()).iter(f"{{{OAI_DC_NAMESPACE}}}dc"))
    assert len(elements) == stored
    assert all(oai_dc_schema().validate(element) for element in elements)
    sundews = next(e for e in elements if e.findtext(f"{DC}title") == "Drosera - the sundews")
    assert len(sundews.findall(f"{DC}identifier")) == 2  # one record, both URLs
    assert "drosera" in [s.text for s in sundews.findall(f"{DC}subject")]
    alvis = job_dir.scrapy("export", "t", "-f", "alvis", "--class", "CP.Drosera")
    records = list(parse(alvis.stdout.encode()).iter(f"{A}documentRecord"))
    assert records and all(
        "CP.Drosera" in [c.text for c in r.iter(f"{A}class")] for r in records
    )
    assert any(r.find(f".//{A}location[@documentId]") is not None for r in records)  # links to stored pages
    assert any(r.find(f".//{A}inlinks") is not None for r in records)  # and the stored pages that link to it
