"""Crawled text made safe for XML 1.0 and UTF-8, whatever the page held.

XML 1.0 allows tab, newline, carriage return and the code points from U+0020
up, except the surrogates and U+FFFE/U+FFFF. A crawled page can hold anything:
C0 control characters become spaces (as Combine's exporter did, so words
around them stay apart); a surrogate pair held as two code points is joined
into the character it encodes; lone surrogates and U+FFFE/U+FFFF become
U+FFFD, the replacement character. Everything else is kept, and escaped so
that a parser reads back exactly the cleaned text: ``&``, ``<``, ``>`` always,
carriage returns as ``&#13;`` (a parser turns a literal one into a newline),
and in attribute values also quotes, tabs and newlines (which attribute
normalisation would turn into spaces).
"""

from __future__ import annotations

import re

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]+")
_CDATA_BREAKS = re.compile(r"\]\]>|\r")


def _joined_pair(match: re.Match[str]) -> str:
    pair: str = match.group()
    return pair.encode("utf-16-le", "surrogatepass").decode("utf-16-le")


def repair_surrogates(text: str) -> str:
    """Text that encodes as UTF-8: surrogate pairs joined, lone surrogates replaced by U+FFFD."""
    if not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub("\ufffd", _SURROGATE_PAIR.sub(_joined_pair, text))


def xml_chars(text: str) -> str:
    """``text`` with every character XML 1.0 cannot carry replaced (see the module docstring)."""
    if not _NOT_XML.search(text):
        return text
    text = _CONTROL.sub(" ", repair_surrogates(text))
    return _NOT_XML.sub("\ufffd", text)


def escape(text: str) -> str:
    """Element content that parses back to ``xml_chars(text)``."""
    text = xml_chars(text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#13;")


def quote(text: str) -> str:
    """An attribute value, quotes included, that parses back to ``xml_chars(text)``."""
    text = escape(text).replace('"', "&quot;").replace("\t", "&#9;").replace("\n", "&#10;")
    return f'"{text}"'


def _cdata_break(match: re.Match[str]) -> str:
    # "]]>" may not appear inside a CDATA section: end the section between "]]" and ">".
    # A carriage return inside one would be read as a newline: write it as a character reference.
    return "]]]]><![CDATA[>" if match.group() == "]]>" else "]]>&#13;<![CDATA["


def cdata(text: str) -> str:
    """One or more CDATA sections that parse back to ``xml_chars(text)``."""
    text = xml_chars(text)
    return f"<![CDATA[{_CDATA_BREAKS.sub(_cdata_break, text)}]]>"
