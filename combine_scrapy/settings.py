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
REDIS_PARAMS = {}
# Buckets a new Redis frontier spreads its hosts over (each one slot of a Redis Cluster); a frontier keeps its own.
COMBINE_REDIS_BUCKETS = 32
# Seconds a harvester waits out a Redis restart or outage (retrying with back-off) before it fails.
COMBINE_REDIS_OUTAGE_PATIENCE = 600
# A harvester sharing a Redis frontier looks for work the others marked at least this often (seconds).
COMBINE_SHARED_POLL_INTERVAL = 1.0
# PageRank strategies: recompute the ranks after this many hand-outs.
COMBINE_RERANK_EVERY = 50

SCHEDULER = "combine_scrapy.frontier.scheduler.FrontierScheduler"

# The frontier decides when a host may be fetched; Scrapy's own throttles and
# retries would fetch behind its back.
ROBOTSTXT_OBEY = False
RETRY_ENABLED = False
REDIRECT_ENABLED = False
DOWNLOAD_DELAY = 0
CONCURRENT_REQUESTS = 32
CONCURRENT_REQUESTS_PER_DOMAIN = 1
# The spider yields one item a response; Scrapy's default of 100 starts ~150 asyncio tasks a page for nothing
# (bench/results/profile.md: 17% less CPU a page with 1).
CONCURRENT_ITEMS = 1
COOKIES_ENABLED = False
# Scrapy's check that a generator callback returns no value re-reads and re-parses the callback's source for
# every response (its cache holds the bound method weakly, and each request's dies with the request): about a
# millisecond a page under the profiler. The spider's two callbacks are this project's and return nothing.
WARN_ON_GENERATOR_RETURN_VALUE = False
TELNETCONSOLE_ENABLED = False
# Scrapy's remote control (an HTTP server on 127.0.0.1 that runs any Python code sent to it, for the holder
# of a token written to a file in the user's state directory) stays off: a harvester runs no code it is sent.
# Opt in for debugging with -s REMOTE_CONTROL_ENABLED=1; a harvester killed with SIGKILL leaves its token file.
REMOTE_CONTROL_ENABLED = False
DOWNLOAD_MAXSIZE = 16 * 1024 * 1024
DOWNLOAD_WARNSIZE = 4 * 1024 * 1024

DOWNLOADER_MIDDLEWARES = {
    "combine_scrapy.middlewares.UrlRulesMiddleware": 50,
    "combine_scrapy.middlewares.AddressGuardMiddleware": 60,
    "combine_scrapy.middlewares.RobotsMiddleware": 100,
    "scrapy.downloadermiddlewares.useragent.UserAgentMiddleware": None,
    "combine_scrapy.middlewares.JobHeadersMiddleware": 400,
    "combine_scrapy.middlewares.FetchLimitsMiddleware": 450,
    "combine_scrapy.middlewares.HostPacingMiddleware": 500,
    "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": None,
    "combine_scrapy.middlewares.BoundedHttpCompressionMiddleware": 590,
    # saveWARC: archives each response as it came, before BoundedHttpCompressionMiddleware decodes it.
    "combine_scrapy.records.warc.middleware.WarcMiddleware": 595,
}

ITEM_PIPELINES = {
    "combine_scrapy.pipelines.OutcomePipeline": 50,
    "combine_scrapy.pipelines.ParsePipeline": 100,
    "combine_scrapy.pipelines.TopicPipeline": 200,
    "combine_scrapy.pipelines.AnalysePipeline": 250,
    "combine_scrapy.pipelines.RecordPipeline": 300,
    # saveIrrelevant = 1: pages the topic filter turned down, kept apart as negative examples.
    "combine_scrapy.records.irrelevant.IrrelevantPagesPipeline": 310,
    "combine_scrapy.extensions.HarvestLogWriter": 850,
    "combine_scrapy.pipelines.FrontierPipeline": 900,
}

EXTENSIONS = {
    "combine_scrapy.extensions.HarvestProgress": 500,
    "combine_scrapy.extensions.HarvestSummary": 510,
    "combine_scrapy.extensions.HarvesterPidFile": 520,
    "combine_scrapy.extensions.CrawlFaults": 540,
    # Sitemaps = 1 / SitemapGuess = 1: the sitemaps of each host whose robots.txt is read, as a link source.
    "combine_scrapy.links.sitemaps.SitemapReader": 545,
    "combine_scrapy.operations.console.beacon.HarvesterBeacon": 550,
    "scrapy.extensions.logstats.LogStats": None,
}
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

LOG_LEVEL = "INFO"
# Feeds of the records a crawl stores, as `scrapy export` writes them: scrapy crawl focused -a job=J -O out.xml:oai_dc
# (combine_scrapy/records/export/feeds.py; jsonl replaces Scrapy's, which would write the raw fetches).
FEED_EXPORTERS = {
    "oai_dc": "combine_scrapy.records.export.feeds.DublinCoreFeedExporter",
    "dc": "combine_scrapy.records.export.feeds.DublinCoreFeedExporter",
    "alvis": "combine_scrapy.records.export.feeds.AlvisFeedExporter",
    "alvis-light": "combine_scrapy.records.export.feeds.AlvisLightFeedExporter",
    "jsonl": "combine_scrapy.records.export.feeds.JsonLinesFeedExporter",
}
