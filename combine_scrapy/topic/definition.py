"""Topic definitions: Combine's ``WEIGHT: TERMS=CLASS-LIST`` rows.

The grammar is Combine's:
a term is a word, a phrase or a Perl-style regular expression, several joined
by `` @and `` must all occur; weights are signed integers; a row names one or
more classes. ``#`` lines and empty lines are ignored. Every error names the
file and line, quoting at most a short excerpt of it.

Loading is linear in the definition's size and does not compile the terms:
the ``regex`` module's compiler takes a quarter of a millisecond a pattern (a
minute for 200,000 terms), so a term is compiled when a page first contains
its words. Terms written as regular expressions are checked while the file is
read, by the standard library's four times faster compiler, and by ``regex``
only for what ``re`` does not know (``\\p{L}``, ``(?<name>...)``, fuzzy
matching). A large definition logs its progress.
"""

from __future__ import annotations

import logging
import re
import time
import warnings
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import regex

from combine_scrapy.jobfiles import JobFileError, excerpt, read_job_file

logger = logging.getLogger(__name__)

# Combine's row (Combine/Matcher.pm, ^\s*(-?\d+):\s+([^=]+)\s*=\s*(.*)$) is split by hand: a regular
# expression with a lazy group followed by \s* takes quadratic time on a line with long blanks.
_WEIGHT = re.compile(r"[-+]?\d+")
# Terms are split on ' @and ' once their blanks are single spaces (a pattern \s+@and\s+ is quadratic on long blanks).
_AND = " @and "
_SPACE = re.compile(r"\s")
# A term written with these characters is a regular expression, not a plain word.
REGEX_CHARACTERS = re.compile(r"[\\\[\](){}?*+|^$.]")
#: Terms shorter than this after stopword removal are skipped, as Combine did.
MIN_TERM_LENGTH = 3
STOPWORDS_FILE = "stopwords.txt"
#: Largest weight (either sign): scores must stay within what the record stores hold.
MAX_WEIGHT = 1_000_000_000
#: A definition of more rows than this logs its progress while it is read.
LARGE_DEFINITION_ROWS = 10_000
#: Seconds between two progress lines while a large definition is read.
PROGRESS_INTERVAL = 5.0


class TopicDefinitionError(ValueError):
    """A topic definition that cannot be used; ``str()`` reads ``file:line: what is wrong``."""

    def __init__(self, source: str, line: int | None, message: str):
        self.source = source
        self.line = line
        self.message = message
        super().__init__(f"{source}:{line}: {message}" if line else f"{source}: {message}")


class NoTermRows(TopicDefinitionError):
    """A topic definition with comments only (as ``scrapy newjob`` writes it): an error for the filters that read one."""


@dataclass(frozen=True)
class TopicTerm:
    """One row: all ``parts`` must occur; each hit earns ``weight`` for each class."""

    weight: int
    parts: tuple[str, ...]
    classes: tuple[str, ...]
    line: int

    @cached_property
    def patterns(self) -> tuple[regex.Pattern[str], ...]:
        """One pattern per part, compiled on first use."""
        return tuple(_lazy_pattern(part, self.line) for part in self.parts)

    @property
    def text(self) -> str:
        """The term as written in the definition, parts joined by ``@and``."""
        return " @and ".join(self.parts)

    @property
    def is_regex(self) -> bool:
        return any(REGEX_CHARACTERS.search(part) for part in self.parts)


@dataclass(frozen=True)
class TopicDefinition:
    terms: tuple[TopicTerm, ...]
    source: str = "<topic definition>"
    stopwords: frozenset[str] = frozenset()
    #: Rows left out (line, why), for the user to see in the log.
    skipped: tuple[tuple[int, str], ...] = ()

    @property
    def classes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(name for term in self.terms for name in term.classes))


def _word_pattern(part: str) -> regex.Pattern[str]:
    """A term part matches as a whole word sequence: ``\\bPART\\b`` (Combine/Matcher.pm)."""
    return regex.compile(rf"\b(?:{part})\b", regex.VERSION0)


# Matches nothing: the pattern of a term the regex module refuses after re accepted it.
_NOTHING = regex.compile(r"(?!)")


def _lazy_pattern(part: str, line: int) -> regex.Pattern[str]:
    try:
        return _word_pattern(part)
    except regex.error as e:  # re accepted it when the definition was read; regex's syntax differs in corners
        logger.error("topic term on line %d (%s) is not a regular expression the matcher knows, skipped: %s", line, excerpt(part), e)
        return _NOTHING


