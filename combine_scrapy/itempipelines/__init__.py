"""Item pipelines beside the crawl's own (:mod:`combine_scrapy.pipelines`): what a fetch leaves apart from the
records and the frontier. Their order is the focused spider's ``ITEM_PIPELINES``."""
