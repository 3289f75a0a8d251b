"""An image fetched after a relevant page shows it carries that page's alt text: in its meta, in its
text, and so to the topic filter, which finds it relevant by the alt text alone. Two images with the
same alt text stay two records."""

from __future__ import annotations

import json

import docfixtures
import pytest
from conftest import JobDir, free_port

from combine_scrapy.operations.sampleweb import LoopbackWeb, Page
from combine_scrapy.records.store.sql.tables import stored_text

pytestmark = pytest.mark.crawl

ALT = "Drosera capensis carnivorous plant"
PNG = {"Content-Type": "image/png"}


def test_an_image_record_carries_the_alt_text_of_the_page_showing_it(tmp_path):
    job_dir = JobDir(topics=tmp_path / "topics", data=tmp_path / "data")
    host, port = "127.0.0.2", free_port()
    site = {
        "/robots.txt": Page("", status=404),
        "/": Page(
            "<html><title>Cape sundew</title><body><p>Drosera capensis grows on a sunny windowsill.</p>"
            f'<img src="/plant.png" alt="{ALT}"><img src="/flower.png" alt="{ALT}"><img src="/bare.png"></body></html>'
        ),
        "/plant.png": Page(docfixtures.image("png", (24, 16)), headers=PNG),
        "/flower.png": Page(docfixtures.image("png", (16, 24)), headers=PNG),
        "/bare.png": Page(docfixtures.image("png", (8, 8)), headers=PNG),  # no alt text: nothing makes it relevant
    }
    config = "WaitIntervalHost = 0.05\n<exclude>\nURL \\.(gz|zip|exe)$\n</exclude>\n"  # images allowed
    with LoopbackWeb({host: site}, port=port) as web:
        job_dir.write(config, "100: drosera capensis=CP\n", [web.url(host)])  # no sitesOK.txt: relevance is earned
        result = job_dir.crawl()
        fetched = {hit.path for hit in web.hits_for(host)}
    assert {"/plant.png", "/flower.png", "/bare.png"} <= fetched

    with job_dir.records() as db:
        rows = db.execute(
            "SELECT u.url, r.`key`, r.mime_type, r.text, r.meta FROM record_urls u JOIN records r ON r.`key` = u.`key`"
        ).fetchall()
    records = {url.rsplit("/", 1)[1]: (key, mime_type, stored_text(text), json.loads(meta)) for url, key, mime_type, text, meta in rows}
    assert sorted(records) == ["", "flower.png", "plant.png"]
    _, mime_type, text, meta = records["plant.png"]
    assert mime_type == "image/png" and text == ALT
    assert meta["alt"] == [ALT] and meta["image-width"] == ["24"]
    assert records["flower.png"][3]["image-width"] == ["16"]
    assert records["flower.png"][0] != records["plant.png"][0]  # the same alt text, still two images
    assert result.stats["parse/image_alt_texts"] == 2
