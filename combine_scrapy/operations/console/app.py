"""The console's web application (aiohttp): pages, a JSON API, the OAI-PMH endpoint.

Reading is open to whoever reaches the port (127.0.0.1 unless ``--bind``
says otherwise); actions (seed, pause, resume, stop) need the console's
token as ``Authorization: Bearer TOKEN``. A request whose ``Host`` is not a
name the console was started for (the loopback names, the bound address,
``--host-name``) gets 421: a page elsewhere that makes a browser resolve its
own name to this machine (DNS rebinding) reads nothing. Every page, script and style comes
from this server, and the Content-Security-Policy forbids anything else.
All database work runs in one worker thread, so a slow query never blocks
the event loop and SQLite connections stay in the thread that opened them.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar, TypeVarTuple
from urllib.parse import parse_qsl

from aiohttp import web
from aiohttp.typedefs import Handler

from combine_scrapy.frontier import seed_priority
from combine_scrapy.operations.console.data import SEARCH_CANDIDATES, BadRequest, ConsoleData, SearchFilters
from combine_scrapy.operations.console.oai import MAX_ARGUMENTS, MAX_REQUEST_BYTES, OaiProvider
from combine_scrapy.operations.console.pages import console_page, not_found_page, record_page, search_page

logger = logging.getLogger(__name__)

T = TypeVar("T")
Arguments = TypeVarTuple("Arguments")

STATIC_DIR = Path(__file__).parent / "static"
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
#: URLs one seed action takes at most.
SEED_LIMIT = 100_000
#: Records on one page of the search form's results.
SEARCH_PAGE = 50
#: Host header names a console always answers (with the address it is bound to and those --host-name adds).
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def host_name(header: str) -> str:
    """The name in a Host header, without its port or IPv6 brackets, lower-case (``[::1]:8080`` gives ``::1``)."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else header
    return header.rpartition(":")[0].rstrip(".") if ":" in header else header.rstrip(".")


class Console:
    """The application's state: the job's data (opened in the worker thread), the token, the OAI provider."""

    def __init__(self, job: str, open_data: Callable[[], ConsoleData], token: str, *, admin_email: str,
                 oai_page_size: int = 100, host_names: frozenset[str] = LOOPBACK_NAMES):
        self.job = job
        self.host_names = frozenset(name.lower().strip("[]").rstrip(".") for name in host_names)
        self.open_data = open_data
        self.token = token
        self.admin_email = admin_email
        self.oai_page_size = oai_page_size
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="console-data")
        self._data: ConsoleData | None = None
        self._oai: OaiProvider | None = None

    @property
    def data(self) -> ConsoleData:
        """The job's data, opened when the application starts (before it answers any request)."""
        if self._data is None:
            raise RuntimeError("the console has not started")
        return self._data

    @property
    def oai(self) -> OaiProvider:
        """The OAI-PMH provider over the job's records, made when the application starts."""
        if self._oai is None:
            raise RuntimeError("the console has not started")
        return self._oai

    async def run(self, function: Callable[[*Arguments], T], *args: *Arguments) -> T:
        """``function(*args)`` in the console's one worker thread (where the job's data lives)."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, function, *args)

    async def start(self, app: web.Application) -> None:
        data = self._data = await self.run(self.open_data)
        self._oai = OaiProvider.for_job(data.context.store, self.job, self.admin_email, self.oai_page_size)

    async def stop(self, app: web.Application) -> None:
        if self._data is not None:
            await self.run(self._data.close)
        self.executor.shutdown(wait=True)

    def authorized(self, request: web.Request) -> bool:
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token.encode())


CONSOLE_KEY = web.AppKey("console", Console)


def console_of(request: web.Request) -> Console:
    return request.app[CONSOLE_KEY]


@web.middleware
async def security(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Only the console's own host names; actions need the token; every answer carries the headers that keep the
    page to this server."""
    if host_name(request.host) not in console_of(request).host_names:
        response = web.json_response({"error": f"this console answers for {', '.join(sorted(console_of(request).host_names))}"
                                      " only (scrapy serve --host-name adds a name)"}, status=421)
        response.headers.update(SECURITY_HEADERS)
        return response
    if request.method == "POST" and request.path.startswith("/api/"):
        if not console_of(request).authorized(request):
            response = web.json_response({"error": "this action needs the console's token (Authorization: Bearer TOKEN)"},
                                         status=401, headers={"WWW-Authenticate": "Bearer"})
            response.headers.update(SECURITY_HEADERS)
            return response
    answer: web.StreamResponse
    try:
        answer = await handler(request)
    except BadRequest as e:
        answer = web.json_response({"error": str(e)}, status=400)
    answer.headers.update(SECURITY_HEADERS)
    return answer


