"""A job: the directory ``topics/<job>/`` that says what a crawl is after, as Combine's ``/etc/combine/<job>/``:

- ``combine.cfg``: the job configuration, Combine's variable names in
  Config::General syntax (``Name = value`` lines and ``<block> ... </block>``
  lists for allow, exclude, sessionids, serveralias, converters, render);
- ``topicdefinition.txt`` (and an optional ``stopwords.txt``);
- ``seeds.txt``: one URL per line;
- ``sitesOK.txt`` (optional): hosts whose pages are always accepted.

Every error names the file, the line and what is wrong, so a user can fix a
job without reading code. The package reads a job in layers: :mod:`.grammar`
(lines, blocks, values), :mod:`.variables` (the table of combine.cfg's
variables), :mod:`.groups` (the sections they fill), :mod:`.seeds` (seeds.txt
against the URL rules) and :mod:`.loader` (the job directory into a
:class:`Job`). What the rest of the package uses is named here.
"""

from combine_scrapy.job.grammar import JobConfigError
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
from combine_scrapy.job.loader import CONFIG_FILE, SEEDS_FILE, TOPIC_FILE, Job, JobConfig, build_job, load_config, load_job
from combine_scrapy.job.seeds import ONE_WORD_HOST, RefusedSeed, one_word_host
from combine_scrapy.job.variables import BLOCKS, VARIABLES

__all__ = [
    "BLOCKS",
    "CONFIG_FILE",
    "GROUPS",
    "ONE_WORD_HOST",
    "SEEDS_FILE",
    "TOPIC_FILE",
    "VARIABLES",
    "Analysis",
    "Archive",
    "Crawling",
    "Fetching",
    "Job",
    "JobConfig",
    "JobConfigError",
    "Learning",
    "Links",
    "LockIntervals",
    "RefusedSeed",
    "Rendering",
    "Sitemaps",
    "TopicConfig",
    "build_job",
    "load_config",
    "load_job",
    "one_word_host",
]
