"""Faults a crawl cannot go on after, and how they stop it.

A full disk, a damaged or read-only file, a Redis or MySQL that stays
unreachable (a server away for less than OUTAGE_PATIENCE is waited for), or a
frontier that vanished from Redis make every further fetch useless or harmful (fetched pages could not be
stored, or would be fetched again from nothing). Such a fault is a
:class:`CrawlFault`: the crawl logs one line naming what failed and what to do,
closes the spider with the fault's reason (the finish reason in the stats) and
the ``scrapy crawl`` process exits with status 1. What is stored stays as it
was: every write is one transaction, and SQLite undoes a failed one.
"""

from __future__ import annotations

import errno
import functools
import logging
import signal
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, Self, TypeVar, overload

if TYPE_CHECKING:
    from sqlite3 import _Parameters  # typeshed's name for the parameters sqlite3 binds

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

_P = ParamSpec("_P")
_T = TypeVar("_T")
_D = TypeVar("_D")
_C = TypeVar("_C", bound="_Component")
_CursorT = TypeVar("_CursorT", bound=sqlite3.Cursor)

#: Exit status of a crawl stopped by a CrawlFault.
FAULT_EXIT_STATUS = 1

#: Seconds a harvester waits out a Redis or MySQL server that is restarted or unreachable, retrying with back-off,
#: before it gives up (COMBINE_OUTAGE_PATIENCE).
OUTAGE_PATIENCE = 600.0


class CrawlFault(Exception):
    """A fault the crawl must stop for; ``str()`` is the line a person reads, ``reason`` the spider's close reason."""

    reason = "fault"


class StorageFault(CrawlFault):
    """A database file that cannot be written (disk full, I/O error, read-only, damaged, locked)."""

    def __init__(self, message: str, reason: str = "storage_error"):
        super().__init__(message)
        self.reason = reason


class FrontierVanished(CrawlFault):
    """The shared frontier a harvester was working on is gone (a Redis restarted without persistence)."""

    reason = "frontier_vanished"


#: Close reasons that mean the crawl stopped on a fault, not because it was done or asked to stop.
FAULT_REASONS = frozenset({"storage_full", "storage_error", FrontierVanished.reason, "frontier_unreachable",
                           "records_unreachable"})


