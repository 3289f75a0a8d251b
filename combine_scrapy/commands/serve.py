"""``scrapy serve JOB``: a web console for the job, search over its records and an OAI-PMH endpoint.

One process serves one job, whichever stores it uses (``-s REDIS_URL``,
``-s MYSQL_URL`` as its harvesters) and however many harvesters run. It
listens on 127.0.0.1 unless ``--bind`` names another address; actions need the
token it prints (or ``--token``, or the COMBINE_CONSOLE_TOKEN variable).
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import os
import secrets
import signal
import sys

from aiohttp import web

from combine_scrapy.job import Job
from combine_scrapy.operations.console.app import LOOPBACK_NAMES, Console, make_app
from combine_scrapy.operations.console.data import ConsoleData
from combine_scrapy.operations.control import CommandError, JobCommand

#: Used in Identify when the job names no OperatorEmail (the protocol needs one that looks like an address).
DEFAULT_ADMIN_EMAIL = "webmaster@localhost.localdomain"
REQUEST_LINE_BYTES = 64 * 1024


class Command(JobCommand):
    default_settings = {"LOG_ENABLED": True, "LOG_LEVEL": "INFO"}

    def short_desc(self) -> str:
        return "Serve a web console for a job (live counters and plots, search, actions) and an OAI-PMH endpoint"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--port", type=int, default=8080, help="port to listen on (default 8080; 0: any free port)")
        parser.add_argument("--bind", default="127.0.0.1", metavar="ADDR",
                            help="address to listen on (default 127.0.0.1: this machine only)")
        parser.add_argument("--token", default=os.environ.get("COMBINE_CONSOLE_TOKEN"),
                            help="token the actions need (default: $COMBINE_CONSOLE_TOKEN, else a random one, printed)")
        parser.add_argument("--admin-email", help="adminEmail in OAI-PMH Identify (default: the job's OperatorEmail)")
        parser.add_argument("--host-name", action="append", default=[], metavar="NAME",
                            help="a name the console is reached by, as browsers send it in Host (repeatable; always: "
                                 "localhost, 127.0.0.1, ::1 and the --bind address); others get 421")

    def run_job(self, job: Job, args: list[str], opts: argparse.Namespace) -> None:
        if not 0 <= opts.port <= 65535:
            raise CommandError(f"--port must be 0 to 65535, got {opts.port}", exitcode=2)
        try:
            address = ipaddress.ip_address(opts.bind)
        except ValueError:
            raise CommandError(f"--bind {opts.bind!r} is not an IP address", exitcode=2) from None
        if opts.token is not None and len(opts.token) < 8:
            raise CommandError("--token must be at least 8 characters", exitcode=2)
        token = opts.token or secrets.token_urlsafe(18)
        page_size = self.project_settings.getint("COMBINE_OAI_PAGE_SIZE")
        if page_size < 1:
            raise CommandError(f"COMBINE_OAI_PAGE_SIZE must be at least 1, got {page_size}", exitcode=2)
        settings = self.project_settings
        console = Console(
            job.name,
            lambda: ConsoleData.open(job, settings),
            token,
            admin_email=opts.admin_email or job.fetching.operator_email or DEFAULT_ADMIN_EMAIL,
            oai_page_size=page_size,
            host_names=LOOPBACK_NAMES | {str(address), *opts.host_name},
        )
        if not address.is_loopback:
            print(f"warning: listening on {opts.bind}: anyone who reaches it can read the records"
                  " (by the names --host-name gives, and the address itself)", file=sys.stderr)
        try:
            asyncio.run(self._serve(console, str(address), opts.port, token, opts.token is None))
        except OSError as e:
            raise CommandError(f"cannot listen on {opts.bind} port {opts.port}: {e.strerror or e}") from e
        except ConnectionError as e:
            raise CommandError(f"cannot open the job's records: {e}") from e

    async def _serve(self, console: Console, host: str, port: int, token: str, show_token: bool) -> None:
        # A request line up to 64 KiB reaches the application (aiohttp's default is 8 KiB), so an oversized OAI-PMH
        # request gets the protocol's badArgument, not a plain-text 400.
        runner = web.AppRunner(make_app(console), access_log=None, max_line_size=REQUEST_LINE_BYTES)
        await runner.setup()
        try:
            site = web.TCPSite(runner, host, port)
            await site.start()
            bound = runner.addresses[0][1]
            where = f"[{host}]" if ":" in host else host
            print(f"console of job {console.job}: http://{where}:{bound}/", flush=True)
            print(f"OAI-PMH: http://{where}:{bound}/oai", flush=True)
            if show_token:
                print(f"actions need the token {token}", flush=True)
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, stop.set)
            await stop.wait()
        finally:
            await runner.cleanup()
