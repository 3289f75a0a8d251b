"""A newcomer's audit: every `scrapy` command example of README.md and docs/*.md, run as written in a project
directory on the sample web, in the order the documents give them.

The examples are read from the documents' code blocks, so a new one is covered without a change here. What
stands in for a newcomer's world:

- the project is a copy of the repository's scrapy.cfg and topics/; ``glass`` (a live-web job) is the demo job
  there, so that its examples have records to work on; the sample web listens on a free port, which replaces
  8931 in the seeds and in an example's URL;
- the files the examples name (example folders for ``scrapy train``, URL lists, more-seeds.txt) are written
  first, as a user would have them; ``JOB`` in an example is ``glass``;
- one crawl (the README's first example) feeds every other example.

An example passes when it ends with the status :data:`STATUS` gives it (0 unless listed there, with why) and
without a traceback. :data:`SKIPPED` lists the examples that cannot run here, each with the reason.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from conftest import PROJECT, free_port
from userproject import SCRAPY_PROGRAM, UserProject, user_environment

from combine_scrapy.operations.sampleweb import DEMO_HOSTS, DEMO_PORT, LoopbackWeb, demo_sites

pytestmark = pytest.mark.crawl

DOCUMENTS = [PROJECT / "README.md", *sorted((PROJECT / "docs").glob("*.md"))]
#: An example's placeholder, and the job of this project it stands for.
PLACEHOLDERS = {"JOB": "glass"}

#: Examples that cannot run here, matched by the start of the command as written, and why.
SKIPPED = {
    "scrapy crawl focused -a job=glass -a continuous=1": "never ends by design (a continuous crawl waits for revisits)",
    "scrapy crawl focused -a job=glass -s REDIS_URL=": "harvesters in the background on Redis: tests/test_harvesters_redis.py",
    "scrapy crawl focused -a job=glass -s MYSQL_URL=mysql://crawler:secret@db.example":
        "a MariaDB server on another host; the MySQL paths are tests/test_crawl_mysql.py and test_userpaths.py",
    "scrapy harvest glass -n 4 -s REDIS_URL=": "harvesters on a Redis server elsewhere or named by a placeholder",
    "scrapy serve": "a server that runs until stopped, on a fixed port; test_userpaths.py serves the console this way",
    "scrapy seed glass topics/glass/seeds.txt -s REDIS_URL=$R": "a shell variable naming a Redis server",
    "scrapy report glass --compare glass-pagerank": "a second crawled job to compare with",
}
#: Examples that end with another status as written here, and why.
STATUS = {
    "scrapy delete glass --id 1234": (1, "the sample web's crawl has no record 1234: one error line says so"),
    "scrapy delete glass --md5 5D41402ABC4B2A76B9719D911017C592": (1, "no such record: one error line says so"),
}


def examples() -> list[tuple[str, str]]:
    """``(where, command)`` of every `scrapy` command in the documents' code blocks, continuation lines joined."""
    found = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for block in re.finditer(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M):
            line_number = text.count("\n", 0, block.start(1)) + 1
            lines = block.group(1).splitlines()
            index = 0
            while index < len(lines):
                start, line = index, lines[index].strip().removeprefix("$ ")
                while line.endswith("\\") and index + 1 < len(lines):
                    index += 1
                    line = line[:-1] + " " + lines[index].strip()
                index += 1
                if line.startswith("scrapy "):
                    found.append((f"{document.relative_to(PROJECT)}:{line_number + start}", line))
    return found


EXAMPLES = examples()


def skip_reason(command: str) -> str | None:
    return next((reason for start, reason in SKIPPED.items() if command.startswith(start)), None)


def write_example_files(root: Path, port: int) -> None:
    """The files and folders the examples name, as a user would have written them."""
    plants, baseball = (f"http://{host}:{port}" for host in DEMO_HOSTS[:2])
    for folder, text in (("plants", "Sundews, pitcher plants and the Venus flytrap catch insects"),
                         ("baseball", "The pitcher threw a strikeout in the ninth inning"),
                         ("cooking", "Simmer the onions in butter until golden")):
        (root / folder).mkdir()
        for number in range(3):
            (root / folder / f"{number}.txt").write_text(f"{text}, page {number}.\n")
    (root / "on-topic-urls.txt").write_text(f"{plants}/\n{plants}/drosera.html\n")
    (root / "off-topic-urls.txt").write_text(f"{baseball}/\n{baseball}/stats.html\n")
    (root / "more-seeds.txt").write_text(f"# more of the plant site\n{plants}/drosera.html\n")


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory):
    """The project with glass standing in for demo, the sample web up, the example files written and one crawl."""
    port = free_port()
    project = UserProject.create(tmp_path_factory.mktemp("newcomer"), port)
    glass, demo = project.root / "topics" / "glass", project.root / "topics" / "demo"
    for name in ("topicdefinition.txt", "seeds.txt"):
        (glass / name).write_text((demo / name).read_text())
    (glass / "combine.cfg").write_text((demo / "combine.cfg").read_text() + "saveIrrelevant = 1\n")
    write_example_files(project.root, port)
    with LoopbackWeb(demo_sites(port), port=port):
        crawl = project.scrapy("crawl", "focused", "-a", "job=glass")
        assert crawl.returncode == 0 and "Traceback" not in crawl.stderr, crawl.stderr[-3000:]
        yield project, port


def run_example(project: UserProject, port: int, command: str) -> subprocess.CompletedProcess:
    for placeholder, value in PLACEHOLDERS.items():
        command = re.sub(rf"\b{placeholder}\b", value, command)
    command = command.replace(f":{DEMO_PORT}/", f":{port}/")
    args = shlex.split(command, comments=True)
    if args[1] == "shell":  # interactive: ask for the page's score, as operating.md does
        return subprocess.run(
            [str(SCRAPY_PROGRAM), *args[1:], "--nolog"], input="print(score(response))\n", cwd=project.root,
            capture_output=True, text=True, timeout=120, env={**user_environment(), "SCRAPY_PYTHON_SHELL": "python"},
        )
    return project.scrapy(*args[1:], timeout=300)


def test_the_documents_have_examples_and_every_listed_skip_is_still_one():
    commands = [command for _, command in EXAMPLES]
    assert len(commands) > 40
    for start in [*SKIPPED, *STATUS]:
        assert any(command.startswith(start) for command in commands), f"no example starts with {start!r} any more"


@pytest.mark.parametrize(("where", "command"), EXAMPLES, ids=[where for where, _ in EXAMPLES])
def test_example_runs_as_written(newcomer, where, command):
    reason = skip_reason(command)
    if reason:
        pytest.skip(reason)
    project, port = newcomer
    result = run_example(project, port, command)
    expected = next((status for start, (status, _) in STATUS.items() if command.startswith(start)), 0)
    output = f"{where}: {command}\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    assert result.returncode == expected, output
    assert "Traceback" not in result.stderr + result.stdout, output
    if " shell " in command:
        assert "relevant: yes" in result.stdout, output
