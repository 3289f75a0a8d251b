"""``scrapy serve JOB``: a web console for a running crawl, search over its records and an OAI-PMH endpoint.

The web layer (app.py) is imported only by the serve command; harvesters load
just the beacon extension (beacon.py), which tells the console what they do.
"""
