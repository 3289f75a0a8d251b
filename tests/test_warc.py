"""WARC output: records read back by warcio, one response a fetch, rotation, CDXJ index, and a crawl with saveWARC = 1."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import PROJECT, JobDir, free_port
from warcio.archiveiterator import ArchiveIterator

from combine_scrapy.job import JobConfigError, load_job
from combine_scrapy.operations.sampleweb import LoopbackWeb, Page
from combine_scrapy.records.warc import Exchange, WarcArchive

TOPIC = (PROJECT / "topics" / "demo" / "topicdefinition.txt").read_text()


def exchange(path: str, body: bytes = b"<html>hello</html>", **fields) -> Exchange:
    values = dict(
        url=f"http://127.0.0.2:8000{path}",
        method="GET",
        request_headers=[("User-Agent", "combine-scrapy/0.1"), ("Accept-Encoding", "gzip")],
        status=200,
        protocol="HTTP/1.1",
        response_headers=[("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(body)))],
        body=body,
        fetched_at=1_767_225_600.25,
        ip_address="127.0.0.2",
    )
    values.update(fields)
    return Exchange(**values)


def read_records(path: Path) -> list:
    with open(path, "rb") as stream:
        return [
            (record.rec_type, record.rec_headers, record.http_headers, record.raw_stream.read())  # raw: as archived
            for record in ArchiveIterator(stream)
        ]


def test_exchange_is_a_request_and_a_response_record_read_back_by_warcio(tmp_path):
    archive = WarcArchive(tmp_path, prefix="job", operator="op@example.org")
    archive.write(exchange("/a.html", response_headers=[("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")]))
    archive.write(exchange("/cut.html", body=b"x" * 10, truncated="length"))
    archive.close()
    [path] = archive.files_written
    assert path.name.endswith(".warc.gz") and not list(tmp_path.glob("*.open"))
    records = read_records(path)
    assert [r[0] for r in records] == ["warcinfo", "response", "request", "response", "request"]
    info = records[0][3].decode()
    assert "operator: op@example.org" in info and "format: WARC File Format 1.1" in info
    _, response, http, body = records[1]
    assert response.protocol == "WARC/1.1"
    assert response["WARC-Target-URI"] == "http://127.0.0.2:8000/a.html"
    assert response["WARC-Date"] == "2026-01-01T00:00:00.250000Z"
    assert response["WARC-IP-Address"] == "127.0.0.2"
    assert body == b"<html>hello</html>"
    assert http.statusline == "200 OK" and http.protocol == "HTTP/1.1"
    assert http["X-Crawler-Transfer-Encoding"] == "chunked" and http["Transfer-Encoding"] is None
    _, request, request_http, _ = records[2]
    assert request["WARC-Concurrent-To"] == response["WARC-Record-ID"]
    assert request_http.protocol == "GET" and request_http.statusline == "/a.html HTTP/1.1"
    assert request_http["Host"] == "127.0.0.2:8000" and request_http["Accept-Encoding"] == "gzip"
    assert records[3][1]["WARC-Truncated"] == "length" and records[1][1]["WARC-Truncated"] is None


def test_every_record_is_gzipped_on_its_own(tmp_path):
    archive = WarcArchive(tmp_path, prefix="job")
    for number in range(3):
        archive.write(exchange(f"/{number}.html"))
    archive.close()
    data = archive.files_written[0].read_bytes()
    assert data.count(b"\x1f\x8b\x08") >= 7  # warcinfo + 3 × (response, request): one gzip member each
    assert gzip.decompress(data).count(b"WARC/1.1\r\n") == 7


def test_files_rotate_at_the_size_bound_and_each_has_its_sorted_cdxj_index(tmp_path):
    archive = WarcArchive(tmp_path, prefix="job", max_size=3000)
    paths = ["/z.html", "/a.html", "/m.html?b=2&a=1"] * 4
    for number, path in enumerate(paths):
        archive.write(exchange(path, body=bytes(range(256)) * 8 + str(number).encode()))
    archive.close()
    files = archive.files_written
    assert len(files) > 1 and len({f.name for f in files}) == len(files)
    responses = 0
    for path in files:
        records = read_records(path)
        assert records[0][0] == "warcinfo"  # every file stands alone
        responses += sum(1 for r in records if r[0] == "response")
        lines = Path(f"{path}.cdxj").read_text().splitlines()
        assert lines == sorted(lines) and len(lines) == sum(1 for r in records if r[0] == "response")
        for line in lines:
            key, stamp, fields = line.split(" ", 2)
            fields = json.loads(fields)
            assert key.startswith("2,0,0,127:8000)/") and stamp == "20260101000000"
            assert fields["filename"] == path.name and fields["status"] == "200" and fields["mime"] == "text/html"
            with open(path, "rb") as stream:  # the offset leads to that very response record
                stream.seek(int(fields["offset"]))
                record = next(iter(ArchiveIterator(stream)))
                assert record.rec_type == "response" and record.rec_headers["WARC-Target-URI"] == fields["url"]
                assert record.rec_headers["WARC-Payload-Digest"] == f"sha1:{fields['digest']}"
    assert responses == len(paths)
    assert not list(tmp_path.glob("*.open"))


def test_warc_variables_are_validated(tmp_path):
    directory = tmp_path / "j"
    directory.mkdir()
    (directory / "topicdefinition.txt").write_text(TOPIC)
    (directory / "seeds.txt").write_text("http://example.org/\n")
    (directory / "combine.cfg").write_text("saveWARC = 1\nWARCMaxSize = 5000000\n")
    job = load_job("j", tmp_path)
    assert job.archive.save_warc and job.archive.warc_max_size == 5_000_000
    (directory / "combine.cfg").write_text("saveWARC = 1\nWARCMaxSize = 0\n")
    with pytest.raises(JobConfigError, match="combine.cfg:2: WARCMaxSize"):
        load_job("j", tmp_path)


def _page(title: str, text: str, links: str = "") -> Page:
    return Page(f"<html><head><title>{title}</title></head><body><p>{text}</p>{links}</body></html>")


@pytest.mark.crawl
def test_crawl_with_save_warc_archives_one_response_record_per_fetch(job_dir: JobDir):
    plants = "Carnivorous plants: sundews, drosera and nepenthes."
    gzipped_html = _page("Sundews", plants + " Gzipped.").payload()
    pages = {
        "/robots.txt": Page("User-agent: *\nDisallow: /private/\n", headers={"Content-Type": "text/plain"}),
        "/": _page("Carnivorous plants", plants, '<a href="/gz.html">gz</a> <a href="/off.html">off</a>'
                   ' <a href="/missing.html">404</a> <a href="/private/x.html">x</a>'),
        "/gz.html": Page(gzip.compress(gzipped_html), headers={"Content-Type": "text/html", "Content-Encoding": "gzip"}),
        "/off.html": _page("Baseball", "Pitchers and batters."),
    }
    port = free_port()
    with LoopbackWeb({"127.0.0.2": pages}, port=port) as web:
        job_dir.write("WaitIntervalHost = 0.1\nsaveWARC = 1\nclassifyPlugIn = plain\n", TOPIC, [web.url("127.0.0.2")])
        result = job_dir.crawl()
        hits = Counter(web.url("127.0.0.2", hit.path) for hit in web.hits)
    warc_dir = job_dir.data / "t" / "warc"
    files = sorted(warc_dir.glob("*.warc.gz"))
    assert files and not list(warc_dir.glob("*.open"))
    responses, requests = {}, set()
    for path in files:
        for kind, headers, http, body in read_records(path):
            if kind == "response":
                responses.setdefault(headers["WARC-Target-URI"], []).append((http, body))
            elif kind == "request":
                requests.add(headers["WARC-Target-URI"])
    assert Counter({url: len(r) for url, r in responses.items()}) == hits  # robots.txt and the 404 included
    assert set(responses) == requests
    gz_http, gz_body = responses[web.url("127.0.0.2", "/gz.html")][0]
    assert gz_http["Content-Encoding"] == "gzip" and gzip.decompress(gz_body) == gzipped_html  # as it came
    assert responses[web.url("127.0.0.2", "/missing.html")][0][0].get_statuscode() == "404"
    with job_dir.records() as db:
        stored = dict(db.execute("SELECT u.url, r.title FROM record_urls u JOIN records r USING (key)"))
    assert stored and set(stored) <= set(responses)
    for url, title in stored.items():  # each record's page is in the archive as the server sent it
        http, body = responses[url][0]
        page = gzip.decompress(body) if http["Content-Encoding"] == "gzip" else body
        assert f"<title>{title}</title>".encode() in page
    index_lines = [line for path in files for line in Path(f"{path}.cdxj").read_text().splitlines()]
    assert len(index_lines) == sum(hits.values())
    assert result.stats["warc/responses"] == sum(hits.values())


@pytest.mark.crawl
def test_scrapy_trial_leaves_the_jobs_archive_and_kept_pages_alone(job_dir: JobDir):
    pages = {"/": _page("Carnivorous plants", "Sundews and drosera.", '<a href="/off.html">off</a>'),
             "/off.html": _page("Baseball", "Pitchers and batters.")}
    port = free_port()
    with LoopbackWeb({"127.0.0.2": pages}, port=port) as web:
        job_dir.write("WaitIntervalHost = 0.1\nsaveWARC = 1\nsaveIrrelevant = 1\nSitemaps = 1\n", TOPIC,
                      [web.url("127.0.0.2")])
        result = job_dir.scrapy("trial", "t", "--pages", "5")
        fetched = {hit.path for hit in web.hits}
    assert result.returncode == 0, result.stderr[-3000:]
    assert "/off.html" in fetched  # the trial crawled
    assert not (job_dir.data / "t" / "warc").exists() and not (job_dir.data / "t" / "irrelevant.sqlite").exists()
