"""Converters: every format Combine handled becomes text, and a bad converter never stops a crawl.

Unit tests run the real converter programs on documents made by
tests/docfixtures.py; the crawl test serves one document of each format
from loopback and finds its text in the stored record.
"""

from __future__ import annotations

import re
import sys
import tempfile

import docfixtures
import pytest
from conftest import JobDir, free_port

from combine_scrapy.document.convert import DEFAULT_CONVERTERS, Limits, convert, convert_document, converter_map, parse_converter
from combine_scrapy.document.convert.image import image_info
from combine_scrapy.document.convert.tex import parse_tex
from combine_scrapy.document.parse import parse_document
from combine_scrapy.job import JobConfigError, load_job
from combine_scrapy.operations.sampleweb import LoopbackWeb, Page
from combine_scrapy.records.store.sql.tables import stored_text

PHRASE = "Carnivorous plants catch insects"
CONVERTED = ("pdf", "ps", "doc", "docx", "xls", "xlsx", "ppt", "pptx", "rtf")


def converter(line: str):
    return parse_converter(line)[1]


@pytest.mark.parametrize("kind", CONVERTED)
def test_default_converters_turn_each_format_into_text(kind):
    data = docfixtures.all_documents(f"{PHRASE} ({kind})")[kind]
    page = parse_document(f"http://x/doc.{kind}", data, {"content-type": docfixtures.MIME_TYPES[kind]})
    assert [c.failure for c in page.conversions] == [None]
    assert f"{PHRASE} ({kind})" in page.text


def test_accents_survive_pdf_word_excel_and_rtf():
    text = "Café, naïve façade"
    for kind in ("pdf", "doc", "docx", "xls", "xlsx", "ppt", "pptx", "rtf"):
        data = docfixtures.all_documents(text)[kind]
        page = parse_document(f"http://x/d.{kind}", data, {"content-type": docfixtures.MIME_TYPES[kind]})
        assert text in page.text, kind


def test_the_type_is_guessed_when_the_server_says_octet_stream():
    pdf = docfixtures.pdf(PHRASE)
    assert PHRASE in parse_document("http://x/download", pdf, {"content-type": "application/octet-stream"}).text
    docx = docfixtures.docx(PHRASE)
    assert PHRASE in parse_document("http://x/report.docx", docx, {}).text


def test_a_word_file_antiword_refuses_falls_back_to_catdoc():
    # Not a Word 97 file: antiword refuses it, catdoc reads its text.
    page = parse_document("http://x/old.doc", f"{PHRASE}\n".encode(), {"content-type": "application/msword"})
    assert [(c.converter.program, c.failure) for c in page.conversions] == [("antiword", "failed"), ("catdoc", None)]
    assert page.text == PHRASE


def test_a_broken_document_gives_a_failure_and_no_text(caplog):
    page = parse_document("http://x/broken.pdf", b"%PDF-1.4 garbage", {"content-type": "application/pdf"})
    assert page.conversions[-1].failure == "failed" and page.text == ""
    assert re.search(r"converter pdftotext for http://x/broken.pdf \(application/pdf\) failed: exit status \d+", caplog.text)


def test_a_hanging_converter_is_killed_with_its_children():
    started = converter("x/y = sh -c 'sleep 60 & sleep 60'")
    result = convert(b"data", started, Limits(timeout=0.3))
    assert (result.failure, result.detail) == ("timeout", "stopped after 0.3 s")


def test_crashing_missing_and_memory_hungry_converters_are_reported():
    assert convert(b"x", converter("x/y = sh -c 'kill -SEGV $$'")).failure == "crashed"
    missing = convert(b"x", converter("x/y = no-such-converter {input}"))
    assert (missing.failure, missing.detail) == ("missing", "no-such-converter not found on PATH")
    hungry = converter(f"x/y = {sys.executable} -c 'print(len(bytearray(300 * 1024 * 1024)))'")
    bounded = convert(b"x", hungry, Limits(memory=200 * 1024 * 1024))
    assert (bounded.failure, bounded.detail) == ("failed", "exit status 1: MemoryError")
    assert convert(b"x", hungry, Limits(memory=1024 * 1024 * 1024)).output == b"314572800\n"


