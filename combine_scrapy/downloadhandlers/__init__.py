"""Download handlers: what carries a request to its server, one a module (Scrapy's own for every plain fetch).

The focused crawl sets one only when its job may render (``render.crawl_settings``).
"""
