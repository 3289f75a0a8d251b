"""``scrapy train JOB --positive P --negative N``: train a job's SVM topic filter (combineSVM).

Each P and N is a folder of example files (``.txt``, ``.html``, ``.htm``,
searched recursively) or a text file listing example URLs one per line. The
model goes to ``topics/JOB/svm-model.joblib``, where ``classifyPlugIn = svm``
finds it.
"""

from __future__ import annotations

import argparse
import http.client
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from combine_scrapy.document.parse import ParsedPage, parse_document
from combine_scrapy.job import CONFIG_FILE, JobConfigError, load_config
from combine_scrapy.operations.control import CommandError, print_error, project_help, settings_of
from combine_scrapy.stores import StoresNotGiven, data_directory, with_recorded_stores
from combine_scrapy.topic.text import Document, tokens

EXAMPLE_TYPES = {".txt": "text/plain", ".html": "text/html", ".htm": "text/html"}
FETCH_TIMEOUT = 30


class ExampleError(ValueError):
    """Examples that cannot be used; ``str()`` names the source and what is wrong."""


def _fetch(url: str, user_agent: str) -> ParsedPage | None:
    """The page at ``url``, or None (and a line on stderr saying why) when it cannot be had."""
    try:
        request = urllib.request.Request(url, headers={"User-Agent": user_agent})
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT) as response:
            headers = {name.lower(): value for name, value in response.headers.items()}
            return parse_document(response.url, response.read(), headers)
    except (OSError, ValueError, http.client.HTTPException) as e:
        print(f"skipped {url}: {e}", file=sys.stderr)
        return None


def _pages(source: Path, user_agent: str) -> Iterator[tuple[str, ParsedPage]]:
    """``(where, page)`` for every example a folder or URL list names."""
    if source.is_dir():
        for path in sorted(source.rglob("*")):
            mime_type = EXAMPLE_TYPES.get(path.suffix.lower())
            if mime_type and path.is_file():
                try:
                    body = path.read_bytes()
                except OSError as e:
                    raise ExampleError(f"{path}: cannot read: {e.strerror}") from e
                yield str(path), parse_document(path.absolute().as_uri(), body, {"content-type": mime_type})
    elif source.is_file():
        try:
            lines = source.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError as e:
            raise ExampleError(f"{source}: not a folder, and not a UTF-8 list of URLs ({e.reason} at byte {e.start})") from e
        for line in lines:
            url = line.strip()
            if url and not url.startswith("#"):
                page = _fetch(url, user_agent)
                if page is not None:
                    yield url, page
    else:
        raise ExampleError(f"{source}: no such folder or URL list")


def read_examples(sources: list[str], kind: str, user_agent: str, main_content: bool = False) -> list[Document]:
    """The example pages of all ``sources``; pages without a word are skipped, with a line on stderr.

    ``main_content``: read each page as the crawl will (topicText = main), its main content block only.
    """
    documents = []
    for source in sources:
        for where, page in _pages(Path(source), user_agent):
            document = Document.from_page(page, main_content=main_content)
            if any(tokens(part) for part in (document.title, document.meta, document.headings, document.text)):
                documents.append(document)
            else:
                print(f"skipped {where}: no words", file=sys.stderr)
    if not documents:
        given = ", ".join(sources) or f"nothing (give --{kind} FOLDER or --{kind} URL-LIST)"
        raise ExampleError(f"no {kind} examples in {given}")
    return documents


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[options] <job> --positive P --negative N"

    def short_desc(self) -> str:
        return "Train a job's SVM topic filter from pages on and off its topic"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        project_help(parser)
        for kind, about in (("positive", "on"), ("negative", "off")):
            parser.add_argument(
                f"--{kind}", action="append", default=[], metavar="FOLDER_OR_URL_LIST",
                help=f"a folder of example files {about} the topic (.txt, .html) or a file listing their URLs; repeatable",
            )
        parser.add_argument(
            "--crawled", action="store_true",
            help="also learn from the job's own crawl: its records as positive examples, the irrelevant pages "
                 "it kept (saveIrrelevant = 1) as negative ones",
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("name one job: scrapy train JOB --positive P --negative N")
        settings = settings_of(self)
        user_agent = settings.get("USER_AGENT")
        try:
            # The configuration only: the SVM filter it names needs the model this command is about to write.
            config = load_config(args[0], settings.get("COMBINE_TOPICS_DIR"))
            job_dir = config.directory
            main_content = config.topic.text == "main"
            if opts.crawled:
                for line in with_recorded_stores(self.settings, config.name):  # the records where the crawl kept them
                    print(line, file=sys.stderr)
                positive, negative = self._crawled(config.name, main_content)
            else:
                positive, negative = [], []
            if opts.positive or not positive:
                positive += read_examples(opts.positive, "positive", user_agent, main_content)
            if opts.negative or not negative:
                negative += read_examples(opts.negative, "negative", user_agent, main_content)
        except (JobConfigError, ExampleError, FileNotFoundError, StoresNotGiven) as e:
            print_error(self, CommandError(str(e), exitcode=2))
            return
        # Imported here: Scrapy imports every command to list them, and scikit-learn takes over a second to load.
        from combine_scrapy.topic.svm import (
            CROSS_VALIDATION_FOLDS,
            MODEL_FILE,
            cross_validated_accuracy,
            page_text,
            save_model,
            train_svm,
        )

        positive_texts = [page_text(document) for document in positive]
        negative_texts = [page_text(document) for document in negative]
        path = job_dir / MODEL_FILE
        save_model(train_svm(positive_texts, negative_texts), path)
        print(f"trained on {len(positive_texts)} positive and {len(negative_texts)} negative examples")
        accuracy = cross_validated_accuracy(positive_texts, negative_texts)
        if accuracy is None:
            print(f"no cross-validation: it needs at least {CROSS_VALIDATION_FOLDS} examples of each kind")
        else:
            print(f"{CROSS_VALIDATION_FOLDS}-fold cross-validation accuracy: {accuracy:.1%}")
        print(f"wrote {path}; use it with classifyPlugIn = svm in {job_dir / CONFIG_FILE}")

    def _crawled(self, job: str, main_content: bool) -> tuple[list[Document], list[Document]]:
        """The job's records and the irrelevant pages its crawl kept, as positive and negative examples."""
        from combine_scrapy.records.irrelevant import crawl_examples

        settings = settings_of(self)
        positive, negative = crawl_examples(job, data_directory(settings), settings.get("MYSQL_URL"), main_content)
        print(f"from the crawl of {job}: {len(positive)} records, {len(negative)} irrelevant pages")
        return positive, negative