# -- pages ---------------------------------------------------------------------------

async def index(request: web.Request) -> web.Response:
    return web.Response(text=console_page(console_of(request).job), content_type="text/html")


async def search(request: web.Request) -> web.Response:
    console = console_of(request)
    form = {name: request.query.get(name, "") for name in ("q", "class", "host", "since", "until")}
    page_number, found, error = 1, None, None
    if request.query:  # the form was sent (an empty one gets the message saying what to give)
        try:
            page_number = _int(request, "page", 1, 1, SEARCH_CANDIDATES // SEARCH_PAGE + 1)
            filters = SearchFilters.parse(form["class"], form["host"], form["since"], form["until"])
            found = await console.run(console.data.search, form["q"], filters, SEARCH_PAGE, (page_number - 1) * SEARCH_PAGE)
        except BadRequest as e:
            error = str(e)
    classes = await console.run(console.data.classes)
    page = search_page(console.job, form, classes, found, error, page_number, SEARCH_PAGE)
    return web.Response(text=page, content_type="text/html", status=400 if error else 200)


async def record(request: web.Request) -> web.Response:
    console = console_of(request)
    key = request.match_info["key"]
    found = await console.run(console.data.record, key)
    if found is None:
        return web.Response(text=not_found_page(console.job, f"no record {key}"), content_type="text/html", status=404)
    return web.Response(text=record_page(console.job, found), content_type="text/html")


# -- the JSON API ------------------------------------------------------------------

API = {
    "GET /api/status": "counters, harvest curve, recent relevant pages, errors by kind, harvesters",
    "GET /api/hosts?limit=N": "hosts: marked URLs, seconds locked, pages fetched and relevant",
    "GET /api/records?after=ID&limit=N": "records newest first (after: the last id of the previous page)",
    "GET /api/records/KEY": "one record: title, URLs, scores by class, language, links out and in, text",
    "GET /api/search?q=WORDS&class=C&host=H&since=DATE&until=DATE&limit=N&offset=M": "records found, best first",
    "GET /api/classes": "topic classes with their number of records",
    "POST /api/seed": 'mark URLs: {"urls": [...], "priority": 0} (token)',
    "POST /api/pause": "every harvester stops taking new URLs (token)",
    "POST /api/resume": "they take URLs again (token)",
    "POST /api/stop": "SIGTERM to this machine's harvesters of the job (token)",
    "GET|POST /oai?verb=...": "OAI-PMH 2.0",
}


def _int(request: web.Request, name: str, default: int, low: int, high: int) -> int:
    text = request.query.get(name, "")
    try:
        value = int(text) if text else default
    except ValueError:
        raise BadRequest(f"{name} must be a whole number, got {text[:40]!r}") from None
    if not low <= value <= high:
        raise BadRequest(f"{name} must be from {low} to {high}, got {value}")
    return value


async def api_index(request: web.Request) -> web.Response:
    return web.json_response({"job": console_of(request).job, "endpoints": API})


async def api_status(request: web.Request) -> web.Response:
    console = console_of(request)
    return web.json_response(await console.run(console.data.status))


async def api_hosts(request: web.Request) -> web.Response:
    console = console_of(request)
    return web.json_response(await console.run(console.data.hosts, _int(request, "limit", 50, 1, 10_000)))


async def api_records(request: web.Request) -> web.Response:
    console = console_of(request)
    after, limit = _int(request, "after", 0, 0, 2**63 - 1), _int(request, "limit", 50, 1, 1000)
    return web.json_response(await console.run(console.data.records, after, limit))


async def api_record(request: web.Request) -> web.Response:
    console = console_of(request)
    found = await console.run(console.data.record, request.match_info["key"])
    if found is None:
        return web.json_response({"error": f"no record {request.match_info['key']}"}, status=404)
    return web.json_response(found)


async def api_search(request: web.Request) -> web.Response:
    console = console_of(request)
    query = request.query
    filters = SearchFilters.parse(query.get("class", ""), query.get("host", ""), query.get("since", ""), query.get("until", ""))
    found = await console.run(
        console.data.search, query.get("q", ""), filters, _int(request, "limit", 20, 1, 500),
        _int(request, "offset", 0, 0, SEARCH_CANDIDATES),
    )
    return web.json_response(found.hits)


async def api_classes(request: web.Request) -> web.Response:
    console = console_of(request)
    return web.json_response([{"class": name, "records": count} for name, count in await console.run(console.data.classes)])


async def api_seed(request: web.Request) -> web.Response:
    console = console_of(request)
    try:
        body = await request.json()
        urls, priority = body["urls"], body.get("priority", 0.0)
    except (ValueError, KeyError, TypeError, AttributeError):
        raise BadRequest('send {"urls": ["http://...", ...], "priority": 0} as JSON') from None
    try:
        priority = seed_priority(priority)
    except ValueError as e:
        raise BadRequest(str(e)) from None
    if not isinstance(urls, list) or not all(isinstance(url, str) for url in urls) or len(urls) > SEED_LIMIT:
        raise BadRequest(f"urls must be a list of at most {SEED_LIMIT} strings")
    urls = [url.strip() for url in urls if url.strip()]
    answer = await console.run(console.data.seed, urls, priority)
    logger.info("console: seeded %d URLs (%d new)", answer["accepted"], answer["new"])
    return web.json_response(answer)


async def api_pause(request: web.Request) -> web.Response:
    console = console_of(request)
    logger.info("console: job %s paused", console.job)
    return web.json_response(await console.run(console.data.set_paused, True))


async def api_resume(request: web.Request) -> web.Response:
    console = console_of(request)
    logger.info("console: job %s resumed", console.job)
    return web.json_response(await console.run(console.data.set_paused, False))


async def api_stop(request: web.Request) -> web.Response:
    console = console_of(request)
    answer = await console.run(console.data.stop)
    logger.info("console: stopping harvesters %s", answer["stopping"])
    return web.json_response(answer)


async def oai(request: web.Request) -> web.Response:
    """Every OAI-PMH request gets 200 and the protocol's XML, an oversized or unreadable one a badArgument."""
    console = console_of(request)
    base_url = str(request.url.with_query(None))
    query: str | None = request.query_string
    if request.method == "POST":
        if (request.content_length or 0) > MAX_REQUEST_BYTES:
            query = None
        else:
            body = await request.content.read(MAX_REQUEST_BYTES + 1)
            query = body.decode("utf-8", "replace") if len(body) <= MAX_REQUEST_BYTES else None
    try:
        if query is None or len(query) > MAX_REQUEST_BYTES:
            raise ValueError(f"the request's arguments exceed {MAX_REQUEST_BYTES} bytes")
        arguments = parse_qsl(query, keep_blank_values=True, max_num_fields=MAX_ARGUMENTS, errors="replace")
    except ValueError as e:  # too large, or more than MAX_ARGUMENTS fields
        body = console.oai.refuse(f"{e}; OAI-PMH takes at most {MAX_ARGUMENTS} arguments", base_url)
    else:
        body = await console.run(console.oai.respond, arguments, base_url)
    return web.Response(body=body, content_type="text/xml", charset="utf-8")


def make_app(console: Console) -> web.Application:
    app = web.Application(middlewares=[security], client_max_size=16 * 1024 * 1024)
    app[CONSOLE_KEY] = console
    app.on_startup.append(console.start)
    app.on_cleanup.append(console.stop)
    app.router.add_get("/", index)
    app.router.add_get("/search", search)
    app.router.add_get("/record/{key}", record)
    app.router.add_get("/api", api_index)
    app.router.add_get("/api/status", api_status)
    app.router.add_get("/api/hosts", api_hosts)
    app.router.add_get("/api/records", api_records)
    app.router.add_get("/api/records/{key}", api_record)
    app.router.add_get("/api/search", api_search)
    app.router.add_get("/api/classes", api_classes)
    app.router.add_post("/api/seed", api_seed)
    app.router.add_post("/api/pause", api_pause)
    app.router.add_post("/api/resume", api_resume)
    app.router.add_post("/api/stop", api_stop)
    app.router.add_route("GET", "/oai", oai)
    app.router.add_route("POST", "/oai", oai)
    app.router.add_static("/static", STATIC_DIR)
    return app
