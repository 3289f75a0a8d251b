"""The grammar of a job's files: combine.cfg's ``Name = value`` lines and ``<block> ... </block>``
lists (Config::General syntax, as Combine's), the values those lines hold, and the one-entry-a-line
lists (seeds.txt, sitesOK.txt). Every error is a :class:`JobConfigError` naming the file and the line.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Collection
from pathlib import Path

from combine_scrapy.jobfiles import JobFileError, excerpt, read_job_file


class JobConfigError(ValueError):
    """A job that cannot be loaded; ``str()`` reads ``file:line: what is wrong``."""

    def __init__(self, path: Path | str, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line else self.path
        super().__init__(f"{where}: {message}")


#: Largest number of seconds a variable takes (100 years: "never" for a lock).
MAX_SECONDS = 100 * 365 * 86_400
#: Largest whole number a variable takes.
MAX_WHOLE = 2**31 - 1
# Digits grouped by ',' must come in threes (1,000,000); '2,5' is a decimal comma, not 25.
_GROUPED = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d*)?")


def parse_number(text: str, whole: bool = False) -> float:
    """A finite number in ASCII digits ('_', and ',' between groups of three, group digits)."""
    kind = "a whole number" if whole else "a number"
    if not text.isascii():
        raise ValueError(f"expected {kind} in ASCII digits, got {excerpt(text)}")
    if "," in text and not _GROUPED.fullmatch(text):
        raise ValueError(f"expected {kind}, got {excerpt(text)} (write decimals with '.'; ',' only between groups of three digits)")
    cleaned = text.replace("_", "").replace(",", "")
    try:
        value = int(cleaned) if whole else float(cleaned)
    except ValueError:
        raise ValueError(f"expected {kind}, got {excerpt(text)}") from None
    if not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {excerpt(text)}")
    return value


def in_range(value: float, text: str, allowed: str, low: float, high: float, low_open: bool = False) -> float:
    """``value`` when it lies from ``low`` (excluded if ``low_open``) to ``high``; else an error saying what is ``allowed``."""
    if value < low or (low_open and value == low) or value > high:
        raise ValueError(f"expected {allowed}, got {excerpt(text)}")
    return value


def parse_bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "yes", "true", "on"):
        return True
    if value in ("0", "no", "false", "off"):
        return False
    raise ValueError(f"expected 0 or 1 (or yes/no), got {excerpt(text)}")


def parse_seconds(text: str) -> float:
    return in_range(parse_number(text), text, f"a number of seconds from 0 to {MAX_SECONDS:,} (100 years)", 0, MAX_SECONDS)


def parse_timeout(text: str) -> float:
    return in_range(parse_number(text), text, f"a number of seconds > 0, at most {MAX_SECONDS:,}", 0, MAX_SECONDS, low_open=True)


def parse_positive_int(text: str) -> int:
    return int(in_range(parse_number(text, whole=True), text, f"a whole number from 1 to {MAX_WHOLE:,}", 1, MAX_WHOLE))


def parse_fraction(text: str) -> float:
    return in_range(parse_number(text), text, "a number from 0 to 1", 0, 1)


def parse_extensions(text: str) -> frozenset[str]:
    return frozenset(word.lstrip(".").lower() for word in text.replace(",", " ").split())


def parse_count(text: str) -> int:
    return int(in_range(parse_number(text, whole=True), text, f"a whole number from 0 to {MAX_WHOLE:,}", 0, MAX_WHOLE))


def parse_ratio(text: str) -> float:
    return in_range(parse_number(text), text, "a number >= 0", 0, math.inf)


def parse_cutoff(text: str) -> float:
    return parse_number(text)


def _read_lines(path: Path, missing: str | None = None) -> list[str] | None:
    """The lines of a job file (see combine_scrapy.jobfiles); None when it is absent and ``missing`` is None."""
    try:
        text = read_job_file(path)
    except JobFileError as e:
        raise JobConfigError(e.path, e.line, e.message) from e
    if text is None:
        if missing is not None:
            raise JobConfigError(path, None, f"missing: {missing}")
        return None
    return text.splitlines()


def _unknown_variable(name: str, known: Collection[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1) if len(name) <= 100 else []
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown variable {excerpt(name)}{hint}"


_NAME = re.compile(r"[A-Za-z_]\w*")
# Anchored at both ends with no lazy group: linear on any line (a lazy '(.*?)\s*$' is quadratic on long blanks).
_BLOCK_OPEN = re.compile(r"<\s*([A-Za-z_]\w*)\s*>")
_BLOCK_CLOSE = re.compile(r"<\s*/\s*([A-Za-z_]\w*)\s*>")


def parse_config(
    path: Path, variables: Collection[str], block_names: Collection[str]
) -> tuple[dict[str, tuple[int, str]], dict[str, list[tuple[int, str]]]]:
    """Split combine.cfg into ``{name: (line, value)}`` and ``{block: [(line, entry)]}``; a name that is
    not one of ``variables`` (or, opening a block, of ``block_names``) is an error naming its line."""
    values: dict[str, tuple[int, str]] = {}
    blocks: dict[str, list[tuple[int, str]]] = {}
    open_block: tuple[str, int] | None = None
    for number, raw in enumerate(_read_lines(path, "every job needs its combine.cfg") or (), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if open_block:
            closing = _BLOCK_CLOSE.fullmatch(line)
            if closing:
                if closing.group(1) != open_block[0]:
                    raise JobConfigError(path, number, f"</{closing.group(1)}> closes <{open_block[0]}> opened on line {open_block[1]}")
                open_block = None
            elif _BLOCK_OPEN.fullmatch(line):
                raise JobConfigError(
                    path, number, f"{line} inside <{open_block[0]}> (opened on line {open_block[1]}): close it first with </{open_block[0]}>"
                )
            else:
                blocks[open_block[0]].append((number, line))
            continue
        opening = _BLOCK_OPEN.fullmatch(line)
        if opening:
            name = opening.group(1)
            if name not in block_names:
                raise JobConfigError(path, number, _unknown_variable(name, [*variables, *block_names]))
            if name in blocks:
                raise JobConfigError(path, number, f"block <{name}> given twice")
            blocks[name] = []
            open_block = (name, number)
            continue
        name, equals, value = line.partition("=")
        name, value = name.strip(), value.strip()
        if not equals or not _NAME.fullmatch(name):
            if _BLOCK_CLOSE.fullmatch(line):
                raise JobConfigError(path, number, f"{line} closes a block that is not open")
            raise JobConfigError(path, number, f"expected 'Name = value' or '<block>', got {excerpt(line)}")
        if name not in variables:
            raise JobConfigError(path, number, _unknown_variable(name, [*variables, *block_names]))
        if name in values:
            raise JobConfigError(path, number, f"{name} already set on line {values[name][0]}")
        values[name] = (number, value)
    if open_block:
        raise JobConfigError(path, open_block[1], f"<{open_block[0]}> is never closed")
    return values, blocks


def list_entries(path: Path, missing: str | None = None) -> list[tuple[int, str]]:
    """Non-empty, non-comment lines of a one-entry-per-line file (optional unless ``missing`` says why not)."""
    return [
        (number, line.strip())
        for number, line in enumerate(_read_lines(path, missing) or (), start=1)
        if line.strip() and not line.strip().startswith("#")
    ]
