"""The focused crawl's settings belong to the focused spider: other spiders (and scrapy shell) get Scrapy's own."""

from __future__ import annotations

import scrapy
from scrapy.crawler import Crawler
from scrapy.settings import Settings
from scrapy.utils.conf import build_component_list

from combine_scrapy.commands.trial import TrialSpider
from combine_scrapy.context import outage_patience_setting
from combine_scrapy.spiders.focused import FocusedSpider


class OtherSpider(scrapy.Spider):
    name = "other"


class ProjectPipeline:
    """A pipeline a user names in settings.py."""


def crawler_settings(spider_class: type[scrapy.Spider], project: dict | None = None, cmdline: dict | None = None):
    settings = Settings()
    settings.setmodule("combine_scrapy.settings", priority="project")
    settings.setdict(project or {}, priority="project")
    settings.setdict(cmdline or {}, priority="cmdline")
    return Crawler(spider_class, settings).settings


def components(settings, name: str) -> list[str]:
    return [
        component if isinstance(component, str) else f"{component.__module__}.{component.__qualname__}"
        for component in build_component_list(settings.get_component_priority_dict_with_base(name))
    ]


def test_another_spider_gets_scrapys_scheduler_components_and_fetch_settings():
    settings = crawler_settings(OtherSpider)
    assert settings["SCHEDULER"] == "scrapy.core.scheduler.Scheduler"
    assert components(settings, "ITEM_PIPELINES") == []
    for name in ("DOWNLOADER_MIDDLEWARES", "EXTENSIONS"):
        assert not [path for path in components(settings, name) if path.startswith("combine_scrapy.")]
    assert settings.getbool("REDIRECT_ENABLED") and settings.getint("CONCURRENT_ITEMS") == 100
    assert not settings.getbool("REMOTE_CONTROL_ENABLED")  # project-wide


def test_the_focused_spider_gets_its_own_under_what_settings_py_and_the_command_line_set():
    settings = crawler_settings(
        FocusedSpider,
        project={"ITEM_PIPELINES": {f"{__name__}.ProjectPipeline": 800}, "CONCURRENT_REQUESTS": 8},
        cmdline={"CONCURRENT_ITEMS": 5},
    )
    assert settings["SCHEDULER"] == "combine_scrapy.scheduler.FrontierScheduler"
    assert (settings.getint("CONCURRENT_REQUESTS"), settings.getint("CONCURRENT_ITEMS")) == (8, 5)
    assert not settings.getbool("REDIRECT_ENABLED")
    pipelines = components(settings, "ITEM_PIPELINES")
    assert pipelines[0] == "combine_scrapy.itempipelines.outcome.OutcomePipeline"
    assert pipelines[-3:] == [
        f"{__name__}.ProjectPipeline", "combine_scrapy.itempipelines.harvestlog.HarvestLogWriter", "combine_scrapy.itempipelines.frontier.FrontierPipeline"
    ]
    assert "scrapy.extensions.logstats.LogStats" not in components(settings, "EXTENSIONS")


def test_settings_py_switches_a_focused_component_off_with_none():
    settings = crawler_settings(FocusedSpider, project={"ITEM_PIPELINES": {"combine_scrapy.itempipelines.record.RecordPipeline": None}})
    pipelines = components(settings, "ITEM_PIPELINES")
    assert "combine_scrapy.itempipelines.record.RecordPipeline" not in pipelines
    assert "combine_scrapy.itempipelines.frontier.FrontierPipeline" in pipelines


def test_the_trial_runs_no_component_that_touches_the_jobs_own_state():
    settings = crawler_settings(TrialSpider)
    assert components(settings, "ITEM_PIPELINES") == [
        "combine_scrapy.itempipelines.outcome.OutcomePipeline", "combine_scrapy.itempipelines.parse.ParsePipeline",
        "combine_scrapy.itempipelines.topic.TopicPipeline", "combine_scrapy.itempipelines.analyse.AnalysePipeline",
        "combine_scrapy.itempipelines.frontier.FrontierPipeline",
    ]
    ours = [path for path in components(settings, "EXTENSIONS") if path.startswith("combine_scrapy.")]
    assert ours == ["combine_scrapy.extensions.progress.HarvestProgress", "combine_scrapy.extensions.crawlfaults.CrawlFaults"]


def test_the_former_name_of_the_outage_patience_still_counts_with_a_warning(caplog):
    """COMBINE_REDIS_OUTAGE_PATIENCE (before it covered MySQL too) set in a project is not silently ignored."""
    settings = Settings()
    settings.setmodule("combine_scrapy.settings", priority="project")
    assert outage_patience_setting(settings) == 600
    settings.set("COMBINE_REDIS_OUTAGE_PATIENCE", "30", priority="project")
    assert outage_patience_setting(settings) == 30
    assert "COMBINE_REDIS_OUTAGE_PATIENCE is now called COMBINE_OUTAGE_PATIENCE" in caplog.text
    settings.set("COMBINE_OUTAGE_PATIENCE", "90", priority="cmdline")
    assert outage_patience_setting(settings) == 90
