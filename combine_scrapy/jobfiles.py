"""Reading a job's files: regular files only, of bounded size, UTF-8 with or without a BOM.

A job directory is written by people, and sometimes by other programs, so
anything may sit where a file is expected: a FIFO that would block a reader
forever, a device, a directory, a dangling symbolic link, gigabytes of data.
:func:`read_job_file` refuses those with one clear message, looking at the
file with ``stat`` before opening it, and accepts what Windows editors write
(a UTF-8 BOM, CRLF line ends) silently.

A symbolic link is followed wherever it points (a seed list or stop-word list
shared by several jobs is a link); an error message quotes at most
:data:`EXCERPT_CHARACTERS` characters of a line (:func:`excerpt`), so an error
in a linked file never shows more of it than that.
"""

from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path

#: Characters of a bad line an error message quotes at most.
EXCERPT_CHARACTERS = 80

_MIB = 1024 * 1024
#: Largest file accepted, by file name: far above any real job's, far below what would exhaust memory.
MAX_BYTES = {
    "combine.cfg": 1 * _MIB,
    "topicdefinition.txt": 64 * _MIB,
    "seeds.txt": 256 * _MIB,
    "sitesOK.txt": 64 * _MIB,
    "stopwords.txt": 16 * _MIB,
    "learned_urls.txt": 16 * _MIB,
}
DEFAULT_MAX_BYTES = 16 * _MIB

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class JobFileError(ValueError):
    """A job file that cannot be read; ``str()`` reads ``file[:line]: what is wrong``."""

    def __init__(self, path: Path | str, message: str, line: int | None = None):
        self.path = str(path)
        self.line = line
        self.message = message
        super().__init__(f"{self.path}:{line}: {message}" if line else f"{self.path}: {message}")


def excerpt(text: str, limit: int = EXCERPT_CHARACTERS) -> str:
    """``text`` quoted for an error message, cut to ``limit`` characters (a bad line may be huge, or private).

    Printable characters stand as written (a regular expression keeps its
    single backslashes); others are escaped, so a message stays one line.
    """
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[:limit])
    if len(text) <= limit:
        return f"'{shown}'"
    return f"'{shown}'... ({len(text):,} characters)"


def _size(count: int) -> str:
    return f"{count / _MIB:,.1f} MiB" if count >= _MIB else f"{count:,} bytes"


def _not_regular(mode: int) -> str:
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return f"is {kind}, not a regular file"


def read_job_file(path: Path | str, max_bytes: int | None = None) -> str | None:
    """The text of one job file, or None when there is no such file.

    Raises JobFileError for anything but a regular UTF-8 text file of at most
    ``max_bytes`` (by default its name's :data:`MAX_BYTES`): a dangling
    symbolic link, a directory, FIFO or device, an unreadable, too large or
    binary file. A leading UTF-8 BOM is dropped.
    """
    path = Path(path)
    limit = max_bytes or MAX_BYTES.get(path.name, DEFAULT_MAX_BYTES)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise JobFileError(path, f"is a symbolic link to {excerpt(os.readlink(path))}, which does not exist") from None
        return None
    except OSError as e:
        raise JobFileError(path, f"cannot read: {e.strerror}") from e
    if not stat.S_ISREG(info.st_mode):
        raise JobFileError(path, _not_regular(info.st_mode))
    if info.st_size > limit:
        raise JobFileError(path, f"too large: {_size(info.st_size)}, at most {_size(limit)}")
    try:
        # O_NONBLOCK: should the file have become a FIFO since the stat, opening it does not wait for a writer.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise JobFileError(path, f"cannot read: {e.strerror}") from e
    with os.fdopen(descriptor, "rb") as file:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise JobFileError(path, _not_regular(mode))
        try:
            data = file.read(limit + 1)
        except OSError as e:
            raise JobFileError(path, f"cannot read: {e.strerror}") from e
    if len(data) > limit:
        raise JobFileError(path, f"too large: more than {_size(limit)}")
    return decode_job_text(data, path)


def decode_job_text(data: bytes, path: Path | str) -> str:
    """UTF-8 text without its BOM; an error names the line of the first bad byte."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise JobFileError(path, "is UTF-16 text (it starts with a UTF-16 byte order mark): save it as UTF-8")
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[bom:].decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, bom + e.start) + 1
        raise JobFileError(path, f"not UTF-8 text ({e.reason} at byte {bom + e.start}): save it as UTF-8", line) from e
    nul = text.find("\0")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise JobFileError(path, "holds a NUL character: a binary file, not text", line)
    return text