class Interrupted(BaseException):
    """SIGINT or SIGTERM came while a crawl was being prepared (see :func:`interrupting_signals`). A
    BaseException, as KeyboardInterrupt is: no ``except Exception`` on the way takes it for an error."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signal = signal.Signals(signum)


def _interrupt(signum: int, frame: object) -> None:
    raise Interrupted(signum)


@contextmanager
def interrupting_signals() -> Iterator[None]:
    """Inside, SIGINT and SIGTERM raise Interrupted wherever the main thread is: a crawl being prepared (its job
    loaded, a million seeds checked) has no reactor yet to stop, and the default SIGTERM ends the process without
    a word. A server outage waited out inside (StopSignals) ends as the fault it is instead."""
    previous = {signum: signal.signal(signum, _interrupt) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class StopSignals:
    """Notes SIGINT and SIGTERM while a server outage is waited out, and passes them on to the handlers before
    (Scrapy's, which stop the crawl once the reactor runs again). A handler that raises (Python's
    KeyboardInterrupt, interrupting_signals') would cut the wait short without the fault: it is called on
    leaving, unless a fault is leaving too. Only in the main thread, where handlers run."""

    #: Seconds between two looks at whether a signal came.
    STEP = 0.1

    def __init__(self) -> None:
        self.received: signal.Signals | None = None
        self._previous: dict[signal.Signals, object] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                previous = signal.getsignal(signum)
                if previous is not None:  # None: installed from C, which cannot be restored
                    self._previous[signum] = previous
                    signal.signal(signum, self._handle)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)  # type: ignore[arg-type]  # a handler getsignal gave
        if exc_type is None and self.received is not None:
            if self._previous.get(self.received) is signal.default_int_handler:
                signal.default_int_handler(self.received, None)
            elif self._previous.get(self.received) is _interrupt:
                _interrupt(self.received, None)

    def _handle(self, signum: int, frame: object) -> None:
        self.received = signal.Signals(signum)
        previous = self._previous.get(self.received)
        if callable(previous) and previous not in (signal.default_int_handler, _interrupt):
            previous(signum, frame)

    def sleep(self, seconds: float) -> None:
        """Sleep ``seconds``, or until a signal came."""
        end = time.monotonic() + seconds
        while self.received is None and (left := end - time.monotonic()) > 0:
            time.sleep(min(self.STEP, left))

class OutageWait:
    """How a server that cannot be reached is waited for (Redis, MySQL): pauses that double from FIRST_PAUSE up to
    LONGEST_PAUSE, each announced in the log, for ``patience`` seconds; then (or at once when SIGINT or SIGTERM
    came) it gives up with a CrawlFault that says what to do. Once it has given up (``gave_up``), a later outage
    is tried once, not waited for again: the crawl's closing (the beacon, the leases) must not wait once more.

    ``server`` names the server in the log lines (``Redis``), ``where`` in the give-up text (``MySQL at <URL>``),
    ``setting`` what the operator may have to correct; ``fault`` makes the CrawlFault from the give-up text; the
    lines are logged by ``log``, the server's own logger. One wait serves every outage of one client.
    """

    FIRST_PAUSE = 0.25
    LONGEST_PAUSE = 8.0

    def __init__(self, server: str, setting: str, fault: Callable[[str], CrawlFault], log: logging.Logger, *,
                 where: str | None = None) -> None:
        self.server = server
        self.where = where or server
        self.setting = setting
        self.fault = fault
        self.log = log
        self.gave_up = False   # an outage outlasted its patience (or a signal cut it): no more waiting

    def begin(self, patience: float) -> Outage:
        """One outage, waited for ``patience`` seconds from its first failed attempt on."""
        return Outage(self, patience)

    def pause(self, failures: int) -> float:
        """The pause after the ``failures``-th failed attempt of an outage."""
        return min(self.FIRST_PAUSE * 2.0 ** (failures - 1), self.LONGEST_PAUSE)


class Outage:
    """One stretch of time in which a server cannot be reached (``OutageWait.begin``)."""

    def __init__(self, wait: OutageWait, patience: float) -> None:
        self.wait = wait
        self.patience = patience
        self.started = time.monotonic()
        self.failures = 0

    def failed(self, error: Exception, stop: StopSignals) -> None:
        """After a failed attempt: sleep until the next one, or raise the wait's fault (from ``error``) when the
        patience is spent, the wait gave up before, or a signal came (``stop`` notes them)."""
        wait = self.wait
        self.failures += 1
        waited = time.monotonic() - self.started
        if not wait.gave_up and waited < self.patience and stop.received is None:
            pause = min(wait.pause(self.failures), self.patience - waited)
            wait.log.warning("%s unreachable (%s): waited %.0f s of %g, retry %d in %.2f s (Ctrl-C stops)",
                             wait.server, error, waited, self.patience, self.failures, pause)
            stop.sleep(pause)
            if stop.received is None:
                return
        why = (f"unreachable, and {stop.received.name} came while waiting for it" if stop.received else
               "still unreachable" if wait.gave_up else f"unreachable for {time.monotonic() - self.started:.0f} s")
        wait.gave_up = True
        raise wait.fault(f"{wait.where} {why} ({error}): start it (or correct {wait.setting}) and run again; "
                         "nothing stored is lost") from error

    def ended(self) -> None:
        """The server answered again: say so when it had not."""
        if self.failures:
            self.wait.log.warning("%s reachable again after %.1f s and %d retries", self.wait.server,
                                  time.monotonic() - self.started, self.failures)


# SQLite's primary result codes (https://sqlite.org/rescode.html) that no retry mends.
_SQLITE_PERM, _SQLITE_BUSY, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_CORRUPT = 3, 5, 8, 10, 11
_SQLITE_FULL, _SQLITE_CANTOPEN, _SQLITE_NOTADB = 13, 14, 26


def sqlite_fault(error: sqlite3.Error, path: str) -> StorageFault | None:
    """The StorageFault an SQLite error on ``path`` amounts to, or None when it is not about the file."""
    code = (getattr(error, "sqlite_errorcode", None) or 0) & 0xFF
    if code == _SQLITE_FULL:
        return StorageFault(
            f"the disk holding {path} is full ({error}): free space there and run the crawl again; "
            "it goes on where it stopped", "storage_full",
        )
    if code == _SQLITE_IOERR:
        return StorageFault(
            f"disk I/O error on {path} ({error}): check that disk and its free space, then run the crawl again"
        )
    if code in (_SQLITE_READONLY, _SQLITE_PERM):
        return StorageFault(f"{path} cannot be written ({error}): make it and its directory writable and run again")
    if code == _SQLITE_CANTOPEN:
        return StorageFault(f"cannot open {path} ({error}): check that its directory exists and is writable")
    if code in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return StorageFault(
            f"{path} is damaged ({error}): move it aside and run again; for a lost frontier, "
            "'scrapy sanity JOB --restore' marks the URLs of the stored records again"
        )
    if code == _SQLITE_BUSY:
        return StorageFault(f"{path} is locked by another process ({error}): stop that process or wait for it")
    return None


class GuardedConnection(sqlite3.Connection):
    """An SQLite connection (opened by :func:`connect`) whose file faults are StorageFaults naming the file.

    A ROLLBACK after SQLite has already undone a failed statement (a COMMIT on
    a full disk) is skipped: it would fail with "cannot rollback - no
    transaction is active" and hide the error that matters.
    """

    path: str  # the file, set by connect

    @overload
    def cursor(self, factory: None = None) -> GuardedCursor: ...
    @overload
    def cursor(self, factory: Callable[[sqlite3.Connection], _CursorT]) -> _CursorT: ...
    def cursor(self, factory: Callable[[sqlite3.Connection], sqlite3.Cursor] | None = None) -> sqlite3.Cursor:
        return super().cursor(factory or GuardedCursor)

    def execute(self, sql: str, parameters: _Parameters = (), /) -> sqlite3.Cursor:
        if _is_rollback(sql) and not self.in_transaction:
            return self.cursor()
        return _guarded(self, super().execute, sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[_Parameters], /) -> sqlite3.Cursor:
        return _guarded(self, super().executemany, sql, parameters)

    def executescript(self, script: str, /) -> sqlite3.Cursor:
        return _guarded(self, super().executescript, script)


class GuardedCursor(sqlite3.Cursor):
    """A cursor of a GuardedConnection: the same translation of file faults."""

    def execute(self, sql: str, parameters: _Parameters = (), /) -> Self:
        if _is_rollback(sql) and not self.connection.in_transaction:
            return self
        return _guarded(self.connection, super().execute, sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[_Parameters], /) -> Self:
        return _guarded(self.connection, super().executemany, sql, parameters)


def connect(path: str, **options: Any) -> GuardedConnection:
    """Open ``path`` as a GuardedConnection; a file that cannot be opened is a StorageFault too."""
    try:
        connection = sqlite3.connect(path, factory=GuardedConnection, **options)
    except sqlite3.Error as error:
        raise sqlite_fault(error, path) or error from error
    connection.path = path
    return connection


def make_directory(directory: Path) -> None:
    """Create a data directory (and its parents); one that cannot be made is a StorageFault naming it."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise StorageFault(
            f"cannot create the data directory {directory} ({error.strerror}): check its parent exists and is writable",
            "storage_full" if error.errno == errno.ENOSPC else "storage_error",
        ) from error


