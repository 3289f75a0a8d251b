"""TeX and LaTeX to text: Combine's internal TeX parser, without an external detex.

Keeps what a reader reads: the title, section headings, and the running
text with commands, comments, math and environments' markup dropped; the
arguments of text commands (``\\emph{x}``, ``\\section{x}``) stay as text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_COMMENT = re.compile(r"(?<!\\)%.*")
_PREAMBLE_END = re.compile(r"\\begin\{document\}")
_DOCUMENT_END = re.compile(r"\\end\{document\}.*", re.DOTALL)
# Environments whose content is not prose.
_DROPPED_ENVIRONMENTS = re.compile(
    r"\\begin\{(equation|align|eqnarray|displaymath|math|verbatim|tikzpicture|figure|thebibliography)\*?\}.*?"
    r"\\end\{\1\*?\}",
    re.DOTALL,
)
_DISPLAY_MATH = re.compile(r"\$\$.*?\$\$|\\\[.*?\\\]", re.DOTALL)
_INLINE_MATH = re.compile(r"(?<!\\)\$.*?(?<!\\)\$|\\\(.*?\\\)", re.DOTALL)
_HEADING = re.compile(r"\\(part|chapter|section|subsection|subsubsection|paragraph)\*?\s*(?:\[[^\]]*\])?\s*\{")
_TITLE = re.compile(r"\\title\s*(?:\[[^\]]*\])?\s*\{")
# Commands whose first argument is not text (labels, references, files, layout).
_ARGUMENT_DROPPED = re.compile(
    r"\\(label|ref|eqref|pageref|cite[a-z]*|include|input|includegraphics|bibliography|bibliographystyle|"
    r"usepackage|documentclass|begin|end|newcommand|renewcommand|setlength|vspace|hspace|url|href)\*?"
    r"(\s*\[[^\]]*\])*(\s*\{[^{}]*\})?"
)
_COMMAND = re.compile(r"\\[A-Za-z@]+\*?(\s*\[[^\]]*\])*")
_ESCAPED = {r"\%": "%", r"\&": "&", r"\$": "$", r"\#": "#", r"\_": "_", r"\{": "{", r"\}": "}", "~": " ", "--": "-"}
_ACCENTS = {
    r"\'e": "é", r"\`e": "è", r"\^e": "ê", r'\"o': "ö", r'\"a': "ä", r'\"u': "ü", r"\'a": "á", r"\`a": "à",
    r"\'o": "ó", r"\'i": "í", r"\'u": "ú", r"\~n": "ñ", r"\c c": "ç", r"\aa": "å", r"\AA": "Å", r"\ss": "ß",
}
_WHITESPACE = re.compile(r"[ \t]+")


@dataclass
class TexDocument:
    title: str = ""
    headings: list[str] = field(default_factory=list)
    text: str = ""


def _braced(source: str, start: int) -> tuple[str, int]:
    """The text inside the braces that open just before ``start``, and the index after them."""
    depth, index = 1, start
    while index < len(source) and depth:
        char = source[index]
        if char == "\\":
            index += 2
            continue
        depth += {"{": 1, "}": -1}.get(char, 0)
        index += 1
    return source[start:index - 1], index


def _arguments(pattern: re.Pattern[str], source: str) -> list[str]:
    found = []
    for match in pattern.finditer(source):
        found.append(_plain(_braced(source, match.end())[0]))
    return [text for text in found if text]


def _plain(source: str) -> str:
    """TeX markup to plain text (no structure)."""
    for tex, char in _ACCENTS.items():
        source = source.replace("{" + tex + "}", char).replace(tex, char)
    source = _ARGUMENT_DROPPED.sub(" ", source)
    source = _COMMAND.sub("", source)
    source = source.replace(r"\\", "\n")
    for tex, char in _ESCAPED.items():
        source = source.replace(tex, char)
    source = re.sub(r"(?<!\\)[{}]", "", source)
    lines = (_WHITESPACE.sub(" ", line).strip() for line in source.splitlines())
    return "\n".join(line for line in lines if line)


def parse_tex(source: str) -> TexDocument:
    """Title, headings and text of a TeX or LaTeX source."""
    source = "\n".join(_COMMENT.sub("", line) for line in source.splitlines())
    title = " ".join(_arguments(_TITLE, source))
    body_start = _PREAMBLE_END.search(source)
    body = source[body_start.end():] if body_start else source
    body = _DOCUMENT_END.sub("", body)
    body = _DROPPED_ENVIRONMENTS.sub(" ", body)
    body = _DISPLAY_MATH.sub(" ", body)
    body = _INLINE_MATH.sub(" ", body)
    headings = _arguments(_HEADING, body)
    body = re.sub(r"\\maketitle", (title + "\n") if title else "", body)
    paragraphs = re.split(r"\n\s*\n", body)
    text = "\n".join(filter(None, (_plain(paragraph).replace("\n", " ") for paragraph in paragraphs)))
    return TexDocument(title=title, headings=headings, text=text)
