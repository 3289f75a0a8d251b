"""Downloader middlewares: the guards every request passes, whichever way it entered, one a module.

URL rules and robots.txt are pure code (:mod:`combine_scrapy.access.urls`,
:mod:`combine_scrapy.access.robots`); these classes only apply them to requests and
count what they refuse in the crawl's stats. Their order is the focused spider's ``DOWNLOADER_MIDDLEWARES``.
"""
