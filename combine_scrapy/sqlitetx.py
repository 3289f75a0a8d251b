"""One write transaction on an SQLite connection in autocommit mode (``isolation_level=None``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


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
