"""Loading ``topics/<job>/``: first into a typed, validated :class:`JobConfig` of plain values
(:func:`load_config`), then into a :class:`Job`, which builds its topic filter and learned URL
rules from that configuration (:func:`build_job`; :func:`load_job` does both).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from combine_scrapy.access.urls import RULE_TIMEOUT, UrlRule, UrlRules, parse_serveralias
from combine_scrapy.document.convert import DEFAULT_CONVERTERS, Converter, converter_map
from combine_scrapy.job.grammar import JobConfigError, list_entries, parse_config
from combine_scrapy.job.groups import (
    GROUPS,
    Analysis,
    Archive,
    Crawling,
    Fetching,
    Learning,
    Links,
    LockIntervals,
    Rendering,
    Sitemaps,
    TopicConfig,
)
from combine_scrapy.job.seeds import RefusedSeed, read_seeds
from combine_scrapy.job.variables import BLOCKS, MAY_BE_EMPTY, VARIABLES
from combine_scrapy.jobfiles import excerpt
from combine_scrapy.links.learned import LEARNED_RULES_FILE, LearnedUrlRules, UrlRulesFileError, read_rules
from combine_scrapy.topic import (
    TopicDefinition,
    TopicDefinitionError,
    TopicFilter,
    build_filter,
    load_topic_definition,
)
from combine_scrapy.topic.definition import NoTermRows
from combine_scrapy.topic.filters import PLAIN_NAMES, POSITION_NAMES

logger = logging.getLogger(__name__)

CONFIG_FILE = "combine.cfg"
TOPIC_FILE = "topicdefinition.txt"
SEEDS_FILE = "seeds.txt"
SITES_OK_FILE = "sitesOK.txt"


@dataclasses.dataclass(frozen=True)
class JobConfig:
    """A job's files read and validated, as plain values: loading it builds no topic filter and reads no model."""

    name: str
    directory: Path
    seeds: tuple[str, ...]
    url_rules: UrlRules
    definition: TopicDefinition | None
    sites_ok: frozenset[str] = frozenset()
    #: Lines of seeds.txt the URL rules refuse (the crawl warns about each).
    refused_seeds: tuple[RefusedSeed, ...] = ()
    #: {variable name: its line in combine.cfg}, for errors found when the job is built.
    variable_lines: dict[str, int] = dataclasses.field(default_factory=dict)
    locks: LockIntervals = LockIntervals()
    fetching: Fetching = Fetching()
    crawling: Crawling = Crawling()
    topic: TopicConfig = TopicConfig()
    links: Links = Links()
    learning: Learning = Learning()
    sitemaps: Sitemaps = Sitemaps()
    analysis: Analysis = Analysis()
    archive: Archive = Archive()
    rendering: Rendering = Rendering()


class Job(JobConfig):
    """A job's configuration with what is built from it: its topic filter and learned URL rules, each built once, when first used.

    ``build_job`` builds both at once, so that a bad job fails when it is loaded.
    """

    def __repr__(self) -> str:
        """Short: the name and directory (the shell lists the job by it), not every setting."""
        return f"<Job {self.name} in {self.directory}>"

    @classmethod
    def of(cls, config: JobConfig) -> Job:
        """The job of ``config``, nothing built yet."""
        return cls(**{field.name: getattr(config, field.name) for field in dataclasses.fields(config)})

    @functools.cached_property
    def topic_filter(self) -> TopicFilter:
        return _topic_filter(self)

    @functools.cached_property
    def learned_url_rules(self) -> LearnedUrlRules | None:
        """The rules of learned_urls.txt when LearnedUrlRules = 1, else None."""
        if not self.learning.use_learned_url_rules:
            return None
        return _learned_url_rules(self.directory, self.directory / CONFIG_FILE, self.variable_lines["LearnedUrlRules"])


