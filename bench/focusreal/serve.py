"""``python -m bench.focusreal.serve``: serve the doc web on 127.0.0.1 as bench/virtualweb's forward proxy."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bench.focusreal.docweb import DocWeb
from bench.virtualweb.server import VirtualWebServer, serve_until_signalled


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.focusreal.serve", description=__doc__)
    parser.add_argument("--port", type=int, default=8952, help="0 picks a free port")
    parser.add_argument("--log-size", type=int, default=500_000, help="requests kept for http://control.test/log")
    parser.add_argument("--log-file", type=Path, help="also write every request to this JSON-lines file")
    args = parser.parse_args(argv)
    began = time.monotonic()
    web = DocWeb()
    server = VirtualWebServer(web, args.port, log_size=args.log_size, log_file=args.log_file)
    serve_until_signalled(server, f"doc web on 127.0.0.1:{{port}} ({web.hosts} hosts, {web.pages} pages, indexed in "
                                  f"{time.monotonic() - began:.1f} s); use it as http_proxy")


if __name__ == "__main__":
    main()
