"""The SQLite write transaction helper: committed at the end of its block, undone on any error."""

from __future__ import annotations

import sqlite3

import pytest

from combine_scrapy.faults import connect
from combine_scrapy.sqlitetx import write_transaction


@pytest.fixture
def db(tmp_path):
    connection = connect(str(tmp_path / "t.sqlite"), isolation_level=None)
    connection.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
    yield connection
    connection.close()


def rows(db):
    return [x for (x,) in db.execute("SELECT x FROM t ORDER BY x")]


def test_a_block_is_committed_at_its_end(db, tmp_path):
    with write_transaction(db):
        db.execute("INSERT INTO t VALUES (1)")
        assert db.in_transaction
        db.execute("INSERT INTO t VALUES (2)")
    assert not db.in_transaction
    other = sqlite3.connect(tmp_path / "t.sqlite")
    assert [x for (x,) in other.execute("SELECT x FROM t ORDER BY x")] == [1, 2]
    other.close()


@pytest.mark.parametrize("error", [ValueError, KeyboardInterrupt])
def test_an_error_in_the_block_undoes_all_of_it_and_goes_on(db, error):
    with pytest.raises(error), write_transaction(db.cursor()):
        db.execute("INSERT INTO t VALUES (1)")
        raise error
    assert not db.in_transaction
    assert rows(db) == []


def test_a_failed_statement_undone_by_sqlite_is_not_rolled_back_again(db):
    db.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(sqlite3.IntegrityError), write_transaction(db):
        db.execute("INSERT INTO t VALUES (2)")
        db.execute("ROLLBACK")                     # as SQLite does after some failures
        db.execute("INSERT INTO t VALUES (1)")     # autocommit now: fails alone
    assert rows(db) == [1]


def test_the_write_lock_is_taken_at_the_start(db, tmp_path):
    other = sqlite3.connect(tmp_path / "t.sqlite", isolation_level=None, timeout=0)
    with write_transaction(db), pytest.raises(sqlite3.OperationalError):
        other.execute("BEGIN IMMEDIATE")
    other.close()


def test_the_switch_to_wal_waits_for_another_process_that_holds_the_file(tmp_path):
    """Two harvesters opening a new file at once: the second's switch to WAL is asked again, not failed."""
    import threading

    from combine_scrapy.sqlitetx import use_write_ahead_log

    path = str(tmp_path / "shared.sqlite")
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    later = connect(path, isolation_level=None, timeout=0)  # busy at once, as SQLite answers the race
    threading.Timer(0.3, lambda: holder.execute("COMMIT")).start()
    use_write_ahead_log(later, patience=10)
    assert later.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    later.close()
    holder.close()


def test_a_file_held_longer_than_the_patience_is_a_fault_naming_it(tmp_path):
    from combine_scrapy.faults import StorageFault
    from combine_scrapy.sqlitetx import use_write_ahead_log

    path = str(tmp_path / "held.sqlite")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    later = connect(path, isolation_level=None, timeout=0)
    with pytest.raises(StorageFault, match="held.sqlite is locked by another process"):
        use_write_ahead_log(later, patience=0.2)
    holder.execute("ROLLBACK")
    later.close()
    holder.close()
