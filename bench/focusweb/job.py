"""A crawl job for one topic of the focus web: combine.cfg, the topic's definition, the portals as seeds."""

from __future__ import annotations

from pathlib import Path

from bench.focusweb.web import DOMAIN, FocusWeb

CONFIG = """\
# A job for the focus web (web seed {seed}, topic: {topic}), written by bench.focusweb.
# Its hosts exist only behind the focus web's proxy; crawl it with
#   http_proxy=http://127.0.0.1:{port} scrapy crawl focused -a job={name} -s COMBINE_TOPICS_DIR={topics}
# Nothing here chooses how the crawl is focused: the lines after the block do, or the crawler's defaults.

WaitIntervalHost = {wait}
saveHTML = 0
UserAgent = combine-scrapy/0.1 (focus benchmark)
OperatorEmail = operator@example.org

<allow>
HOST: {domain}$
</allow>
"""


def write_job(web: FocusWeb, topic: int, out: Path, port: int, wait: float,
              variables: dict[str, str] | None = None) -> Path:
    """Create (or overwrite the files of) the job directory ``out`` for ``web.topics[topic]``; returns it.

    ``variables`` are more combine.cfg lines (``CrawlStrategy``: ``BestFirst``).
    """
    out.mkdir(parents=True, exist_ok=True)
    config = CONFIG.format(
        seed=web.seed, topic=web.topics[topic].name, port=port, name=out.name, topics=out.resolve().parent,
        wait=f"{wait:g}", domain=DOMAIN.replace(".", "\\."),
    )
    config += "".join(f"{name} = {value}\n" for name, value in (variables or {}).items())
    (out / "combine.cfg").write_text(config)
    (out / "topicdefinition.txt").write_text(web.topics[topic].definition)
    (out / "seeds.txt").write_text("".join(f"{url}\n" for url in web.seeds()))
    return out
