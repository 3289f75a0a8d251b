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
