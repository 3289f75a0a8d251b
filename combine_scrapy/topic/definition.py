"""Topic definitions: Combine's ``WEIGHT: TERMS=CLASS-LIST`` rows.

The grammar is the one of the Combine documentation ("Topic definition"):
a term is a word, a phrase or a Perl-style regular expression, several joined
by `` @and `` must all occur; weights are signed integers; a row names one or
more classes. ``#`` lines and empty lines are ignored. Every error names the
file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import regex

# Combine's row pattern (Combine/Matcher.pm): ^\s*(-?\d+):\s+([^=]+)\s*=\s*(.*)$
_ROW = re.compile(r"^\s*([-+]?\d+)\s*:\s+([^=]+?)\s*=\s*(.*?)\s*$")
_AND = re.compile(r"\s+@and\s+")
_CLASS_SEPARATOR = re.compile(r"\s*,\s*")
# A term written with these characters is a regular expression, not a plain word.
REGEX_CHARACTERS = re.compile(r"[\\\[\](){}?*+|^$.]")
#: Terms shorter than this after stopword removal are skipped, as Combine did.
MIN_TERM_LENGTH = 3
STOPWORDS_FILE = "stopwords.txt"


class TopicDefinitionError(ValueError):
    """A topic definition that cannot be used; ``str()`` reads ``file:line: what is wrong``."""

    def __init__(self, source: str, line: int | None, message: str):
        self.source = source
        self.line = line
        self.message = message
        super().__init__(f"{source}:{line}: {message}" if line else f"{source}: {message}")


@dataclass(frozen=True)
class TopicTerm:
    """One row: all ``parts`` must occur; each hit earns ``weight`` for each class."""

    weight: int
    parts: tuple[str, ...]
    classes: tuple[str, ...]
    line: int
    patterns: tuple[regex.Pattern, ...] = field(compare=False, repr=False)

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


def _compile(part: str, source: str, line: int) -> regex.Pattern:
    """A term part matches as a whole word sequence: ``\\bPART\\b`` (Combine/Matcher.pm)."""
    try:
        return regex.compile(rf"\b(?:{part})\b", regex.VERSION0)
    except regex.error as e:
        raise TopicDefinitionError(source, line, f"bad regular expression {part!r}: {e}") from e


def parse_topic_definition(
    text: str, source: str = "<topic definition>", stopwords: frozenset[str] = frozenset()
) -> TopicDefinition:
    """Parse the text of a topic definition; raise TopicDefinitionError on the first bad row."""
    terms: list[TopicTerm] = []
    skipped: list[tuple[int, str]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        row = _ROW.match(line)
        if not row:
            if re.match(r"^[-+]?\d+\s*:", line) and "=" not in line:
                problem = "no '=' before the class list"
            elif re.match(r"^[-+]?\d", line):
                problem = "expected 'WEIGHT: TERMS=CLASS-LIST' with a space after the colon"
            else:
                problem = "expected 'WEIGHT: TERMS=CLASS-LIST' (the weight is a signed integer)"
            raise TopicDefinitionError(source, number, f"{problem}; got {line!r}")
        weight_text, terms_text, classes_text = row.groups()
        classes = tuple(name for name in _CLASS_SEPARATOR.split(classes_text) if name)
        if not classes:
            raise TopicDefinitionError(source, number, f"no class after '=' in {line!r}")
        if any(re.search(r"\s", name) for name in classes):
            raise TopicDefinitionError(source, number, f"a class name has a space in {classes_text!r}; separate classes with ','")
        parts = []
        for part in _AND.split(terms_text.strip()):
            words = [word for word in part.split() if word.lower() not in stopwords]
            parts.append(" ".join(words))
        if any(part == "@and" or part.startswith("@and ") or part.endswith(" @and") for part in parts):
            raise TopicDefinitionError(source, number, f"'@and' needs a term on both sides in {terms_text!r}")
        short = [part for part in parts if len(part) < MIN_TERM_LENGTH]
        if short:
            skipped.append((number, f"term {short[0]!r} is shorter than {MIN_TERM_LENGTH} characters"))
            continue
        patterns = tuple(_compile(part, source, number) for part in parts)
        terms.append(TopicTerm(int(weight_text), tuple(parts), classes, number, patterns))
    if not terms:
        raise TopicDefinitionError(source, None, "no term rows: write at least one 'WEIGHT: TERMS=CLASS-LIST' line")
    return TopicDefinition(tuple(terms), source, stopwords, tuple(skipped))


def load_stopwords(path: Path) -> frozenset[str]:
    """Whitespace-separated words of an optional stopwords file, lower-cased."""
    if not path.exists():
        return frozenset()
    return frozenset(word.lower() for word in path.read_text(encoding="utf-8").split() if not word.startswith("#"))


def load_topic_definition(path: Path | str) -> TopicDefinition:
    """Load a topicdefinition.txt, with the stopwords.txt beside it when there is one."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise TopicDefinitionError(str(path), None, f"not UTF-8 text ({e.reason} at byte {e.start})") from e
    except OSError as e:
        raise TopicDefinitionError(str(path), None, f"cannot read: {e.strerror}") from e
    return parse_topic_definition(text, str(path), load_stopwords(path.parent / STOPWORDS_FILE))
