"""Scrapy's content decoding, bounded by the job's size limit."""

from __future__ import annotations

import logging

from scrapy import Request, Spider
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.utils._compression import _DecompressionMaxSizeExceeded

from combine_scrapy.downloadermiddlewares.fetchlimits import limit_reached

logger = logging.getLogger(__name__)


class BoundedHttpCompressionMiddleware(HttpCompressionMiddleware):
    """Scrapy's decompression, which stops at the request's ``download_maxsize``; a bomb is counted and logged.

    Without the bound a small gzip or brotli answer could inflate to gigabytes
    in memory. Scrapy drops such a response; here it goes on with an empty
    body, so the URL counts as fetched (its status and headers are real)
    instead of as a failure to retry. A body that is not what its
    Content-Encoding says (plain HTML sent as gzip) is read as it came,
    counted as ``fetch/undecodable``: the server would send the same again.
    """

    def process_response(self, request: Request, response: Response, spider: Spider | None = None) -> Request | Response:
        try:
            return super().process_response(request, response)
        except IgnoreRequest as e:
            if not isinstance(e.__cause__, _DecompressionMaxSizeExceeded) or "frontier_entry" not in request.meta:
                raise
            limit = request.meta.get("download_maxsize", self._max_size)
            limit_reached(
                self.stats, "decompressed_size", request,
                f"{len(response.body)} compressed bytes inflate past {limit} bytes; body dropped",
            )
            response.headers.pop(b"Content-Encoding", None)
            return response.replace(body=b"")
        except Exception as e:  # the body is not what Content-Encoding says (gzip, br, zstd, deflate)
            if "frontier_entry" not in request.meta:
                raise
            encoding = b", ".join(response.headers.getlist(b"Content-Encoding")).decode("latin-1")
            if self.stats is not None:
                self.stats.inc_value("fetch/undecodable")
            logger.warning("%s: body is not %s as Content-Encoding says (%s); read as it came", request.url, encoding, e)
            response.headers.pop(b"Content-Encoding", None)
            return response
