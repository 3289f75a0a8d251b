"""Convert documents to text or HTML through external programs, as Combine's ``converters`` did.

Pure code, no Scrapy. A job maps MIME types to converter programs
(``<converters>`` in combine.cfg, one ``mime/type = program arguments`` a
line; ``{input}`` stands for the document's file; a command without it
reads the document on its standard input).
Several lines for one type are tried in order until one gives text, so a
fallback is one more line. Each program runs without a shell on a temporary
copy of the document, in its own process group, with a wall-clock timeout
and bounds on its memory and on the size of what it writes; the temporary
directory is always removed. A converter that is missing, fails, crashes or
hangs gives a :class:`Conversion` naming what went wrong, never an exception.
"""

from __future__ import annotations

import mimetypes
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

#: Placeholder for the document's temporary file in a converter command.
INPUT = "{input}"
#: Keyword that maps a type to no converter at all (switches a default off).
NONE = "none"
#: Seconds a converter may run, and bytes of address space it may use, unless the job says otherwise.
DEFAULT_TIMEOUT = 30.0
DEFAULT_MEMORY = 1024 * 1024 * 1024
#: A converter's output is cut at this many bytes (RLIMIT_FSIZE on what it writes).
MAX_OUTPUT = 32 * 1024 * 1024

# File-name extensions the converters see (else the system's for the type); textract chooses its parser by it.
EXTENSIONS: Mapping[str, str] = MappingProxyType({
    "application/pdf": ".pdf",
    "application/postscript": ".ps",
    "application/msword": ".doc",
    "application/vnd.ms-excel": ".xls",
    "application/vnd.ms-powerpoint": ".ppt",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "application/rtf": ".rtf",
    "text/rtf": ".rtf",
})

_WORD, _EXCEL, _POWERPOINT = (
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
)

#: The converters every job has unless its combine.cfg maps the type itself (as ``converters`` lines).
DEFAULT_CONVERTER_LINES = (
    "application/pdf = pdftotext -enc UTF-8 -q {input} -",
    "application/postscript = ps2ascii {input}",
    "application/msword = antiword -m UTF-8.txt {input}",
    "application/msword = catdoc -d utf-8 {input}",
    "application/vnd.ms-excel = xls2csv -d utf-8 {input}",
    "application/vnd.ms-powerpoint = catppt -d utf-8 {input}",
    "application/rtf = unrtf --nopict --html {input}",
    "text/rtf = unrtf --nopict --html {input}",
    f"{_WORD} = textract {{input}}",
    f"{_EXCEL} = textract {{input}}",
    f"{_POWERPOINT} = textract {{input}}",
)

_MIME = re.compile(r"^[a-z0-9][\w.+-]*/[\w.+-]+$", re.IGNORECASE)
_HTML_START = re.compile(rb"^\s*(<\?xml[^>]*>\s*)?(<!DOCTYPE\s+html|<html)", re.IGNORECASE)


@dataclass(frozen=True)
class Converter:
    """One converter program: ``argv`` with ``{input}`` where the document's file goes."""

    mime_type: str
    argv: tuple[str, ...]

    @property
    def program(self) -> str:
        return self.argv[0]

    @property
    def reads_stdin(self) -> bool:
        return not any(INPUT in arg for arg in self.argv[1:])

    def command(self, path: str) -> list[str]:
        """The argument list for one document; the program resolved on PATH and beside this Python."""
        executable = _which(self.program) or self.program
        args = [path if arg == INPUT else arg.replace(INPUT, path) for arg in self.argv[1:]]
        return [executable, *args]


def parse_converter(line: str) -> tuple[str, Converter | None]:
    """``mime/type = program args`` -> (type, converter); ``= none`` gives (type, None).

    Raises ValueError saying what is wrong with the line.
    """
    mime_type, sep, command = line.partition("=")
    mime_type, command = mime_type.strip().lower(), command.strip()
    if not sep or not _MIME.match(mime_type):
        raise ValueError("expected 'mime/type = program arguments'")
    try:
        argv = tuple(shlex.split(command))
    except ValueError as e:
        raise ValueError(f"bad quoting in the command: {e}") from e
    if not argv:
        raise ValueError(f"no program given for {mime_type}")
    if argv == (NONE,):
        return mime_type, None
    return mime_type, Converter(mime_type, argv)