def _is_rollback(sql: str) -> bool:
    return sql.strip().upper() == "ROLLBACK"


def _guarded(connection: sqlite3.Connection, call: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    try:
        return call(*args, **kwargs)
    except sqlite3.Error as error:
        fault = sqlite_fault(error, _path_of(connection))
        if fault is None:
            raise
        raise fault from error


def _path_of(connection: sqlite3.Connection) -> str:
    path: str = getattr(connection, "path", "an SQLite database")
    return path


def note_fault(crawler: Crawler, fault: CrawlFault) -> bool:
    """Count the fault; log it and keep its message in the stats the first time. True on that first time."""
    crawler.stats.inc_value(f"fault/{fault.reason}")
    if crawler.stats.get_value("fault/message"):
        return False
    crawler.stats.set_value("fault/message", str(fault))
    crawler.stats.set_value("fault/reason", fault.reason)
    logger.critical("stopping the crawl: %s", fault)
    return True


def stop_crawl(crawler: Crawler, fault: CrawlFault) -> None:
    """Log the fault once and close the spider with its reason; later faults of the same crawl are only counted."""
    if not note_fault(crawler, fault):
        return
    engine = crawler.engine
    if engine is not None and engine.spider is not None:
        from scrapy.utils.defer import deferred_from_coro

        deferred_from_coro(engine.close_spider_async(reason=fault.reason))


class _Component(Protocol):
    """A Scrapy component: it keeps its crawler."""

    crawler: Crawler


def stops_crawl_on_fault(
    default: _D,
) -> Callable[[Callable[Concatenate[_C, _P], _T]], Callable[Concatenate[_C, _P], _T | _D]]:
    """Decorate a Scrapy component's method (the component has ``crawler``): a CrawlFault in it stops the crawl
    and the method returns ``default``, instead of the error escaping into the engine's loop and stalling it."""

    def decorate(method: Callable[Concatenate[_C, _P], _T]) -> Callable[Concatenate[_C, _P], _T | _D]:
        @functools.wraps(method)
        def guarded(self: _C, /, *args: _P.args, **kwargs: _P.kwargs) -> _T | _D:
            try:
                return method(self, *args, **kwargs)
            except CrawlFault as fault:
                stop_crawl(self.crawler, fault)
                return default

        return guarded

    return decorate


def notes_fault_on_open(method: Callable[Concatenate[_C, _P], _T]) -> Callable[Concatenate[_C, _P], _T | None]:
    """Decorate a Scrapy component's ``open(spider)``: a CrawlFault while the spider opens (Redis unreachable
    at start) is logged once and kept in the stats, and CrawlFaults closes the spider with its reason as soon
    as it is open (Scrapy cannot close a spider from inside the scheduler's ``open``)."""

    @functools.wraps(method)
    def guarded(self: _C, /, *args: _P.args, **kwargs: _P.kwargs) -> _T | None:
        try:
            return method(self, *args, **kwargs)
        except CrawlFault as fault:
            note_fault(self.crawler, fault)
            return None

    return guarded
