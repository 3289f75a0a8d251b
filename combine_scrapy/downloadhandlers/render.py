"""The download handler of a crawl that may render: Scrapy's HTTP handler, and scrapy-playwright's for renders.

scrapy-playwright's handler starts Playwright's driver (a Node.js process of
some 100 MB) when the crawl starts, whether or not anything is ever rendered.
Here it is made, and its driver started, at the first request with
``meta["playwright"] = True``: a ``Render = auto`` crawl of a site that needs
no rendering neither imports Playwright nor starts its driver or a browser.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from scrapy import Request
from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.crawler import Crawler
from scrapy.http import Response


class _FailedRenderFilter(logging.Filter):
    """Drop scrapy-playwright's warning on a failed render: a traceback for what RenderMiddleware logs in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Closing page due to failed request")


class RenderDownloadHandler(HTTP11DownloadHandler):
    """Fetches go to Scrapy's HTTP/1.1 handler; renders to scrapy-playwright's, made at the first render."""

    lazy = False

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._renderer: Any = None
        self._renderer_made = asyncio.Lock()

    async def download_request(self, request: Request) -> Response:
        if not request.meta.get("playwright"):
            return await super().download_request(request)
        renderer = await self._playwright()
        response: Response = await renderer.download_request(request)
        # The render's time is the browser's (its start, the page's scripts), not the server's time to answer:
        # HostPacingMiddleware must not read it as a slow server.
        request.meta.pop("download_latency", None)
        return response

    async def _playwright(self) -> Any:
        async with self._renderer_made:
            if self._renderer is None:
                from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler
                from scrapy_playwright.handler import logger as playwright_logger

                playwright_logger.addFilter(_FailedRenderFilter())

                renderer = ScrapyPlaywrightDownloadHandler.from_crawler(self._crawler)
                # What scrapy-playwright does on engine_started (the crawl has started already): start the driver.
                await renderer._maybe_launch_in_thread()
                self._renderer = renderer
        return self._renderer

    async def close(self) -> None:
        if self._renderer is not None:
            await self._renderer.close()
        await super().close()
