"""Benchmark: pages scored per second by each built-in topic classifier.

    .venv/bin/python -m bench.topic_scoring --terms 1000 --page-kb 50

A topic definition of ``--terms`` rows (single words, phrases, ``@and``
terms and one regular expression in ten, drawn from the virtual web's
vocabularies) scores pages of ``--page-kb`` KB of text from the same
vocabularies. Writes bench/results/topic_scoring.{json,md}.
"""

from __future__ import annotations

import argparse
import random
import re
import time

from bench.report import environment, write_report
from bench.virtualweb.vocabulary import VOCABULARIES, _sentence
from combine_scrapy.topic import Document, PlainMatcher, PositionMatcher, parse_topic_definition


def _words(rng: random.Random) -> list[str]:
    words = set()
    for vocabulary in VOCABULARIES:
        for phrase in (*vocabulary.subjects, *vocabulary.objects, *vocabulary.qualifiers, *vocabulary.verbs):
            words.update(w for w in re.findall(r"[a-z]{4,}", phrase.lower()))
    return sorted(words)


def definition_text(terms: int, seed: int) -> str:
    rng = random.Random(seed)
    words = _words(rng)
    rows = []
    for number in range(terms):
        kind = number % 10
        if kind < 5:
            term = rng.choice(words)
        elif kind < 7:
            term = " ".join(rng.sample(words, 2))
        elif kind < 9:
            term = " @and ".join(rng.sample(words, 2))
        else:
            term = rng.choice(words)[:5] + r"[^\s]*"
        weight = rng.choice([5, 10, 20, 50, 100, -20])
        rows.append(f"{weight}: {term}=C{number % 25}")
    return "\n".join(rows) + "\n"


def pages(count: int, kilobytes: int, seed: int) -> list[Document]:
    rng = random.Random(seed + 1)
    documents = []
    for number in range(count):
        vocabulary = VOCABULARIES[number % len(VOCABULARIES)]
        sentences = []
        while sum(len(s) + 1 for s in sentences) < kilobytes * 1024:
            sentences.append(_sentence(vocabulary, rng))
        documents.append(Document(
            url=f"http://h{number}.test/{vocabulary.name.replace(' ', '-')}/{number}.html",
            title=_sentence(vocabulary, rng)[:60],
            meta=_sentence(vocabulary, rng),
            headings=_sentence(vocabulary, rng),
            text=" ".join(sentences),
        ))
    return documents


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--terms", type=int, default=1000)
    parser.add_argument("--page-kb", type=int, default=50)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    definition = parse_topic_definition(definition_text(args.terms, args.seed), "bench")
    documents = pages(args.pages, args.page_kb, args.seed)
    figures = {}
    for matcher in (PlainMatcher(definition), PositionMatcher(definition)):
        started = time.perf_counter()
        relevant = sum(matcher.classify(document).relevant for document in documents)
        seconds = time.perf_counter() - started
        figures[matcher.algorithm] = {
            "pages_per_second": round(len(documents) / seconds, 2),
            "milliseconds_per_page": round(seconds / len(documents) * 1000, 1),
            "relevant": relevant,
        }
    result = {
        **environment(f"python -m bench.topic_scoring --terms {args.terms} --page-kb {args.page_kb} "
                      f"--pages {args.pages} --seed {args.seed}"),
        "terms": len(definition.terms),
        "page_bytes": round(sum(len(d.text) for d in documents) / len(documents)),
        "algorithms": figures,
    }
    write_report("topic_scoring", result, "Topic scoring", [
        f"{result['terms']} terms, pages of {result['page_bytes']:,} characters of text, one process.",
        "",
        "| algorithm | pages per second | ms per page |",
        "| --- | --- | --- |",
        f"| Algorithm 1, plain matching (Std) | {figures['Std']['pages_per_second']} | {figures['Std']['milliseconds_per_page']} |",
        f"| Algorithm 2, position weighted (Pos) | {figures['Pos']['pages_per_second']} | {figures['Pos']['milliseconds_per_page']} |",
    ])


if __name__ == "__main__":
    main()
