"""Scrapy settings of combine-scrapy; a job's own combine.cfg overrides the crawl behaviour."""

BOT_NAME = "combine_scrapy"
SPIDER_MODULES = ["combine_scrapy.spiders"]
NEWSPIDER_MODULE = "combine_scrapy.spiders"
COMMANDS_MODULE = "combine_scrapy.commands"

# Where jobs are defined, and where the embedded backends keep their files.
COMBINE_TOPICS_DIR = "topics"
COMBINE_DATA_DIR = "data"
# A crawl that is not continuous ends when no marked URL comes due within this many seconds.
COMBINE_IDLE_HORIZON = 300
# Records in MySQL/MariaDB, shared by harvesters on several machines: mysql://user:password@host:port/database
# (each job's tables are prefixed combine_<job>_). None: a SQLite file under COMBINE_DATA_DIR.
MYSQL_URL = None
# Spider-trap bound: new URLs marked per host at most (None: no bound).
COMBINE_MAX_URLS_PER_HOST = 10000
# Seconds a harvester holds a URL it fetches; a dead harvester's URLs come back after this.
# Keep COMBINE_IDLE_HORIZON above it when several harvesters share a Redis frontier.
COMBINE_LEASE_SECONDS = 60
# The Redis client is made as scrapy-redis makes it: REDIS_URL, plus REDIS_PARAMS (keyword arguments of
# redis.Redis, e.g. {"socket_timeout": 30, "password": "..."}) over this project's defaults (outage retry,
# 5 s connect timeout, 60 s socket timeout). {"redis_cls": "redis.cluster.RedisCluster"} connects to a Redis
# Cluster (REDIS_URL: any of its nodes).
REDIS_PARAMS: dict[str, object] = {}
# Buckets a new Redis frontier spreads its hosts over (each one slot of a Redis Cluster); a frontier keeps its own.
# None: 8 on a single Redis (where buckets spread nothing and every look pays for each), 32 on a Redis Cluster
# (spread evenly over up to about ten masters). A job made on a single Redis that may move to a cluster: set 32.
COMBINE_REDIS_BUCKETS = None
# Seconds a harvester waits out a Redis or MySQL restart or outage, at its start or later (retrying with back-off,
# a log line each time), before it fails; Ctrl-C or SIGTERM ends the wait at once.
COMBINE_OUTAGE_PATIENCE = 600
# A harvester sharing a Redis frontier looks for work the others marked at least this often (seconds).
COMBINE_SHARED_POLL_INTERVAL = 1.0
# PageRank strategies: recompute the ranks after this many hand-outs.
COMBINE_RERANK_EVERY = 50

# What a focused crawl runs (its scheduler, middlewares, pipelines, extensions) and how it fetches are settings of
# the focused spider (FocusedSpider.update_settings): other spiders and scrapy shell get Scrapy's own. A value set
# here or with -s wins; a component dictionary here joins the crawl's (None switches a component off), one given
# with -s replaces it.
TELNETCONSOLE_ENABLED = False
# Scrapy's remote control (an HTTP server on 127.0.0.1 that runs any Python code sent to it, for the holder
# of a token written to a file in the user's state directory) stays off: a harvester runs no code it is sent.
# Opt in for debugging with -s REMOTE_CONTROL_ENABLED=1; a harvester killed with SIGKILL leaves its token file.
REMOTE_CONTROL_ENABLED = False

# Seconds between two progress lines in the log (0: none).
COMBINE_PROGRESS_INTERVAL = 30
# On a terminal, seconds between two redraws of the one-line progress display (0: none).
COMBINE_PROGRESS_TERMINAL_INTERVAL = 2
# Log every fetch to data/<job>/harvest_log.sqlite (scrapy status, scrapy report) as it completes.
COMBINE_HARVEST_LOG = True
# Seconds between two reports of each harvester's state (alive, paused, URLs in flight) for `scrapy serve` (0: none).
COMBINE_BEACON_INTERVAL = 1
# `scrapy serve`: records in one OAI-PMH list response before a resumption token.
COMBINE_OAI_PAGE_SIZE = 100

# Render = auto / always (combine.cfg): the Chromium scrapy-playwright starts (Debian's chromium package; Playwright's
# own browser download is not used), and switches added to its command line.
COMBINE_CHROMIUM = "/usr/bin/chromium"
COMBINE_CHROMIUM_ARGS: list[str] = []

LOG_LEVEL = "INFO"
# Feeds of the records a crawl stores, as `scrapy export` writes them: scrapy crawl focused -a job=J -O out.xml:oai_dc
# (combine_scrapy/records/export/feeds.py). Scrapy's own formats are replaced too, each writing one item a record
# with the fields of `scrapy export`'s JSON Lines (they would write the raw fetches).
FEED_EXPORTERS = {
    "oai_dc": "combine_scrapy.records.export.feeds.DublinCoreFeedExporter",
    "dc": "combine_scrapy.records.export.feeds.DublinCoreFeedExporter",
    "alvis": "combine_scrapy.records.export.feeds.AlvisFeedExporter",
    "alvis-light": "combine_scrapy.records.export.feeds.AlvisLightFeedExporter",
    "jsonl": "combine_scrapy.records.export.feeds.JsonLinesFeedExporter",
    "jsonlines": "combine_scrapy.records.export.feeds.JsonLinesFeedExporter",
    "markdown": "combine_scrapy.records.export.feeds.MarkdownFeedExporter",
    "json": "combine_scrapy.records.export.feeds.JsonFeedExporter",
    "csv": "combine_scrapy.records.export.feeds.CsvFeedExporter",
    "xml": "combine_scrapy.records.export.feeds.XmlFeedExporter",
    "marshal": "combine_scrapy.records.export.feeds.MarshalFeedExporter",
    "pickle": "combine_scrapy.records.export.feeds.PickleFeedExporter",
}
