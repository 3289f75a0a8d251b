"""Where a job's stores are (combine_scrapy/stores.py): the data directory made absolute, and the Redis and MySQL
URLs a crawl records for the job's commands, never with their passwords."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from scrapy.settings import Settings

import combine_scrapy
from combine_scrapy.stores import StoresNotGiven, data_directory, record_stores, with_recorded_stores, without_password


def settings_in(directory, **values) -> Settings:
    return Settings({"COMBINE_DATA_DIR": str(directory), "REDIS_PARAMS": {}, **values})


def test_relative_data_directory_is_made_absolute_against_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    directory = data_directory(Settings({"COMBINE_DATA_DIR": "data"}))
    assert directory == tmp_path / "data" and directory.is_absolute()
    assert (directory / "job" / "harvest_log.sqlite").as_uri().startswith("file:///")


def test_the_data_directory_setting_is_read_by_data_directory_alone():
    """Every path under COMBINE_DATA_DIR is built on data_directory(settings), so all mean the same directory."""
    package = Path(combine_scrapy.__file__).parent
    setting = re.compile(r"""["']COMBINE_DATA_DIR["']""")
    readers = sorted(str(path.relative_to(package)) for path in package.rglob("*.py") if setting.search(path.read_text()))
    assert readers == ["stores.py"]


@pytest.mark.parametrize(("url", "expected"), [
    ("mysql://crawler:s3cret@db.example:3306/crawl", ("mysql://crawler@db.example:3306/crawl", True)),
    ("redis://:s3cret@127.0.0.1:6379/0", ("redis://127.0.0.1:6379/0", True)),
    ("redis://127.0.0.1:6379/0?password=s3cret&db=1", ("redis://127.0.0.1:6379/0?db=1", True)),
    ("mysql://root@127.0.0.1/test", ("mysql://root@127.0.0.1/test", False)),
])
def test_without_password(url, expected):
    assert without_password(url) == expected


def test_a_crawl_records_its_stores_without_passwords_and_commands_take_them(tmp_path):
    crawl = settings_in(tmp_path, MYSQL_URL="mysql://root@127.0.0.1/test", REDIS_URL="redis://:s3cret@127.0.0.1:6379/0")
    record_stores(crawl, "j")
    text = (tmp_path / "j" / "stores.json").read_text()
    assert "s3cret" not in text
    assert json.loads(text)["MYSQL_URL"] == {"url": "mysql://root@127.0.0.1/test", "password": False}

    with pytest.raises(StoresNotGiven, match=r"REDIS_URL=.*password"):  # the password must be given again
        with_recorded_stores(settings_in(tmp_path), "j")
    command = settings_in(tmp_path, REDIS_PARAMS={"password": "s3cret"})
    taken = with_recorded_stores(command, "j")
    assert command["MYSQL_URL"] == "mysql://root@127.0.0.1/test" and command["REDIS_URL"] == "redis://127.0.0.1:6379/0"
    assert len(taken) == 2
    given = settings_in(tmp_path, MYSQL_URL="mysql://other@127.0.0.1/x", REDIS_URL="redis://127.0.0.1:6379/1")
    assert with_recorded_stores(given, "j") == [] and given["MYSQL_URL"] == "mysql://other@127.0.0.1/x"


def test_a_crawl_on_sqlite_after_one_on_mysql_warns_and_records_no_stores(tmp_path, caplog):
    record_stores(settings_in(tmp_path, MYSQL_URL="mysql://root@127.0.0.1/test"), "j")
    record_stores(settings_in(tmp_path), "j")
    assert "the last crawl of job j kept its records in MySQL" in caplog.text
    assert with_recorded_stores(settings_in(tmp_path), "j") == []


def test_a_job_never_crawled_or_a_damaged_file_takes_the_settings_alone(tmp_path, caplog):
    assert with_recorded_stores(settings_in(tmp_path), "new") == []
    os.makedirs(tmp_path / "j")
    (tmp_path / "j" / "stores.json").write_text("{not json")
    assert with_recorded_stores(settings_in(tmp_path), "j") == []
    assert "stores.json cannot be read" in caplog.text


def test_harvesters_starting_together_each_record_the_stores_whole(tmp_path):
    """Two harvesters of one job start at once: each writes stores.json through a file of its own (a shared
    temporary name made one's rename fail, and its crawl with it)."""
    import threading

    settings = Settings({"COMBINE_DATA_DIR": str(tmp_path), "REDIS_URL": "redis://127.0.0.1:6379/0"})
    failures: list[BaseException] = []

    def record() -> None:
        try:
            for _ in range(200):
                record_stores(settings, "t")
        except BaseException as e:  # the test reports what a writer raised
            failures.append(e)

    writers = [threading.Thread(target=record) for _ in range(4)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    assert failures == []
    assert json.loads((tmp_path / "t" / "stores.json").read_text())["REDIS_URL"]["url"] == "redis://127.0.0.1:6379/0"
    assert [path.name for path in (tmp_path / "t").iterdir()] == ["stores.json"]