def converter_map(
    lines: list[str] | tuple[str, ...], base: Mapping[str, tuple[Converter, ...]] | None = None
) -> Mapping[str, tuple[Converter, ...]]:
    """Build ``{mime type: converters in order}``; the lines' types replace those of ``base``."""
    mapping: dict[str, list[Converter]] = {}
    for line in lines:
        mime_type, converter = parse_converter(line)
        mapping.setdefault(mime_type, [])
        if converter is not None:
            mapping[mime_type].append(converter)
    merged = dict(base or {})
    merged.update({mime_type: tuple(converters) for mime_type, converters in mapping.items()})
    return MappingProxyType({mime_type: converters for mime_type, converters in merged.items() if converters})


DEFAULT_CONVERTERS = converter_map(DEFAULT_CONVERTER_LINES)


@dataclass(frozen=True)
class Limits:
    """Bounds on one converter run."""

    timeout: float = DEFAULT_TIMEOUT
    memory: int = DEFAULT_MEMORY
    output: int = MAX_OUTPUT


@dataclass(frozen=True)
class Conversion:
    """What converting one document gave: text (or HTML), or why there is none.

    ``failure`` is None on success, else one of missing, timeout, crashed,
    failed, empty; ``detail`` is for the log line.
    """

    converter: Converter
    output: bytes = b""
    failure: str | None = None
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def is_html(self) -> bool:
        return bool(_HTML_START.match(self.output[:1024]))


def _which(program: str) -> str | None:
    """A program on PATH, or installed beside this Python (``textract`` in the virtual environment)."""
    here = str(Path(sys.executable).parent)
    return shutil.which(program, path=os.pathsep.join([os.environ.get("PATH", os.defpath), here]))


def _bounded(argv: list[str], limits: Limits) -> list[str]:
    """Wrap ``argv`` in prlimit: address space and written file size bounded before the program starts.

    prlimit sets the limits and execs the program, so no Python runs between
    fork and exec (``preexec_fn`` is unsafe when the crawl has threads).
    """
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        return argv
    return [prlimit, f"--as={limits.memory}", f"--fsize={limits.output}", "--", *argv]


def convert(body: bytes, converter: Converter, limits: Limits = Limits()) -> Conversion:
    """Run one converter on ``body``; never raises for the converter's sake."""
    if _which(converter.program) is None:
        return Conversion(converter, failure="missing", detail=f"{converter.program} not found on PATH")
    suffix = EXTENSIONS.get(converter.mime_type) or mimetypes.guess_extension(converter.mime_type) or ""
    with tempfile.TemporaryDirectory(prefix="combine-convert-") as directory:
        source = Path(directory) / f"document{suffix}"
        source.write_bytes(body)
        argv = _bounded(converter.command(str(source)), limits)
        with (
            open(source if converter.reads_stdin else os.devnull, "rb") as stdin,
            tempfile.TemporaryFile(dir=directory) as out,
            tempfile.TemporaryFile(dir=directory) as err,
        ):
            try:
                process = subprocess.Popen(
                    argv, stdin=stdin, stdout=out, stderr=err, cwd=directory,
                    start_new_session=True,  # its own process group: a timeout kills the helpers it started too
                )
            except OSError as e:
                return Conversion(converter, failure="missing", detail=f"cannot run {converter.program}: {e.strerror}")
            try:
                returncode = process.wait(timeout=limits.timeout)
            except subprocess.TimeoutExpired:
                return Conversion(converter, failure="timeout", detail=f"stopped after {limits.timeout:g} s")
            finally:
                _kill_group(process)  # a converter that hangs, and helpers left behind by one that exited
            out.seek(0)
            output = out.read(limits.output)
            err.seek(0)
            message = err.read(2000).decode("utf-8", "replace").strip().splitlines()
    last_error = message[-1][:200] if message else ""
    if returncode < 0:
        name = _signal_name(-returncode)
        return Conversion(converter, output, "crashed", f"killed by {name}" + (f": {last_error}" if last_error else ""))
    if returncode > 0:
        return Conversion(converter, output, "failed", f"exit status {returncode}" + (f": {last_error}" if last_error else ""))
    if not output.strip():
        return Conversion(converter, output, "empty", "no text in the output")
    return Conversion(converter, output)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the converter's whole process group (shell scripts like ps2ascii start gs) and reap it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


def convert_document(
    body: bytes, mime_type: str, converters: Mapping[str, tuple[Converter, ...]], limits: Limits = Limits()
) -> list[Conversion]:
    """Try the type's converters in order; the list ends with the first success (empty: no converter)."""
    attempts = []
    for converter in converters.get(mime_type, ()):
        attempts.append(convert(body, converter, limits))
        if attempts[-1].ok:
            break
    return attempts
