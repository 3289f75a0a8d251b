"""What every benchmark of this folder records: where and how it ran, as JSON and as a Markdown table."""

from __future__ import annotations

import json
import os
import platform
from datetime import date
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def environment(command: str) -> dict:
    """The date, command line, CPU count and Python version, first fields of every result."""
    return {
        "date": date.today().isoformat(),
        "command": command,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }


def write_report(name: str, result: dict, title: str, body: list[str], directory: Path = RESULTS) -> None:
    """Write ``<directory>/<name>.json`` and ``.md`` (title, how it ran, ``body``) and print the latter."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        f"# {title}",
        "",
        f"`{result['command']}`, {result['date']}, {result['cpus']} CPUs, Python {result['python']}.",
        *body,
        "",
    ]
    (directory / f"{name}.md").write_text("\n".join(lines))
    print("\n".join(lines))
