"""Pages built by their scripts, rendered in headless Chromium through scrapy-playwright (``Render`` in combine.cfg).

- :mod:`~combine_scrapy.render.detect`: whether a fetched page is a script-built
  shell, and whether rendering a host pays off (pure code);
- :mod:`~combine_scrapy.render.guard`: what the browser may load while it
  renders (pure code: the crawler's URL rules and address guard);
- :mod:`~combine_scrapy.downloadermiddlewares.render`: the downloader
  middleware that renders a page after its plain fetch, with scrapy-playwright
  as the download handler of the render (``meta["playwright"] = True``).

A job with ``Render = never`` gets Scrapy's own download handlers. Otherwise
http and https go to :class:`~combine_scrapy.downloadhandlers.render.RenderDownloadHandler`:
Scrapy's HTTP handler for every fetch, scrapy-playwright's for the renders
(``meta["playwright"] = True``), made at the first render. Only then are
Playwright imported and its driver and the system Chromium
(``COMBINE_CHROMIUM``) started, once per crawl; both are closed when the
crawl ends. A crawl that renders nothing starts neither.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from combine_scrapy.job import Job

logger = logging.getLogger(__name__)

#: The flag of a response that is a rendered page (``Response.flags``): its record notes it.
RENDERED = "rendered"

#: The setting that says a crawl renders: the job asks for it and the browser is there.
ENABLED = "COMBINE_RENDERING"
#: The name of the browser context every render opens its page in.
CONTEXT = "render"
#: Browser context options: no service workers (their requests would bypass the page's route).
CONTEXT_OPTIONS = {"service_workers": "block", "accept_downloads": False}
#: Seconds a render waits, after the page's load event, for its scripts' requests to end (at most RenderTimeout).
SETTLE_SECONDS = 5.0
#: Chromium switches for a headless crawler: no GPU, no sandbox (as root), and none of the browser's own
#: traffic (component updates, sync, field trials, QUIC probes): the pages' requests are all it makes.
CHROMIUM_ARGS = (
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--metrics-recording-only",
    "--no-default-browser-check",
)


def crawl_settings(job: Job, settings: BaseSettings) -> dict[str, Any]:
    """The Scrapy settings a crawl of ``job`` needs for rendering ({} when the job never renders).

    Without the browser (COMBINE_CHROMIUM is not an executable: an image built without it) the crawl
    renders nothing, says so once, and counts each page it would have rendered (``render/skipped/no_browser``).
    """
    rendering = job.rendering
    if rendering.mode == "never":
        return {}
    chromium = settings.get("COMBINE_CHROMIUM")
    if not (chromium and os.access(chromium, os.X_OK)):
        logger.warning("job %s: Render = %s, but there is no browser at %s (COMBINE_CHROMIUM): no page is rendered",
                       job.name, rendering.mode, chromium)
        return {}
    handler = "combine_scrapy.downloadhandlers.render.RenderDownloadHandler"
    return {
        ENABLED: True,
        "DOWNLOAD_HANDLERS": {**settings.getdict("DOWNLOAD_HANDLERS"), "http": handler, "https": handler},
        "PLAYWRIGHT_BROWSER_TYPE": "chromium",
        "PLAYWRIGHT_LAUNCH_OPTIONS": {
            "executable_path": chromium,
            "headless": True,
            "chromium_sandbox": False,
            "args": [*CHROMIUM_ARGS, *settings.getlist("COMBINE_CHROMIUM_ARGS")],
        },
        "PLAYWRIGHT_MAX_CONTEXTS": 1,
        "PLAYWRIGHT_MAX_PAGES_PER_CONTEXT": rendering.max_pages,
        "PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT": rendering.timeout * 1000,
        # A crashed browser is started again for the next render.
        "PLAYWRIGHT_RESTART_DISCONNECTED_BROWSER": True,
    }


def failure_reason(error: Exception) -> str:
    """Why a render failed, as its statistic names it (``render/failed/<reason>``): the browser's error read as text."""
    text = f"{type(error).__name__} {error}".lower()
    if "timeout" in text:
        return "timeout"
    if "closed" in text or "crash" in text or "disconnected" in text:
        return "browser"
    if "net::" in text:
        return "network"
    return "error"
