"""The records a crawl keeps, and what is made of them: stores, exports, WARC files."""