def _rule_block(path: Path, name: str, entries: list[tuple[int, str]]) -> tuple[UrlRule, ...]:
    """The rules of an ``<allow>``-like block; an error names the line."""
    rules = []
    for number, entry in entries:
        try:
            rule = UrlRule.parse(entry, source=f"{path.name} line {number}")
        except ValueError as e:
            raise JobConfigError(path, number, f"bad {name} rule {excerpt(entry)}: {e}") from e
        if rule.backtracks:
            logger.warning("%s line %d: %s rule %s may backtrack (%s): it runs with a %g s limit on each URL,"
                           " and a URL it cannot decide in time is refused", path, number, name,
                           excerpt(entry), rule.backtracks, RULE_TIMEOUT)
        rules.append(rule)
    return tuple(rules)


def _url_rules(path: Path, limits: dict[str, int], blocks: dict[str, list[tuple[int, str]]]) -> UrlRules:
    changes: dict[str, Any] = dict(limits)
    for name in ("allow", "exclude"):
        if name in blocks:
            changes[name] = _rule_block(path, name, blocks[name])
    if "sessionids" in blocks:
        changes["sessionids"] = tuple(entry for _, entry in blocks["sessionids"])
    if "serveralias" in blocks:
        aliases: dict[str, str] = {}
        for number, entry in blocks["serveralias"]:
            try:
                aliases.update(parse_serveralias(entry))
            except ValueError as e:
                raise JobConfigError(path, number, f"bad serveralias {excerpt(entry)}: {e}") from e
        changes["serveralias"] = aliases
    return dataclasses.replace(UrlRules(), **changes)


def _converters(path: Path, entries: list[tuple[int, str]]) -> Mapping[str, tuple[Converter, ...]]:
    """The job's converter lines on top of the defaults; a type it maps replaces the default for that type."""
    for number, entry in entries:
        try:
            converter_map([entry])
        except ValueError as e:
            raise JobConfigError(path, number, f"bad converter {excerpt(entry)}: {e}") from e
    return converter_map([entry for _, entry in entries], DEFAULT_CONVERTERS)


_SITE = re.compile(r"[a-z0-9.\-]+(?::\d{1,5})?|\[[0-9a-f:.]+\](?::\d{1,5})?")


def _sites_ok(path: Path) -> frozenset[str]:
    """Hosts (``host`` or ``host:port``) of sitesOK.txt, lower-cased."""
    sites = set()
    for number, entry in list_entries(path):
        host = entry.lower().rstrip(".")
        if not _SITE.fullmatch(host):
            hint = " (write the host only, without http:// or a path)" if "/" in host else ""
            raise JobConfigError(path, number, f"{excerpt(entry)} is not a host name: write one host (or host:port) a line{hint}")
        sites.add(host)
    return frozenset(sites)



def find_job_dir(name: str, topics_dir: Path | str) -> Path:
    if not re.fullmatch(r"[\w.-]+", name) or name.startswith("."):
        raise JobConfigError(topics_dir, None, f"bad job name {excerpt(name)}: use letters, digits, '.', '-', '_'")
    directory = Path(topics_dir) / name
    if not directory.is_dir():
        known = sorted(p.name for p in Path(topics_dir).iterdir() if p.is_dir()) if Path(topics_dir).is_dir() else []
        raise JobConfigError(directory, None, f"no such job; known jobs: {', '.join(known) or 'none'}")
    return directory


def _learned_url_rules(directory: Path, config_path: Path, line: int) -> LearnedUrlRules:
    path = directory / LEARNED_RULES_FILE
    if not os.path.lexists(path):
        raise JobConfigError(config_path, line, f"LearnedUrlRules = 1, but {path} is missing: run 'scrapy trial {directory.name}' first")
    try:
        return read_rules(path)
    except UrlRulesFileError as e:
        raise JobConfigError(e.source, e.line, e.message) from e


