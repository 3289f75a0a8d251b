"""Benchmark: seconds to load a job whose topic definition has many terms.

    .venv/bin/python -m bench.topic_load --terms 200000

Writes a job of ``--terms`` distinct rows (words, phrases, ``@and`` terms,
and, in the second case, one regular expression in ten) to a temporary
directory and times ``load_job`` on it, best of ``--rounds``, wall-clock and
CPU seconds (the CPU figure is steadier on a shared machine). Writes
bench/results/topic_load.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import random
import string
import tempfile
import time
from pathlib import Path

from bench.report import RESULTS, environment, write_report
from combine_scrapy.job import load_job


def definition_text(terms: int, regex_share: float, seed: int = 1) -> str:
    """``terms`` distinct rows of random words; ``regex_share`` of them regular expressions (``word[^\\s]*``)."""
    rng = random.Random(seed)

    def word() -> str:
        return "".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 10)))

    rows = []
    regex_every = round(1 / regex_share) if regex_share else 0
    for number in range(terms):
        kind = number % 10
        if regex_every and number % regex_every == regex_every - 1:
            term = word()[:5] + r"[^\s]*"
        elif kind < 6:
            term = f"{word()}{number}"
        elif kind < 8:
            term = f"{word()} {word()}{number}"
        else:
            term = f"{word()}{number} @and {word()}"
        rows.append(f"{rng.choice([5, 10, 20, 50, 100, -20])}: {term}=C{number % 25}")
    return "\n".join(rows) + "\n"


def time_load(topics: Path, name: str, rounds: int) -> dict:
    best_wall = best_cpu = float("inf")
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        job = load_job(name, topics)
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return {"terms": len(job.definition.terms), "seconds": round(best_wall, 2), "cpu_seconds": round(best_cpu, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--terms", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()

    cases = {"plain": 0.0, "regex10": 0.1}
    figures = {}
    with tempfile.TemporaryDirectory() as topics:
        for case, share in cases.items():
            directory = Path(topics) / case
            directory.mkdir()
            (directory / "combine.cfg").write_text("WaitIntervalHost = 1\n")
            (directory / "seeds.txt").write_text("http://127.0.0.2:8931/\n")
            (directory / "topicdefinition.txt").write_text(definition_text(args.terms, share))
            figures[case] = time_load(Path(topics), case, args.rounds)
            figures[case]["bytes"] = (directory / "topicdefinition.txt").stat().st_size
    result = {
        **environment(f"python -m bench.topic_load --terms {args.terms} --rounds {args.rounds}"),
        "load_average_1min_at_end": round(os.getloadavg()[0], 1),
        "cases": figures,
    }
    write_report("topic_load", result, "Loading a large topic definition", [
        f"load_job on a job of {args.terms:,} topic terms, best of {args.rounds}; "
        f"1-minute load average at the end {result['load_average_1min_at_end']} on {result['cpus']} CPUs.",
        "",
        "| definition | size | seconds | CPU seconds |",
        "| --- | --- | --- | --- |",
        f"| words, phrases, @and terms | {figures['plain']['bytes'] / 1e6:.1f} MB | {figures['plain']['seconds']} | {figures['plain']['cpu_seconds']} |",
        f"| the same, one term in ten a regular expression | {figures['regex10']['bytes'] / 1e6:.1f} MB "
        f"| {figures['regex10']['seconds']} | {figures['regex10']['cpu_seconds']} |",
    ])


if __name__ == "__main__":
    main()
