"""Write a crawl job for the virtual web: combine.cfg, the topic definition and seeds in topical clusters."""

from __future__ import annotations

import shutil
from pathlib import Path

from bench.virtualweb.web import VirtualWeb

TOPIC_DEFINITION = Path(__file__).with_name("topicdefinition.txt")

CONFIG = """\
# A job for the virtual web, written by `python -m bench.virtualweb job`
# (seed {seed}, {hosts} hosts, {pages} pages). Its hosts exist only behind the
# virtual web's proxy; crawl it with
#   http_proxy=http://127.0.0.1:{port} scrapy crawl focused -a job={name} -s COMBINE_TOPICS_DIR={topics}

WaitIntervalHost = {wait}
classifyPlugIn = plain
tot_cutoff = 90
AutoRecycleLinks = 1
saveHTML = 1
maxUrlLength = 250
UserAgent = combine-scrapy/0.1 (virtualweb benchmark)
OperatorEmail = operator@example.org

<allow>
HOST: \\.web\\.test
</allow>

<sessionids>
jsessionid
PHPSESSID
sid
</sessionids>
"""


def write_job(
    web: VirtualWeb, out: Path, port: int, wait: float, variables: dict[str, str] | None = None,
    serveralias: bool = False,
) -> Path:
    """Create (or overwrite the files of) a job directory ``out``; returns it.

    ``variables`` are more combine.cfg lines (``CrawlStrategy``: ``BestFirst``);
    ``serveralias`` declares the web's ``www.`` aliases, as an operator who
    knows them would (Combine's serveralias), so one server is one host.
    """
    out.mkdir(parents=True, exist_ok=True)
    config = CONFIG.format(
        seed=web.seed, hosts=web.hosts, pages=web.pages, port=port, name=out.name,
        topics=out.resolve().parent, wait=f"{wait:g}",
    )
    config += "".join(f"{name} = {value}\n" for name, value in (variables or {}).items())
    groups = [f"{web.host_name(host)} www.{web.host_name(host)}\n" for host in web.alias_hosts()]
    if serveralias and groups:
        config += "\n<serveralias>\n" + "".join(groups) + "</serveralias>\n"
    (out / "combine.cfg").write_text(config)
    shutil.copyfile(TOPIC_DEFINITION, out / "topicdefinition.txt")
    (out / "seeds.txt").write_text("".join(f"{url}\n" for url in web.seeds()))
    return out