def test_the_document_is_on_stdin_without_input_and_the_temporary_files_go(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert convert(b"from stdin", converter("x/y = cat")).output == b"from stdin"
    assert convert(b"as a file", converter("x/y = cat {input}")).output == b"as a file"
    where = convert(b"%PDF", converter("application/pdf = ls {input}")).output.decode()
    assert where.startswith(f"{tmp_path}/combine-convert-") and where.endswith("/document.pdf\n")
    convert(b"x", converter("x/y = sleep 5"), Limits(timeout=0.2))
    assert list(tmp_path.iterdir()) == []


def test_converter_lines_replace_defaults_per_type_and_none_switches_one_off():
    mapping = converter_map(
        ["application/pdf = pdftohtml -i -stdout {input}", "application/postscript = none", "text/x-foo = foo2txt"],
        DEFAULT_CONVERTERS,
    )
    assert [c.argv for c in mapping["application/pdf"]] == [("pdftohtml", "-i", "-stdout", "{input}")]
    assert "application/postscript" not in mapping
    assert mapping["text/x-foo"][0].reads_stdin
    assert mapping["application/msword"] == DEFAULT_CONVERTERS["application/msword"]


@pytest.mark.parametrize(
    ("line", "message"),
    [("pdftotext {input}", "expected 'mime/type = program arguments'"), ("application/pdf =", "no program given"),
     ("application/pdf = pdftotext 'x", "bad quoting")],
)
def test_a_bad_converter_line_names_the_file_and_line(tmp_path, line, message):
    job = tmp_path / "j"
    job.mkdir()
    (job / "combine.cfg").write_text(f"WaitIntervalHost = 1\n<converters>\n# comment\n{line}\n</converters>\n")
    (job / "seeds.txt").write_text("http://example.org/\n")
    with pytest.raises(JobConfigError) as error:
        load_job("j", tmp_path)
    assert str(error.value).startswith(f"{job / 'combine.cfg'}:4: bad converter")
    assert message in str(error.value)


def test_converted_html_is_parsed_as_html():
    html = converter("application/rtf = unrtf --nopict --html {input}")
    result = convert_document(docfixtures.rtf(PHRASE), "application/rtf", {"application/rtf": (html,)})
    assert result[-1].is_html
    page = parse_document("http://x/a.rtf", docfixtures.rtf(PHRASE), {"content-type": "application/rtf"})
    assert page.text == PHRASE and page.html is None


def test_tex_title_headings_and_text_without_markup():
    document = parse_tex(docfixtures.tex("Sundews", "Growing Drosera", PHRASE).decode())
    assert document.title == "Sundews"
    assert document.headings == ["Growing Drosera"]
    assert f"{PHRASE} with math and emphasis." in document.text
    assert not re.search(r"[\\{}$%]|mc\^2|sec:one|a comment", document.text)


def test_tex_accents_escapes_and_urls():
    source = r"Caf\'e \& cr\`eme: 50\% off, see \url{http://plants.example/tex} and \href{http://b.example/}{here}."
    page = parse_document("http://x/a.tex", source.encode(), {"content-type": "application/x-tex"})
    assert page.text == "Café & crème: 50% off, see and here."
    assert [link.url for link in page.links] == ["http://plants.example/tex", "http://b.example/"]


def test_image_records_keep_format_dimensions_and_embedded_text():
    png = docfixtures.image("png", (64, 48), comment=PHRASE)
    assert (image_info(png).format, image_info(png).width, image_info(png).height) == ("PNG", 64, 48)
    page = parse_document("http://x/p.png", png, {"content-type": "image/png"})
    assert page.meta["image-width"] == ["64"] and page.meta["image-height"] == ["48"]
    assert page.meta["description"] == [PHRASE] and page.text == PHRASE
    assert image_info(b"GIF89a broken") is None
    head_only = parse_document("http://x/p.gif", b"", {"content-type": "image/gif", "content-length": "1234"})
    assert head_only.meta == {"image-bytes": ["1234"]}


@pytest.mark.crawl
def test_every_format_crawled_from_loopback_lands_in_its_record(tmp_path):
    job_dir = JobDir(topics=tmp_path / "topics", data=tmp_path / "data")
    host, port = "127.0.0.2", free_port()
    documents = docfixtures.all_documents(PHRASE)
    names = [f"document.{kind}" for kind in documents] + ["hang.bin", "crash.bin", "missing.bin", "old.doc"]
    site = {
        "/robots.txt": Page("", status=404),
        "/": Page("<html><title>Documents</title><body>" + "".join(f'<a href="/{n}">{n}</a>' for n in names) + "</body></html>"),
        **{f"/document.{kind}": Page(data, headers={"Content-Type": docfixtures.MIME_TYPES[kind]}) for kind, data in documents.items()},
        "/hang.bin": Page(b"x", headers={"Content-Type": "application/x-hang"}),
        "/crash.bin": Page(b"x", headers={"Content-Type": "application/x-crash"}),
        "/missing.bin": Page(b"x", headers={"Content-Type": "application/x-missing"}),
        "/old.doc": Page(PHRASE.encode(), headers={"Content-Type": "application/msword"}),
    }
    config = (
        "WaitIntervalHost = 0.05\nConverterTimeout = 2\nHeadOnlyExtensions = zip\n"
        "<exclude>\nURL never-excluded\n</exclude>\n"
        "<converters>\napplication/x-hang = sleep 100\napplication/x-crash = sh -c 'kill -SEGV $$'\n"
        "application/x-missing = no-such-converter {input}\n</converters>\n"
    )
    with LoopbackWeb({host: site}, port=port) as web:
        job_dir.write(config, "100: carnivorous plants=CP\n", [web.url(host)], **{"sitesOK.txt": f"{host}\n"})
        result = job_dir.crawl()
    with job_dir.records() as db:
        rows = db.execute("SELECT u.url, r.text, r.meta FROM record_urls u JOIN records r ON r.key = u.key").fetchall()
    records = {url.rsplit("/", 1)[1]: (stored_text(text), meta) for url, text, meta in rows}
    for kind in documents:
        if kind != "gif":
            assert PHRASE in records[f"document.{kind}"][0], kind
    assert '"image-width": ["40"]' in records["document.gif"][1]
    assert PHRASE in records["old.doc"][0]
    log = result.stderr
    assert re.search(r"converter sleep for http://\S+/hang.bin \(application/x-hang\) timeout: stopped after 2 s", log)
    assert re.search(r"converter sh for http://\S+/crash.bin \(application/x-crash\) crashed: killed by SIGSEGV", log)
    assert re.search(r"converter no-such-converter for http://\S+/missing.bin \(application/x-missing\) missing", log)
    counts = {key.removeprefix("convert/"): n for key, n in result.stats.items() if key.startswith("convert/")}
    assert counts == {"ok": 10, "timeout": 1, "crashed": 1, "missing": 1, "failed": 1}  # failed: antiword on old.doc
