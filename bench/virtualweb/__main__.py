"""``python -m bench.virtualweb serve|job|truth|selfbench``: run the virtual web, write a job, the truth, its speed."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bench.virtualweb.harness import name_value
from bench.virtualweb.job import write_job
from bench.virtualweb.selfbench import selfbench, write_results
from bench.virtualweb.server import VirtualWebServer, serve_until_signalled
from bench.virtualweb.web import VirtualWeb

RESULTS = Path(__file__).resolve().parents[1] / "results"


def _web_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--pages", type=int, default=100_000)


def _web(args: argparse.Namespace) -> VirtualWeb:
    return VirtualWeb(args.seed, args.hosts, args.pages)


def serve(args: argparse.Namespace) -> None:
    began = time.monotonic()
    web = _web(args)
    server = VirtualWebServer(web, args.port, log_size=args.log_size, log_file=args.log_file, latency=args.latency)
    ready = (
        f"virtual web on 127.0.0.1:{{port}} (seed {web.seed}, {web.hosts} hosts, {web.pages} pages, "
        f"built in {time.monotonic() - began:.1f} s); use it as http_proxy"
    )
    serve_until_signalled(server, ready)


def job(args: argparse.Namespace) -> None:
    variables = dict(args.set)
    out = write_job(_web(args), args.out, args.port, args.wait, variables, serveralias=args.serveralias)
    print(f"job written to {out}")


def truth(args: argparse.Namespace) -> None:
    web = _web(args)
    urls = web.relevant_urls(polite=args.polite)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(f"{url}\n" for url in urls))
    print(json.dumps(web.counts(), indent=1))
    print(f"{len(urls)} relevant URLs written to {args.out}")


def bench(args: argparse.Namespace) -> None:
    result = selfbench(args.seconds, args.connections, args.seed, args.hosts, args.pages)
    paths = write_results(result, args.results)
    print(json.dumps(result, indent=1))
    print("written:", *paths)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.virtualweb", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    command = commands.add_parser("serve", help="serve the web as an HTTP proxy on 127.0.0.1")
    _web_options(command)
    command.add_argument("--port", type=int, default=8950, help="0 picks a free port")
    command.add_argument("--log-size", type=int, default=500_000, help="requests kept for http://control.test/log")
    command.add_argument("--log-file", type=Path, help="also write every request to this JSON-lines file")
    command.add_argument("--latency", type=float, default=0.0,
                         help="seconds each answer is held before it is written (default 0: at once)")
    command.set_defaults(run=serve)

    command = commands.add_parser("job", help="write a job directory (combine.cfg, topic definition, seeds)")
    _web_options(command)
    command.add_argument("--out", type=Path, required=True)
    command.add_argument("--port", type=int, default=8950, help="the proxy port named in the job's comments")
    command.add_argument("--wait", type=float, default=1.0, help="WaitIntervalHost, seconds")
    command.add_argument("--set", action="append", default=[], type=name_value, metavar="NAME=VALUE",
                         help="another combine.cfg variable, e.g. CrawlStrategy=BestFirst (repeatable)")
    command.add_argument("--serveralias", action="store_true", help="declare the www. aliases of the web's hosts")
    command.set_defaults(run=job)

    command = commands.add_parser("truth", help="write the on-topic URLs (one per distinct page)")
    _web_options(command)
    command.add_argument("--out", type=Path, required=True)
    command.add_argument("--polite", action="store_true", help="only URLs robots.txt lets a crawler fetch")
    command.set_defaults(run=truth)

    command = commands.add_parser("selfbench", help="measure the server's own requests per second")
    _web_options(command)
    command.add_argument("--seconds", type=float, default=10.0)
    command.add_argument("--connections", type=int, default=32)
    command.add_argument("--results", type=Path, default=RESULTS)
    command.set_defaults(run=bench)

    args = parser.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    sys.exit(main())
