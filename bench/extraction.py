"""Benchmark: main-content extraction quality and CPU, the project against the extraction libraries.

    .venv/bin/python -m bench.extraction [--sets zyte readability] [--only NAME ...] [--repeats 1]

Two public data sets ship in ``bench/data/`` (each with its licence and a
README saying where it comes from); nothing is downloaded:

``zyte``         Zyte's article-extraction-benchmark: 181 news and blog pages with hand-made article bodies (MIT).
``readability``  the real-site pages of Mozilla Readability's test suite, 94 pages: documentation, encyclopaedia,
                 forum, fiction, recipe, blog and news pages, with Readability's expected article (Apache-2.0).

Quality is the Zyte benchmark's own measure (its ``evaluate.py``, reimplemented
here): text is tokenized into ``\\w+`` runs, cut into shingles of 4 tokens (a
text of fewer tokens is one shingle of them all), and for each page the
multisets of shingles of the truth T and the prediction P give
tp = |T ∩ P|, fp = |P - T|, fn = |T - P|, each divided by tp + fp + fn so
every page weighs the same. Per page precision = tp / (tp + fp) and recall =
tp / (tp + fn) (1 when fp = fn = 0; 0 when tp = 0); precision and recall
are the means over the pages (pages with tp + fp = 0, resp. tp + fn = 0,
left out), and F1 = 2PR / (P + R) of those means.

CPU is process time per page (best of ``--repeats`` passes), for the whole
call each extractor needs from the page's bytes: ``parse_document`` is the
project's whole parse (title, links, all text and main content), so its
figure is the cost of a page in a crawl, not of the main content alone.
Writes bench/results/extraction.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import lzma
import re
import statistics
import tarfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from bench.report import RESULTS, environment, write_report
from combine_scrapy.document.parse import parse_document

DATA = Path(__file__).parent / "data"
SETS = ("zyte", "readability")
HEADERS = {"content-type": "text/html; charset=utf-8"}
SHINGLE = 4
_TOKEN = re.compile(r"\w+")

Extractor = Callable[[bytes, str], str]


def load_set(name: str) -> list[tuple[str, bytes, str]]:
    """(page id, HTML bytes, true article text) of every page of a data set, in id order."""
    with lzma.open(DATA / name / "ground-truth.json.xz", "rt", encoding="utf-8") as file:
        truth = json.load(file)
    pages = {}
    with lzma.open(DATA / name / "html.tar.xz") as packed, tarfile.open(fileobj=packed) as archive:
        for member in archive:
            if member.isfile() and member.name.endswith(".html"):
                file = archive.extractfile(member)
                assert file is not None
                pages[Path(member.name).name.removesuffix(".html")] = file.read()
    if pages.keys() != truth.keys():
        raise SystemExit(f"bench/data/{name}: the pages and ground-truth.json.xz name different pages")
    return [(key, pages[key], truth[key].get("articleBody") or "") for key in sorted(pages)]


def shingles(text: str) -> Counter[tuple[str, ...]]:
    tokens = _TOKEN.findall(text or "")
    return Counter(tuple(tokens[i:i + SHINGLE]) for i in range(max(1, len(tokens) - SHINGLE + 1)) if tokens[i:i + SHINGLE])


def page_counts(true: str, predicted: str) -> tuple[float, float, float]:
    """(tp, fp, fn) of shingles, normalized to sum to 1 (all 0 when both texts are empty)."""
    truth, prediction = shingles(true), shingles(predicted)
    tp = sum((truth & prediction).values())
    fp = sum((prediction - truth).values())
    fn = sum((truth - prediction).values())
    total = tp + fp + fn
    return (tp / total, fp / total, fn / total) if total else (0.0, 0.0, 0.0)


def _ratio(tp: float, wrong: float, other: float) -> float:
    if wrong == other == 0:
        return 1.0
    return 0.0 if tp == wrong == 0 else tp / (tp + wrong)


def scores(counts: list[tuple[float, float, float]]) -> dict[str, float]:
    """The benchmark's F1, precision and recall over pages' (tp, fp, fn)."""
    precision = statistics.mean(_ratio(tp, fp, fn) for tp, fp, fn in counts if tp + fp > 0)
    recall = statistics.mean(_ratio(tp, fn, fp) for tp, fp, fn in counts if tp + fn > 0)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"f1": round(f1, 3), "precision": round(precision, 3), "recall": round(recall, 3)}


def _project(attribute: str) -> Extractor:
    def extract(body: bytes, url: str) -> str:
        return getattr(parse_document(url, body, HEADERS), attribute) or ""

    return extract


def _trafilatura(fast: bool) -> Extractor:
    import trafilatura

    def extract(body: bytes, url: str) -> str:
        # As the benchmark's own runner calls it (include_comments=False), from the decoded page.
        return trafilatura.extract(body.decode("utf-8", "replace"), fast=fast, include_comments=False) or ""

    return extract


def _resiliparse() -> Extractor:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    def extract(body: bytes, url: str) -> str:
        return extract_plain_text(HTMLTree.parse_from_bytes(body, "utf-8"), main_content=True)

    return extract


def _justext() -> Extractor:
    import justext

    stoplist = justext.get_stoplist("English")

    def extract(body: bytes, url: str) -> str:
        # The benchmark's runner's parameters.
        paragraphs = justext.justext(body, stoplist, 50, 200, 0.1, 0.2, 0.2, 200, True, encoding="utf-8")
        return "\n".join(p.text for p in paragraphs if not p.is_boilerplate)

    return extract


def _readability() -> Extractor:
    import lxml.html
    from readability import Document

    def extract(body: bytes, url: str) -> str:
        summary = Document(body.decode("utf-8", "replace")).summary(html_partial=True)
        return lxml.html.fromstring(summary).text_content() if summary.strip() else ""

    return extract


#: name: (what it is, how to make it); the project's first.
EXTRACTORS: dict[str, tuple[str, Callable[[], Extractor]]] = {
    "project-main": ("this project, `parse_document(...).main_text` (CPU: the whole parse)", lambda: _project("main_text")),
    "project-text": ("this project, `parse_document(...).text` (all visible text)", lambda: _project("text")),
    "trafilatura-fast": ("trafilatura `extract(fast=True)`", lambda: _trafilatura(True)),
    "trafilatura": ("trafilatura `extract()` (default)", lambda: _trafilatura(False)),
    "resiliparse": ("resiliparse `extract_plain_text(main_content=True)`", _resiliparse),
    "justext": ("jusText (English stoplist)", _justext),
    "readability-lxml": ("readability-lxml `Document.summary()`", _readability),
}


def measure(extract: Extractor, pages: list[tuple[str, bytes, str]], repeats: int) -> dict[str, float]:
    outputs: list[str] = []
    runs = []
    for _ in range(repeats):
        outputs = []
        started = time.process_time()
        for key, body, _ in pages:
            outputs.append(extract(body, f"http://{key}.bench.test/"))
        runs.append((time.process_time() - started) / len(pages) * 1000)
    result = scores([page_counts(true, predicted) for (_, _, true), predicted in zip(pages, outputs)])
    result["cpu_ms"] = round(min(runs), 1)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", choices=SETS, default=list(SETS))
    parser.add_argument("--only", nargs="+", choices=list(EXTRACTORS), help="these extractors only")
    parser.add_argument("--repeats", type=int, default=1, help="passes over each set; the CPU figure is the best")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    names = args.only or list(EXTRACTORS)
    extractors = {name: EXTRACTORS[name][1]() for name in names}
    result: dict = {**environment("python -m bench.extraction" + (" " + " ".join(argv) if argv else "")), "sets": {}}
    body = []
    for set_name in args.sets:
        pages = load_set(set_name)
        for _, body_bytes, _ in pages[:5]:  # warm-up: imports, parsers, caches
            for extract in extractors.values():
                extract(body_bytes, "http://warm-up.bench.test/")
        rows = {name: measure(extract, pages, args.repeats) for name, extract in extractors.items()}
        result["sets"][set_name] = {"pages": len(pages), "extractors": rows}
        body += [
            "",
            f"## {set_name}: {len(pages)} pages of {sum(len(b) for _, b, _ in pages) // len(pages):,} bytes on average",
            "",
            "| extractor | F1 | precision | recall | CPU ms a page |",
            "| --- | --- | --- | --- | --- |",
            *(
                f"| {EXTRACTORS[name][0]} | {row['f1']:.3f} | {row['precision']:.3f} | {row['recall']:.3f} | {row['cpu_ms']} |"
                for name, row in rows.items()
            ),
        ]
    write_report("extraction", result, "Main-content extraction: quality and CPU", body, args.results)


if __name__ == "__main__":
    main()
