"""What the job commands share (Combine's combineCtrl): opening a job's backends with
one-line errors, and the pid files by which running harvesters can be found and stopped.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import redis
from scrapy.commands import ScrapyCommand, ScrapyHelpFormatter
from scrapy.settings import BaseSettings, Settings
from scrapy.utils.log import configure_logging

from combine_scrapy.context import CrawlContext
from combine_scrapy.faults import CrawlFault
from combine_scrapy.frontier.redis import RedisFrontier
from combine_scrapy.job import Job, JobConfig, JobConfigError, build_job, load_config
from combine_scrapy.records.store import RecordStore, open_store
from combine_scrapy.stores import data_directory, with_recorded_stores

HARVESTERS_DIR = "harvesters"


class CommandError(Exception):
    """A failure the user can fix; ``str()`` is the one line they see, ``exitcode`` the status."""

    def __init__(self, message: str, exitcode: int = 1):
        super().__init__(message)
        self.exitcode = exitcode


def print_error(command: ScrapyCommand, error: CommandError) -> None:
    """How every project command fails: one ``error: ...`` line on stderr, and the error's exit status."""
    print(f"error: {error}", file=sys.stderr)
    command.exitcode = error.exitcode


@contextmanager
def _bad_job() -> Iterator[None]:
    """A JobConfigError raised inside becomes a CommandError ``bad job: ...``, status 2."""
    try:
        yield
    except JobConfigError as e:
        raise CommandError(f"bad job: {e}", exitcode=2) from e


def settings_of(command: ScrapyCommand) -> Settings:
    """The project's settings, which Scrapy gives every command before it runs it (ScrapyCommand types them optional)."""
    if command.settings is None:
        raise RuntimeError(f"{type(command).__module__} run without the project's settings")
    return command.settings


def load_checked_config(name: str, settings: BaseSettings) -> JobConfig:
    """The configuration of job ``name`` of COMBINE_TOPICS_DIR (nothing built); a bad or missing job is a CommandError."""
    with _bad_job():
        return load_config(name, settings.get("COMBINE_TOPICS_DIR"))


def build_checked_job(config: JobConfig) -> Job:
    """The job of ``config``, its parts built; one that cannot be built (a bad filter or rules file) is a CommandError."""
    with _bad_job():
        return build_job(config)


def load_checked_job(name: str, settings: BaseSettings) -> Job:
    """The job ``name`` of COMBINE_TOPICS_DIR; a bad or missing one is a CommandError ``bad job: ...``, status 2."""
    return build_checked_job(load_checked_config(name, settings))


class HelpFormatter(ScrapyHelpFormatter):
    """Scrapy's help layout, with underlined headings only where argparse puts its section headings.

    Scrapy's formatter takes every part of the help that ends in ``:`` for a
    heading, so an option's description wrapped after ``(default:`` came out
    title-cased and underlined.
    """

    def format_part_strings(self, part_strings: list[str]) -> list[str]:
        if part_strings and part_strings[0].startswith("usage: "):
            part_strings[0] = "Usage\n=====\n  " + part_strings[0].removeprefix("usage: ")
        for index in reversed(range(len(part_strings))):
            part = part_strings[index]
            # An option's description starts after its flags on their line, or indented on lines of its own.
            follows_text = index > 0 and not part_strings[index - 1].endswith("\n")
            if part.endswith(":\n") and not part[:1].isspace() and not follows_text:
                heading = part.removesuffix(":\n").title()
                underline = "-" if "Global Options" in heading else "="
                part_strings[index:index + 1] = [heading, f"\n{underline * len(heading)}\n"]
        return part_strings


def project_help(parser: argparse.ArgumentParser) -> None:
    """Give a command's parser the project's help layout (HelpFormatter)."""
    parser.formatter_class = HelpFormatter