def _check_regex(part: str, source: str, line: int) -> None:
    """Raise TopicDefinitionError when ``part`` is not a regular expression (see the module's docstring)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # re's FutureWarning on what could be a nested set: regex reads it
            re.compile(rf"\b(?:{part})\b")
        return
    except (re.error, RecursionError, OverflowError):
        pass
    try:
        _word_pattern(part)
    except (regex.error, RecursionError, OverflowError) as e:
        raise TopicDefinitionError(source, line, f"bad regular expression {excerpt(part)}: {e}") from e


def _split_row(line: str) -> tuple[str, str, str] | None:
    """``(weight, terms, classes)`` of a ``WEIGHT: TERMS=CLASS-LIST`` row, or None."""
    weight, colon, rest = line.partition(":")
    weight = weight.strip()
    if not colon or not _WEIGHT.fullmatch(weight) or not rest[:1].isspace():
        return None
    terms, equals, classes = rest.partition("=")
    if not equals or not terms.strip():
        return None
    return weight, terms.strip(), classes.strip()


def parse_topic_definition(
    text: str, source: str = "<topic definition>", stopwords: frozenset[str] = frozenset()
) -> TopicDefinition:
    """Parse the text of a topic definition; raise TopicDefinitionError on the first bad row."""
    terms: list[TopicTerm] = []
    skipped: list[tuple[int, str]] = []
    checked: set[str] = set()  # regular expressions already checked
    class_lists: dict[str, tuple[str, ...]] = {}  # rows share class lists: read each once
    lines = text.splitlines()
    progress = _Progress(source, len(lines))
    for number, raw in enumerate(lines, start=1):
        if number % 1000 == 0:
            progress.at(number)
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        row = _split_row(line)
        if not row:
            if re.match(r"[-+]?\d+\s*:", line) and "=" not in line:
                problem = "no '=' before the class list"
            elif re.match(r"[-+]?\d", line):
                problem = "expected 'WEIGHT: TERMS=CLASS-LIST' with a space after the colon"
            else:
                problem = "expected 'WEIGHT: TERMS=CLASS-LIST' (the weight is a signed integer)"
            raise TopicDefinitionError(source, number, f"{problem}; got {excerpt(line)}")
        weight_text, terms_text, classes_text = row
        weight = int(weight_text)
        if abs(weight) > MAX_WEIGHT:
            raise TopicDefinitionError(source, number, f"weight {excerpt(weight_text)} out of range: at most {MAX_WEIGHT:,} either way")
        classes = class_lists.get(classes_text)
        if classes is None:
            classes = class_lists[classes_text] = _class_list(classes_text, line, source, number)
        parts = " ".join(terms_text.split()).split(_AND)
        if stopwords:
            parts = [" ".join(word for word in part.split(" ") if word.lower() not in stopwords) for part in parts]
        if "@and" in terms_text and any(part == "@and" or part.startswith("@and ") or part.endswith(" @and") for part in parts):
            raise TopicDefinitionError(source, number, f"'@and' needs a term on both sides in {excerpt(terms_text)}")
        short = [part for part in parts if len(part) < MIN_TERM_LENGTH]
        if short:
            skipped.append((number, f"term {excerpt(short[0])} is shorter than {MIN_TERM_LENGTH} characters"))
            continue
        for part in parts:
            if part not in checked and REGEX_CHARACTERS.search(part):
                _check_regex(part, source, number)
                checked.add(part)
        terms.append(TopicTerm(weight, tuple(parts), classes, number))
    if not terms:
        raise NoTermRows(source, None, "no term rows: write at least one 'WEIGHT: TERMS=CLASS-LIST' line")
    progress.done(len(terms))
    return TopicDefinition(tuple(terms), source, stopwords, tuple(skipped))


def _class_list(text: str, line: str, source: str, number: int) -> tuple[str, ...]:
    classes = tuple(name for name in (name.strip() for name in text.split(",")) if name)
    if not classes:
        raise TopicDefinitionError(source, number, f"no class after '=' in {excerpt(line)}")
    if any(_SPACE.search(name) for name in classes):
        raise TopicDefinitionError(source, number, f"a class name has a space in {excerpt(text)}; separate classes with ','")
    return classes


class _Progress:
    """Progress lines while a large definition is read: reading 200,000 rows takes seconds."""

    def __init__(self, source: str, rows: int):
        self.source = source
        self.rows = rows
        self.large = rows > LARGE_DEFINITION_ROWS
        self.started = self.last = time.monotonic()
        if self.large:
            logger.info("reading topic definition %s: %s lines", source, f"{rows:,}")

    def at(self, row: int) -> None:
        if self.large:
            now = time.monotonic()
            if now - self.last >= PROGRESS_INTERVAL:
                self.last = now
                logger.info("reading topic definition %s: line %s of %s", self.source, f"{row:,}", f"{self.rows:,}")

    def done(self, terms: int) -> None:
        if self.large:
            elapsed = time.monotonic() - self.started
            logger.info("topic definition %s: %s terms read in %.1f s", self.source, f"{terms:,}", elapsed)


def _read(path: Path) -> str | None:
    try:
        return read_job_file(path)
    except JobFileError as e:
        raise TopicDefinitionError(e.path, e.line, e.message) from e


def load_stopwords(path: Path) -> frozenset[str]:
    """Whitespace-separated words of an optional stopwords file, lower-cased."""
    text = _read(path) or ""
    return frozenset(word.lower() for word in text.split() if not word.startswith("#"))


def load_topic_definition(path: Path | str) -> TopicDefinition:
    """Load a topicdefinition.txt, with the stopwords.txt beside it when there is one."""
    path = Path(path)
    text = _read(path)
    if text is None:
        raise TopicDefinitionError(str(path), None, "missing: write the topic as 'WEIGHT: TERMS=CLASS-LIST' lines")
    return parse_topic_definition(text, str(path), load_stopwords(path.parent / STOPWORDS_FILE))
