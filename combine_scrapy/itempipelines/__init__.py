"""The crawl's item pipelines, one a module: a Fetch goes through outcome, parse, topic filter, analysis, record
store, irrelevant pages and harvest log to the frontier, in the order of the focused spider's ``ITEM_PIPELINES``.

Each stage is thin: the crawl policy (:mod:`combine_scrapy.policy`) decides what the fetch means for the frontier
and the link model, the document, topic and records groups do the rest.
"""
