"""Names of the crawl statistics that components of different layers read (the scheduler, the spider, the
extensions)."""

#: The crawl statistic of pages fetched: fetches of frontier URLs that got an HTTP response, whatever its status
#: (a 304 too; robots.txt requests never). The harvest log counts the same fetches.
PAGES_STAT = "fetch/pages"
