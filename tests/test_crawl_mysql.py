"""A crawl with MYSQL_URL stores its records in the real MariaDB, the same records as the SQLite default."""

from __future__ import annotations

import uuid

import pytest
from conftest import JobDir, free_port
from test_crawl import CONFIG, DEMO_TOPIC, PLANTS
from test_store import MYSQL_URL, drop_mysql_tables

from combine_scrapy.operations.sampleweb import LoopbackWeb, demo_sites
from combine_scrapy.records.store import open_store
from combine_scrapy.records.store.mysql import table_prefix

pytestmark = [pytest.mark.crawl, pytest.mark.services]


def stored(job_dir: JobDir, mysql_url: str | None) -> dict[str, set[str]]:
    """Title -> URL paths of every record of the job."""
    store = open_store(job_dir.name, job_dir.data, mysql_url, create=False)
    try:
        return {record.title: {url.split("/", 3)[3] for url in store.urls(record.key)} for record in store}
    finally:
        store.close()


def test_crawl_with_mysql_url_stores_in_mariadb_what_sqlite_stores(tmp_path):
    job = f"my{uuid.uuid4().hex[:8]}"
    on_sqlite = JobDir(topics=tmp_path / "sqlite" / "topics", data=tmp_path / "sqlite" / "data", name=job)
    on_mysql = JobDir(topics=tmp_path / "mysql" / "topics", data=tmp_path / "mysql" / "data", name=job)
    port = free_port()
    try:
        for job_dir, extra in ((on_sqlite, ()), (on_mysql, ("-s", f"MYSQL_URL={MYSQL_URL}"))):
            with LoopbackWeb(demo_sites(port), port=port) as web:
                job_dir.write(CONFIG, DEMO_TOPIC, [web.url(PLANTS)])
                result = job_dir.crawl(*extra)
            assert "Traceback" not in result.stderr
        assert not (on_mysql.data / job / "records.sqlite").exists()   # nothing went to the embedded store
        in_mariadb = stored(on_mysql, MYSQL_URL)
        assert in_mariadb and in_mariadb == stored(on_sqlite, None)
        assert "(tables combine_" in result.stdout + result.stderr     # the summary says where the records are
    finally:
        drop_mysql_tables(table_prefix(job))
