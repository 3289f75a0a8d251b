"""Scrapy extensions of the focused crawl, one a module: what a person sees of a crawl, and what the job
commands and the console find of it. Their order is the focused spider's ``EXTENSIONS``."""
