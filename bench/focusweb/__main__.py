"""``python -m bench.focusweb serve|job|describe``: serve the focus web, write a job for a topic, describe it."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bench.focusweb.job import write_job
from bench.focusweb.web import FocusWeb
from bench.virtualweb.harness import name_value
from bench.virtualweb.server import VirtualWebServer, serve_until_signalled


class FocusWebServer(VirtualWebServer):
    """bench/virtualweb's proxy server, serving a FocusWeb."""

    def stats(self) -> dict[str, object]:
        return {**super().stats(), "hosts": len(self.web.hosts), "pages": len(self.web.pages)}


def serve(args: argparse.Namespace) -> None:
    began = time.monotonic()
    web = FocusWeb(args.seed)
    server = FocusWebServer(web, args.port, log_size=args.log_size, log_file=args.log_file)
    ready = (
        f"focus web on 127.0.0.1:{{port}} (seed {web.seed}, {len(web.hosts)} hosts, {len(web.pages)} pages, "
        f"built in {time.monotonic() - began:.1f} s); use it as http_proxy"
    )
    serve_until_signalled(server, ready)


def job(args: argparse.Namespace) -> None:
    web = FocusWeb(args.seed)
    out = write_job(web, web.topic_index(args.topic), args.out, args.port, args.wait, dict(args.set))
    print(f"job written to {out}")


def describe(args: argparse.Namespace) -> None:
    """Counts, the depth of each topic's pages, and what a strict breadth-first crawl needs to find them."""
    web = FocusWeb(args.seed)
    depths = web.depths()
    topics = {}
    for index, topic in enumerate(web.topics):
        pages = web.relevant_pages(index)
        topics[topic.key] = {
            "relevant_pages": len(pages),
            "depths": {str(d): sum(1 for page in pages if depths[page] == d)
                       for d in sorted({depths[page] for page in pages})},
            **web.offline_references(index),
        }
    print(json.dumps({**web.counts(), "topics": topics}, indent=1))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.focusweb", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    command = commands.add_parser("serve", help="serve the web as an HTTP proxy on 127.0.0.1")
    command.add_argument("--seed", type=int, default=1)
    command.add_argument("--port", type=int, default=8951, help="0 picks a free port")
    command.add_argument("--log-size", type=int, default=500_000, help="requests kept for http://control.test/log")
    command.add_argument("--log-file", type=Path, help="also write every request to this JSON-lines file")
    command.set_defaults(run=serve)

    command = commands.add_parser("job", help="write a job directory for one topic")
    command.add_argument("--seed", type=int, default=1)
    command.add_argument("--topic", required=True, help="glaciers, bees or fibre")
    command.add_argument("--out", type=Path, required=True)
    command.add_argument("--port", type=int, default=8951, help="the proxy port named in the job's comments")
    command.add_argument("--wait", type=float, default=0, help="WaitIntervalHost, seconds")
    command.add_argument("--set", action="append", default=[], type=name_value, metavar="NAME=VALUE",
                         help="another combine.cfg variable, e.g. CrawlStrategy=BestFirst (repeatable)")
    command.set_defaults(run=job)

    command = commands.add_parser("describe", help="counts, topic depths, strict breadth-first figures (JSON)")
    command.add_argument("--seed", type=int, default=1)
    command.set_defaults(run=describe)

    args = parser.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    sys.exit(main())
