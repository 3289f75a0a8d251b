"""SQLite habits every store of the project shares: write-ahead logging, and one write transaction."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager

_SQLITE_BUSY = 5


def use_write_ahead_log(db: sqlite3.Connection, patience: float = 30.0) -> None:
    """Switch the file to WAL, waiting up to ``patience`` seconds for another process that holds it.

    SQLite answers "database is locked" at once, without its busy timeout, when two processes
    switch a new file to WAL at the same moment (harvesters starting together); the switch is
    asked again until the other is done. After that the error is the connection's own (a
    StorageFault naming the file, on a guarded connection).
    """
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        try:
            sqlite3.Connection.execute(db, "PRAGMA journal_mode=WAL")
            return
        except sqlite3.Error as error:
            if (getattr(error, "sqlite_errorcode", 0) or 0) & 0xFF != _SQLITE_BUSY:
                break
            time.sleep(0.05)
    db.execute("PRAGMA journal_mode=WAL")


@contextmanager
def write_transaction(db: sqlite3.Connection | sqlite3.Cursor) -> Iterator[None]:
    """Run the block as one ``BEGIN IMMEDIATE`` transaction: committed at its end, rolled back on any error.

    ``BEGIN IMMEDIATE`` takes the write lock before the first statement, so the block never meets another
    writer half-way. A COMMIT that failed (a full disk) was already undone by SQLite: no ROLLBACK follows it.
    """
    connection = db if isinstance(db, sqlite3.Connection) else db.connection
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if connection.in_transaction:
            db.execute("ROLLBACK")
        raise