class JobCommand(ScrapyCommand):
    """A project command about one job: ``scrapy NAME [options] JOB ...``.

    Subclasses implement ``run_job``; a CommandError there becomes
    ``error: ...`` on stderr and the error's exit status (print_error).
    """

    requires_project = True
    requires_crawler_process = False  # no crawl: no reactor, quicker to start
    default_settings = {"LOG_ENABLED": False}
    #: Positional arguments after the job: (fewest, most).
    extra_args = (0, 0)
    #: Whether the command opens the stores the job's crawl recorded (stores.json) when the settings name none.
    reads_recorded_stores = True

    def syntax(self) -> str:
        return "[options] <job>"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.error = self.usage_error  # type: ignore[method-assign]  # argparse's own prints the whole usage
        project_help(parser)

    def usage_error(self, message: str) -> NoReturn:
        """Bad arguments: one line naming what is wrong, exit status 2 (argparse would print the whole usage)."""
        print(f"error: {message} (usage: scrapy {self.command_name} {self.syntax()}; see --help)", file=sys.stderr)
        raise SystemExit(2)

    @property
    def command_name(self) -> str:
        return type(self).__module__.rsplit(".", 1)[-1]

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        fewest, most = self.extra_args
        if not fewest + 1 <= len(args) <= most + 1:
            self.usage_error(f"{len(args)} arguments given" if args else "name the job")
        configure_logging(self.settings)  # quiet unless asked (--loglevel): the output is the command's answer
        try:
            job = self.load_job(args[0])
            if self.reads_recorded_stores:
                self.use_recorded_stores(job.name)
            self.run_job(job, args[1:], opts)
            sys.stdout.flush()  # a reader that went away shows here, not as a traceback at exit
        except CommandError as e:
            print_error(self, e)
        except BrokenPipeError:  # scrapy status JOB | head: the reader has what it wanted; end quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())

    def use_recorded_stores(self, job: str) -> None:
        """Read the Redis frontier and MySQL records the job's crawl recorded, unless the settings name others;
        say so on standard error (the answer on standard output stays clean)."""
        with opening_errors_as_command_errors():
            for line in with_recorded_stores(self.settings, job):
                print(line, file=sys.stderr)

    @property
    def project_settings(self) -> Settings:
        return settings_of(self)

    def load_job(self, name: str) -> Job:
        return load_checked_job(name, self.project_settings)

    def run_job(self, job: Job, args: list[str], opts: argparse.Namespace) -> None:
        """Do the command's work for ``job``; ``args`` are the positional arguments after it."""
        raise NotImplementedError

    @contextmanager
    def context(self, job: Job) -> Iterator[CrawlContext]:
        """The job's frontier and records, as its harvesters see them (REDIS_URL, MYSQL_URL or the data dir)."""
        with open_context(job, self.project_settings) as context:
            yield context

    @contextmanager
    def records(self, job: Job) -> Iterator[RecordStore]:
        """The job's record store alone (MYSQL_URL or the data dir); a job without records is one error line."""
        try:
            with opening_errors_as_command_errors():
                store = open_store(job.name, self.data_dir, self.project_settings.get("MYSQL_URL"), create=False)
        except FileNotFoundError as e:
            raise CommandError(str(e)) from e
        try:
            yield store
        finally:
            store.close()

    @property
    def data_dir(self) -> Path:
        return data_directory(self.settings)


@contextmanager
def opening_errors_as_command_errors() -> Iterator[None]:
    """What opening a job's stores can raise, as the one CommandError line a command prints."""
    try:
        yield
    except ValueError as e:  # a malformed MYSQL_URL; the message names it
        raise CommandError(str(e), exitcode=2) from e
    except ConnectionError as e:  # the MySQL store connects when opened
        raise CommandError(f"cannot reach MySQL: {e}") from e
    except CrawlFault as e:  # a damaged, unwritable or locked SQLite file: the message names it and the fix
        raise CommandError(str(e)) from e


@contextmanager
def open_context(job: Job, settings: BaseSettings) -> Iterator[CrawlContext]:
    """Open the job's backends from the settings (REDIS_URL, MYSQL_URL, else the data dir).

    A command does not wait out a Redis or MySQL outage as a harvester does: an
    unreachable or misnamed server is one CommandError line at once.
    """
    redis_url = settings.get("REDIS_URL")
    if redis_url:
        try:
            redis.connection.parse_url(redis_url)  # type: ignore[no-untyped-call]  # redis-py types not parse_url
        except ValueError as e:
            raise CommandError(f"bad REDIS_URL {redis_url!r}: {e}", exitcode=2) from e
    with opening_errors_as_command_errors():
        context = CrawlContext.from_settings(settings, job, outage_patience=0)
    try:
        if isinstance(context.frontier, RedisFrontier):
            context.frontier.server.ping()
        yield context
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as e:
        raise CommandError(f"cannot reach Redis at {redis_url}: {e}") from e
    finally:
        context.close()


# Pid files: data/<job>/harvesters/<pid>.pid, holding the process's start time, so that a
# file left by a harvester that was killed never leads to signalling an unrelated process
# that got the same pid later.

def harvesters_dir(data_dir: str | Path, job: str) -> Path:
    return Path(data_dir) / job / HARVESTERS_DIR


def process_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), None when unknown or gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def is_running(pid: int) -> bool:
    """Whether the process exists and has not exited (a zombie waiting for its parent counts as exited)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def write_pid_file(directory: Path, pid: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{pid}.pid"
    path.write_text(f"{pid} {process_start(pid) or ''}\n")
    return path


def running_harvesters(directory: Path) -> list[int]:
    """Pids of the harvesters whose pid files are there and that still run; stale files are removed."""
    pids = []
    for path in sorted(directory.glob("*.pid")) if directory.is_dir() else []:
        try:
            pid_text, _, started = path.read_text().strip().partition(" ")
            pid = int(pid_text)
        except (OSError, ValueError):
            path.unlink(missing_ok=True)
            continue
        if is_running(pid) and (not started or process_start(pid) == started):
            pids.append(pid)
        else:
            path.unlink(missing_ok=True)
    return pids


def stop_processes(pids: list[int], timeout: float, poll: float = 0.2) -> list[int]:
    """Send SIGTERM (Scrapy's graceful shutdown) to each, wait up to ``timeout`` s; returns those still running."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    waiting = list(pids)
    while waiting and time.monotonic() < deadline:
        time.sleep(poll)
        waiting = [pid for pid in waiting if is_running(pid)]
    return waiting
