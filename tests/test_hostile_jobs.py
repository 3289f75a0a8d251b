"""Hostile job input: every bad file a user (or a program) could put in a job directory.

Each row of the table writes a job with one bad (or odd) file and loads it.
Either the load fails with one short error naming the file, the line and what
is wrong, or, where being lenient is right (a BOM, CRLF line ends, a refused
seed among good ones), the job loads and does the sensible thing. Loading is
pure Python: the table runs in about a second. At the end, crawls run as a
user runs them: a job with no usable seed exits with status 2 and says why.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import JobDir, free_port

from combine_scrapy.job import Job, JobConfigError, load_job
from combine_scrapy.jobfiles import EXCERPT_CHARACTERS
from combine_scrapy.operations.sampleweb import LoopbackWeb, Page
from combine_scrapy.topic import Document

TOPIC = "50: carnivorous plants=CP\n"
SEED = "http://127.0.0.2:8931/"
#: An error message stays short whatever the input: the location, the problem, an excerpt.
MAX_MESSAGE = 400


@dataclass
class Case:
    """One hostile input: files written over a good job, and what loading it must do."""

    id: str
    files: dict[str, str | bytes] = field(default_factory=dict)
    #: (file, line or None, a fragment of the message) of the expected error; None when the job loads.
    error: tuple[str, int | None, str] | None = None
    #: For a job that loads: what must hold of it.
    check: Callable[[Job], object] | None = None
    #: For files that are not plain text: called with the job directory after the files are written.
    setup: Callable[[Path], None] | None = None


def fifo(name: str) -> Callable[[Path], None]:
    def make(directory: Path) -> None:
        (directory / name).unlink(missing_ok=True)
        os.mkfifo(directory / name)
    return make


def directory_named(name: str) -> Callable[[Path], None]:
    def make(directory: Path) -> None:
        (directory / name).unlink(missing_ok=True)
        (directory / name).mkdir()
    return make


def symlink(name: str, target: str | Callable[[Path], str]) -> Callable[[Path], None]:
    def make(directory: Path) -> None:
        (directory / name).unlink(missing_ok=True)
        os.symlink(target(directory) if callable(target) else target, directory / name)
    return make


def outside_file(text: str) -> Callable[[Path], str]:
    """A file beside the job directory, as a link out of it would reach."""
    def write(directory: Path) -> str:
        path = directory.parent / "elsewhere.txt"
        path.write_text(text)
        return str(path)
    return write


def seeds_of(*expected: str) -> Callable[[Job], None]:
    def check(job: Job) -> None:
        assert job.seeds == expected
    return check


def refused(line: int, *fragments: str) -> Callable[[Job], None]:
    def check(job: Job) -> None:
        [seed] = [seed for seed in job.refused_seeds if seed.line == line]
        for fragment in fragments:
            assert fragment in str(seed), str(seed)
        assert len(str(seed)) < MAX_MESSAGE
    return check


def scores(text: str, relevant: bool) -> Callable[[Job], None]:
    def check(job: Job) -> None:
        document = Document(url="http://x.test/", title="", meta="", headings="", text=text)
        assert job.topic_filter.classify(document).relevant is relevant
    return check


LONG_BLANKS = "x" + " " * 200_000 + "y"   # a lazy group before \s*$ would take minutes on it
SECRET_LINE = "root:$6$" + "s" * 120 + ":19000:0:99999:7:::"

CASES = [
    # combine.cfg: numbers
    Case("nan wait", {"combine.cfg": "WaitIntervalHost = nan\n"}, ("combine.cfg", 1, "WaitIntervalHost: expected a finite number, got 'nan'")),
    Case("inf lock", {"combine.cfg": "\n# c\nWaitIntervalHarvesterLockSuccess = inf\n"}, ("combine.cfg", 3, "expected a finite number")),
    Case("empty cutoff", {"combine.cfg": "tot_cutoff =\n"}, ("combine.cfg", 1, "tot_cutoff: no value; leave the line out")),
    Case("negative seconds", {"combine.cfg": "WaitIntervalHost = -5\n"}, ("combine.cfg", 1, "expected a number of seconds from 0")),
    Case("zero timeout", {"combine.cfg": "UAtimeout = 0\n"}, ("combine.cfg", 1, "UAtimeout: expected a number of seconds > 0")),
    Case("float for a whole number", {"combine.cfg": "maxUrlLength = 1e3\n"}, ("combine.cfg", 1, "maxUrlLength: expected a whole number, got '1e3'")),
    Case("huge whole number", {"combine.cfg": "HarvestRetries = 99999999999999999999\n"}, ("combine.cfg", 1, "from 1 to 2,147,483,647")),
    Case("decimal comma", {"combine.cfg": "WaitIntervalHost = 2,5\n"}, ("combine.cfg", 1, "write decimals with '.'")),
    Case("grouped thousands", {"combine.cfg": "WaitIntervalHarvesterLockSuccess = 1,000,000\n"},
         check=lambda job: job.locks.success == 1_000_000),
    Case("non-ASCII digits", {"combine.cfg": "WaitIntervalHost = \u0661\u0662\n"}, ("combine.cfg", 1, "in ASCII digits")),
    Case("trailing comment", {"combine.cfg": "WaitIntervalHost = 5 # five seconds\n"}, ("combine.cfg", 1, "a comment goes on a line of its own")),
    Case("nan fraction", {"combine.cfg": "LinkThreshold = nan\n"}, ("combine.cfg", 1, "LinkThreshold: expected a finite number")),
    Case("nan ratio", {"combine.cfg": "UrlRuleThreshold = NaN\n"}, ("combine.cfg", 1, "UrlRuleThreshold: expected a finite number")),
    Case("empty user agent", {"combine.cfg": "UserAgent =\n"}, ("combine.cfg", 1, "UserAgent: no value")),
    Case("empty operator e-mail", {"combine.cfg": "OperatorEmail =\n"}, check=lambda job: job.fetching.operator_email == ""),
    # combine.cfg: structure
    Case("unknown variable", {"combine.cfg": "WaitIntervalHots = 5\n"}, ("combine.cfg", 1, "did you mean WaitIntervalHost?")),
    Case("duplicate variable", {"combine.cfg": "saveHTML = 1\nsaveHTML = 0\n"}, ("combine.cfg", 2, "saveHTML already set on line 1")),
    Case("unclosed block", {"combine.cfg": "saveHTML = 1\n<exclude>\nURL x\n"}, ("combine.cfg", 2, "<exclude> is never closed")),
    Case("block in a block", {"combine.cfg": "<allow>\nHOST: .*\n<exclude>\n"}, ("combine.cfg", 3, "inside <allow> (opened on line 1)")),
    Case("stray closing tag", {"combine.cfg": "</allow>\n"}, ("combine.cfg", 1, "closes a block that is not open")),
    Case("binary garbage", {"combine.cfg": b"saveHTML = 1\n\x89PNG\r\n\x1a\n\x00\xff"}, ("combine.cfg", 2, "not UTF-8 text")),
    Case("NUL byte", {"combine.cfg": "saveHTML = 1\nsave\0HTML = 1\n"}, ("combine.cfg", 2, "NUL character")),
    Case("UTF-16", {"combine.cfg": "saveHTML = 0\n".encode("utf-16")}, ("combine.cfg", None, "UTF-16")),
    Case("BOM in combine.cfg", {"combine.cfg": "\ufeffWaitIntervalHost = 7\n"}, check=lambda job: job.locks.host == 7),
    Case("CRLF and tabs", {"combine.cfg": "WaitIntervalHost\t=\t3\r\n<exclude>\r\nURL \\.pdf$\r\n</exclude>\r\n"},
         check=lambda job: job.locks.host == 3 and [r.text for r in job.url_rules.exclude] == ["URL \\.pdf$"]),
    Case("huge line", {"combine.cfg": f"UserAgent = {LONG_BLANKS}\nsaveHTML = maybe\n"}, ("combine.cfg", 2, "saveHTML: expected 0 or 1")),
    Case("huge bad line", {"combine.cfg": "A" * 200_000 + " = 1\n"}, ("combine.cfg", 1, "unknown variable")),
    Case("too large", {"combine.cfg": "# padding\n" * 120_000}, ("combine.cfg", None, "too large")),
    Case("bad allow regex", {"combine.cfg": "<allow>\nURL (unclosed\n</allow>\n"}, ("combine.cfg", 2, "bad allow rule 'URL (unclosed'")),
    Case("rule without kind", {"combine.cfg": "<exclude>\n\\.pdf$\n</exclude>\n"}, ("combine.cfg", 2, "a rule starts with 'HOST:'")),
    # topicdefinition.txt
    Case("bad term regex", {"topicdefinition.txt": "# t\n50: (unclosed=A\n"}, ("topicdefinition.txt", 2, "bad regular expression '(unclosed'")),
    Case("regex-module syntax", {"topicdefinition.txt": "50: \\p{L}+vorous plants=A\n"}, check=scores("Carnivorous plants, carnivorous plants", True)),
    Case("catastrophic regex", {"topicdefinition.txt": "100: (a|aa)+b=A\n"}, check=lambda job: job.definition.terms[0].text == "(a|aa)+b"),
    Case("huge weight", {"topicdefinition.txt": "99999999999999999999: plants=A\n"}, ("topicdefinition.txt", 1, "out of range")),
    Case("nan weight", {"topicdefinition.txt": "nan: plants=A\n"}, ("topicdefinition.txt", 1, "the weight is a signed integer")),
    Case("inf weight", {"topicdefinition.txt": "inf: plants=A\n"}, ("topicdefinition.txt", 1, "the weight is a signed integer")),
    Case("empty topic", {"topicdefinition.txt": "# only comments\n\n"}, ("topicdefinition.txt", None, "no term rows")),
    Case("no class", {"topicdefinition.txt": "50: plants=\n"}, ("topicdefinition.txt", 1, "no class after '='")),
    Case("only commas", {"topicdefinition.txt": "50: plants= , ,\n"}, ("topicdefinition.txt", 1, "no class after '='")),
    Case("space in a class", {"topicdefinition.txt": "50: plants=CP Drosera\n"}, ("topicdefinition.txt", 1, "separate classes with ','")),
    Case("dangling @and", {"topicdefinition.txt": "50: plants @and=A\n"}, ("topicdefinition.txt", 1, "'@and' needs a term on both sides in 'plants @and'")),
    Case("lone @and", {"topicdefinition.txt": "50: @and @and plants=A\n"}, ("topicdefinition.txt", 1, "'@and' needs a term on both sides")),
    Case("huge topic line", {"topicdefinition.txt": f"50: {LONG_BLANKS}\n"}, ("topicdefinition.txt", 1, "no '=' before the class list")),
    Case("BOM and CRLF in topic", {"topicdefinition.txt": "\ufeff50: carnivorous plants=CP\r\n"}, check=scores("carnivorous plants " * 3, True)),
    Case("BOM in stopwords", {"stopwords.txt": "\ufeffcarnivorous\n"}, check=lambda job: job.definition.terms[0].parts == ("plants",)),
    Case("binary stopwords", {"stopwords.txt": b"\xff\xfe\x00\x00"}, ("stopwords.txt", None, "UTF-16")),
    # seeds.txt
    Case("BOM in seeds", {"seeds.txt": f"\ufeff{SEED}\n"}, check=seeds_of(SEED)),
    Case("empty seeds", {"seeds.txt": ""}, check=lambda job: job.seeds == () and job.refused_seeds == ()),
    Case("space inside a seed", {"seeds.txt": f"{SEED}\nhttp://a.example/ http://b.example/\n"}, check=refused(2, "seeds.txt:2:", "holds a space")),
    Case("IDN seed", {"seeds.txt": "http://bücher.example/straße\n"}, check=seeds_of("http://xn--bcher-kva.example/stra%C3%9Fe")),
    Case("seed without scheme", {"seeds.txt": "www.example.org/plants\n"}, check=seeds_of("http://www.example.org/plants")),
    Case("ftp seed", {"seeds.txt": "ftp://ftp.example.org/pub/\n"}, check=seeds_of("ftp://ftp.example.org/pub/")),
    Case("javascript seed", {"seeds.txt": f"{SEED}\njavascript:alert(1)\n"}, check=refused(2, "scheme 'javascript' is not one of")),
    Case("very long seed", {"seeds.txt": f"{SEED}\nhttp://example.org/{'a' * 5000}\n"}, check=refused(2, "too_long", "maxUrlLength is 250")),
    Case("excluded seed", {"combine.cfg": "<exclude>\nHOST: example\\.org\n</exclude>\n", "seeds.txt": f"{SEED}\nhttp://example.org/\n"},
         check=refused(2, "exclude rule 'HOST: example\\.org' (combine.cfg line 2) matches host 'example.org'")),
    Case("seed outside allow", {"combine.cfg": "<allow>\nURL ^http://127\\.\n</allow>\n", "seeds.txt": f"{SEED}\nhttp://example.org/\n"},
         check=refused(2, "no allow rule matches", "host 'example.org'")),
    # sitesOK.txt
    Case("URL in sitesOK", {"sitesOK.txt": "www.example.org\nhttp://www.example.org/\n"}, ("sitesOK.txt", 2, "write the host only")),
    Case("host and port in sitesOK", {"sitesOK.txt": "\ufeffWWW.Example.org:8080\n"}, check=lambda job: job.sites_ok == {"www.example.org:8080"}),
    # learned URL rules
    Case("BOM in learned rules", {"combine.cfg": "LearnedUrlRules = 1\n", "learned_urls.txt": "\ufeffsite 127.0.0.2:8931\ncontent ^/a/\n"},
         check=lambda job: job.learned_url_rules is not None),
    # what is not a regular file
    Case("seeds FIFO", setup=fifo("seeds.txt"), error=("seeds.txt", None, "is a FIFO (named pipe), not a regular file")),
    Case("topic FIFO", setup=fifo("topicdefinition.txt"), error=("topicdefinition.txt", None, "is a FIFO")),
    Case("seeds directory", setup=directory_named("seeds.txt"), error=("seeds.txt", None, "is a directory, not a regular file")),
    Case("sitesOK directory", setup=directory_named("sitesOK.txt"), error=("sitesOK.txt", None, "is a directory")),
    Case("seeds device", setup=symlink("seeds.txt", "/dev/zero"), error=("seeds.txt", None, "is a character device")),
    Case("dangling config link", setup=symlink("combine.cfg", "/nonexistent/combine.cfg"),
         error=("combine.cfg", None, "is a symbolic link to '/nonexistent/combine.cfg', which does not exist")),
    Case("dangling optional file", setup=symlink("stopwords.txt", "gone.txt"), error=("stopwords.txt", None, "which does not exist")),
    # A link loop cannot be read even by root (chmod 000 can).
    Case("link loop", setup=symlink("seeds.txt", "seeds.txt"), error=("seeds.txt", None, "cannot read: Too many levels of symbolic links")),
    Case("link out of the job", setup=symlink("sitesOK.txt", outside_file(SECRET_LINE + "\n")), error=("sitesOK.txt", 1, "is not a host name")),
]


def write_job(base: Path, case: Case) -> Path:
    directory = base / "j"
    directory.mkdir(parents=True)
    files = {"combine.cfg": "", "topicdefinition.txt": TOPIC, "seeds.txt": f"{SEED}\n", **case.files}
    for name, content in files.items():
        if isinstance(content, bytes):
            (directory / name).write_bytes(content)
        else:
            (directory / name).write_text(content, encoding="utf-8", newline="")
    if case.setup:
        case.setup(directory)
    return directory


def load_in_thread(topics: Path) -> Job | JobConfigError:
    """load_job, or its error; a load that blocks (a FIFO opened for reading) fails the test instead of hanging it."""
    outcome: list = []

    def load() -> None:
        try:
            outcome.append(load_job("j", topics))
        except JobConfigError as e:
            outcome.append(e)

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    thread.join(60)
    assert outcome, "loading the job blocked"
    return outcome[0]


def test_the_table_is_big_and_its_cases_distinct():
    assert len(CASES) >= 35
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_hostile_job_input(tmp_path, case):
    directory = write_job(tmp_path, case)
    outcome = load_in_thread(tmp_path)
    if case.error is None:
        assert isinstance(outcome, Job), f"expected the job to load, got: {outcome}"
        case.check(outcome)
        return
    assert isinstance(outcome, JobConfigError), f"expected an error, the job loaded: {outcome}"
    file_name, line, fragment = case.error
    where = f"{directory / file_name}:{line}: " if line else f"{directory / file_name}: "
    message = str(outcome)
    assert message.startswith(where), message[:MAX_MESSAGE]
    assert fragment in message, message[:MAX_MESSAGE]
    assert len(message) < MAX_MESSAGE + len(str(directory))


def test_a_line_from_a_linked_file_is_quoted_as_a_short_excerpt_only(tmp_path):
    case = next(case for case in CASES if case.id == "link out of the job")
    write_job(tmp_path, case)
    message = str(load_in_thread(tmp_path))
    assert SECRET_LINE[:EXCERPT_CHARACTERS] in message
    assert SECRET_LINE[: EXCERPT_CHARACTERS + 1] not in message and SECRET_LINE[-20:] not in message


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode (the link-loop case fails for root too)")
def test_an_unreadable_file_is_named(tmp_path):
    directory = write_job(tmp_path, Case("unreadable"))
    (directory / "seeds.txt").chmod(0)
    outcome = load_in_thread(tmp_path)
    assert str(outcome) == f"{directory / 'seeds.txt'}: cannot read: Permission denied"


# End-to-end: crawls with nothing usable to start from end at once, say why, and exit with status 2.

def crawl(job_dir: JobDir) -> tuple[int, str, str]:
    result = job_dir.run_crawl("-s", "COMBINE_IDLE_HORIZON=5")
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    return result.returncode, result.stdout, result.stderr


@pytest.mark.crawl
def test_a_crawl_with_an_empty_seeds_file_and_an_empty_frontier_exits_2(job_dir):
    job_dir.write("WaitIntervalHost = 0.1\n", TOPIC, [])
    status, stdout, stderr = crawl(job_dir)
    assert status == 2
    assert "no usable seed: seeds.txt lists no URL and the frontier is empty: nothing to crawl" in stdout
    assert "Remote control HTTP server" not in stderr  # Scrapy's code-running server is off


@pytest.mark.crawl
def test_a_crawl_whose_every_seed_the_rules_refuse_names_each_and_exits_2(job_dir):
    job_dir.write("WaitIntervalHost = 0.1\n<exclude>\nURL private\n</exclude>\n", TOPIC,
                  ["# start here", "http://127.0.0.2:1/private/", "mailto:someone@example.org"])
    status, stdout, stderr = crawl(job_dir)
    seeds = job_dir.topics / job_dir.name / "seeds.txt"
    assert status == 2
    assert f"WARNING: {seeds}:2: seed 'http://127.0.0.2:1/private/' refused: excluded: exclude rule 'URL private' (combine.cfg line 3) matches URL" in stderr
    assert f"WARNING: {seeds}:3: seed 'mailto:someone@example.org' refused: scheme" in stderr
    assert "no usable seed: every seed of seeds.txt was refused (2, see the warnings above)" in stdout


@pytest.mark.crawl
def test_a_crawl_whose_every_seed_robots_txt_forbids_exits_2(job_dir):
    host = "127.0.0.3"
    site = {"/robots.txt": Page("User-agent: *\nDisallow: /\n", headers={"Content-Type": "text/plain"}),
            "/": Page("<html><body>carnivorous plants</body></html>")}
    with LoopbackWeb({host: site}, port=free_port(host)) as web:
        job_dir.write("WaitIntervalHost = 0.1\n", TOPIC, [web.url(host)])
        status, stdout, stderr = crawl(job_dir)
        assert [hit.path for hit in web.hits_for(host)] == ["/robots.txt"]
    assert status == 2
    assert f"WARNING: seed {web.url(host)} refused: forbidden by the robots.txt of {host}:{web.port}" in stderr
    assert "no usable seed: robots.txt refused every seed (1, see the warnings above): nothing was fetched" in stdout


@pytest.mark.crawl
def test_empty_seeds_are_fine_when_the_frontier_holds_marked_urls(job_dir):
    host = "127.0.0.4"
    site = {"/robots.txt": Page("", status=404), "/": Page("<html><body>carnivorous plants</body></html>")}
    with LoopbackWeb({host: site}, port=free_port(host)) as web:
        job_dir.write("WaitIntervalHost = 0.1\nAllowPrivateAddresses = 1\n", TOPIC, [])  # a loopback host no seed names
        (job_dir.topics / "more-seeds.txt").write_text(web.url(host) + "\n")
        assert job_dir.scrapy("seed", job_dir.name, str(job_dir.topics / "more-seeds.txt")).returncode == 0
        status, stdout, _ = crawl(job_dir)
        assert [hit.path for hit in web.hits_for(host)] == ["/robots.txt", "/"]
    assert status == 0
    assert "no usable seed" not in stdout and "pages fetched: 1" in stdout


@pytest.mark.crawl
def test_an_exclude_rule_that_backtracks_refuses_the_links_it_cannot_decide_and_the_crawl_goes_on(job_dir):
    host = "127.0.0.3"
    trap = "/" + "a" * 40 + "!"
    site = {"/robots.txt": Page("", status=404),
            "/": Page(f'<html><body>carnivorous plants <a href="{trap}">t</a> <a href="/b.html">b</a></body></html>'),
            "/b.html": Page("<html><body>carnivorous plants</body></html>")}
    with LoopbackWeb({host: site}, port=free_port(host)) as web:
        job_dir.write("WaitIntervalHost = 0\n<exclude>\nURL (a|aa)+$\n</exclude>\n", TOPIC, [web.url(host)])
        result = job_dir.crawl()
        paths = [hit.path for hit in web.hits_for(host)]
    assert paths == ["/robots.txt", "/", "/b.html"]
    assert result.stats["urls/rejected/rule_timeout"] == 1
    assert "combine.cfg line 3: exclude rule 'URL (a|aa)+$' may backtrack" in result.stderr
    assert f"rule 'URL (a|aa)+$' (combine.cfg line 3) ran past 0.05 s on '{web.url(host, trap)}'" in result.stderr


class SeedsMarkedFirst(Page):
    """A robots.txt answered only once the frontier holds ``count`` URLs, so a crawl with max_pages=1 does not
    end before its seeds are marked (marking lets the reactor run between batches)."""

    def __init__(self, frontier: Path, count: int):
        super().__init__("", status=404)
        self.frontier, self.count = frontier, count

    def payload(self) -> bytes:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with closing(sqlite3.connect(self.frontier)) as db:  # closed at once: an open read blocks the writer
                    if db.execute("SELECT COUNT(*) FROM urls").fetchall()[0][0] >= self.count:
                        break
            except sqlite3.Error:  # not created yet
                pass
            time.sleep(0.1)
        return super().payload()


@pytest.mark.crawl
def test_a_large_seeds_file_is_marked_in_batches_and_once(job_dir):
    host, count = "127.0.0.4", 25_001
    site = {"/robots.txt": SeedsMarkedFirst(job_dir.data / job_dir.name / "frontier.sqlite", count),
            "/s0.html": Page("<html><body>carnivorous plants</body></html>")}
    with LoopbackWeb({host: site}, port=free_port(host)) as web:
        seeds = [web.url(host, f"/s{n}.html") for n in range(count)]
        job_dir.write("WaitIntervalHost = 0\n", TOPIC, seeds)
        unbounded = ("-s", "COMBINE_MAX_URLS_PER_HOST=0")   # all on one host
        first = job_dir.crawl("-a", "max_pages=1", *unbounded)
        second = job_dir.crawl("-a", "max_pages=1", *unbounded)
    assert first.stats["seeds/marked"] == count
    assert "seeds/marked" not in second.stats
    assert f"the {count} seeds of seeds.txt were marked by an earlier run: not marked again" in second.stderr
    with job_dir.frontier() as db:
        assert db.execute("SELECT COUNT(*) FROM urls").fetchone()[0] == count