def load_config(name: str, topics_dir: Path | str = "topics") -> JobConfig:
    """Read and validate job ``name`` from ``topics_dir/name/``: its files, as plain values."""
    directory = find_job_dir(name, topics_dir)
    config_path = directory / CONFIG_FILE
    values, blocks = parse_config(config_path, VARIABLES, BLOCKS)

    groups: dict[str, dict[str, Any]] = {group: {} for group in (*GROUPS, "url_rules")}
    for name_, (number, text) in values.items():
        variable = VARIABLES[name_]
        if not text and name_ not in MAY_BE_EMPTY:
            raise JobConfigError(config_path, number, f"{name_}: no value; leave the line out (or comment it out with #) for the default")
        try:
            groups[variable.group][variable.field] = variable.parse(text)
        except ValueError as e:
            hint = " (a comment goes on a line of its own)" if "#" in text else ""
            raise JobConfigError(config_path, number, f"{name_}: {e}{hint}") from e

    url_rules = _url_rules(config_path, groups.pop("url_rules"), blocks)
    sites_ok = _sites_ok(directory / SITES_OK_FILE)
    if "converters" in blocks:
        groups["analysis"]["converters"] = _converters(config_path, blocks["converters"])
    if "render" in blocks:
        groups["rendering"]["rules"] = _rule_block(config_path, "render", blocks["render"])

    topic_path = directory / TOPIC_FILE
    definition = None
    if os.path.lexists(topic_path):
        try:
            definition = load_topic_definition(topic_path)
        except NoTermRows as e:
            # svm, vector and plug-ins need no topic definition: newjob's, comments only, is as good as none.
            if TopicConfig(**groups["topic"]).classify_plugin in (*PLAIN_NAMES, *POSITION_NAMES):
                raise JobConfigError(e.source, e.line, e.message) from e
        except TopicDefinitionError as e:
            raise JobConfigError(e.source, e.line, e.message) from e

    seeds, refused_seeds = read_seeds(directory / SEEDS_FILE, url_rules)
    return JobConfig(
        name=directory.name,
        directory=directory,
        seeds=seeds,
        refused_seeds=refused_seeds,
        url_rules=url_rules,
        definition=definition,
        sites_ok=sites_ok,
        variable_lines={name_: number for name_, (number, _) in values.items()},
        **{group: GROUPS[group](**fields) for group, fields in groups.items()},
    )


def _topic_filter(config: JobConfig) -> TopicFilter:
    """The topic filter the job's classifyPlugIn names, with its cut-offs (an SVM filter reads its model)."""
    topic = config.topic
    try:
        return build_filter(
            topic.classify_plugin,
            config.definition,
            tot_cutoff=topic.tot_cutoff,
            cutoff_norm=topic.cutoff_norm,
            cutoff_rel=topic.cutoff_rel,
            sites_ok=config.sites_ok,
            job_dir=config.directory,
        )
    except (ValueError, ImportError, OSError) as e:
        needs_definition = topic.classify_plugin in (*PLAIN_NAMES, *POSITION_NAMES)
        missing = f" ({TOPIC_FILE} is missing)" if needs_definition and not (config.directory / TOPIC_FILE).exists() else ""
        raise JobConfigError(
            config.directory / CONFIG_FILE, config.variable_lines.get("classifyPlugIn"), f"classifyPlugIn {excerpt(topic.classify_plugin)}: {e}{missing}"
        ) from e


def build_job(config: JobConfig) -> Job:
    """The job of ``config`` with its topic filter and (when LearnedUrlRules = 1) learned URL rules built now."""
    job = Job.of(config)
    _ = job.topic_filter, job.learned_url_rules  # built now: a bad filter or rules file fails at load, not mid-crawl
    return job


def load_job(name: str, topics_dir: Path | str = "topics") -> Job:
    """Load, validate and build job ``name`` from ``topics_dir/name/`` (see load_config and build_job)."""
    return build_job(load_config(name, topics_dir))
