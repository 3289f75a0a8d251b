"""``scrapy harvest JOB -n N``: start N harvesters of one job and wait for them (Combine's ``--harvester N``).

Each harvester is an ordinary ``scrapy crawl focused -a job=JOB`` process
with the same settings, so N of them share the job's Redis frontier
(REDIS_URL) exactly as harvesters started by hand on several machines do.
The embedded SQLite frontier belongs to one process, so N > 1 needs Redis.
SIGINT or SIGTERM is passed on to every harvester, which then stops as a
Scrapy crawl does: it finishes the fetches in flight and gives back the rest.
Each harvester's log goes to ``harvester-<i>.log``; its summary (what it
fetched and stored) is printed when it ends, and kept in ``harvester-<i>.out``.
On Linux a harvester gets SIGTERM when this process dies, however it dies
(SIGKILL too: the kernel's parent-death signal), so none is left running
without the supervisor that would report it.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from combine_scrapy.job import Job
from combine_scrapy.operations.control import CommandError, JobCommand


class Command(JobCommand):
    reads_recorded_stores = False  # its harvesters run with the settings given to it, which are theirs to record

    def short_desc(self) -> str:
        return "Start N harvester processes of a job (sharing its Redis frontier) and wait for them"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("-n", "--harvesters", type=int, default=1, metavar="N", help="how many harvesters to start (default 1)")
        parser.add_argument("-a", dest="spargs", action="append", default=[], metavar="NAME=VALUE",
                            help="spider argument for every harvester, e.g. -a max_pages=1000 or -a continuous=1")
        parser.add_argument("--log-dir", metavar="DIR", help="where harvester-<i>.log files go (default: the job's data directory)")

    def run_job(self, job: Job, args: list[str], opts: argparse.Namespace) -> None:
        if opts.harvesters < 1:
            raise CommandError(f"-n must be at least 1, got {opts.harvesters}", exitcode=2)
        if opts.harvesters > 1 and not self.project_settings.get("REDIS_URL"):
            raise CommandError(
                f"{opts.harvesters} harvesters need a shared frontier: set REDIS_URL "
                "(-s REDIS_URL=redis://host:6379/0); the embedded SQLite frontier serves one process",
                exitcode=2,
            )
        log_dir = Path(opts.log_dir) if opts.log_dir else self.data_dir / job.name
        log_dir.mkdir(parents=True, exist_ok=True)
        self.exitcode = supervise(self._commands(job.name, opts, log_dir))

    def _commands(self, job_name: str, opts: argparse.Namespace, log_dir: Path) -> list[tuple[list[str], Path]]:
        """One ``scrapy crawl`` command line and log file per harvester, with this command's settings
        (its standard output, the summary, goes beside the log file as ``.out``)."""
        settings = [arg for setting in opts.set for arg in ("-s", setting)]
        spargs = [arg for sparg in opts.spargs for arg in ("-a", sparg)]
        commands = []
        for number in range(1, opts.harvesters + 1):
            log_file = log_dir / f"harvester-{number}.log"
            command = [
                sys.executable, "-m", "scrapy", "crawl", "focused", "-a", f"job={job_name}", *spargs, *settings,
                "-s", f"LOG_FILE={log_file}",
            ]
            commands.append((command, log_file))
        return commands


#: prctl's option that asks the kernel for a signal when the parent dies (linux/prctl.h).
PR_SET_PDEATHSIG = 1


def terminated_with(parent: int) -> Callable[[], None] | None:
    """What a child runs before its program (Popen's preexec_fn), on Linux: SIGTERM when ``parent`` dies, and at
    once if it already has; None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None

    def ask_for_sigterm() -> None:
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request: nobody would send it
            os.kill(os.getpid(), signal.SIGTERM)

    return ask_for_sigterm


def supervise(commands: list[tuple[list[str], Path]]) -> int:
    """Run the harvesters until all have ended; pass SIGINT/SIGTERM on; print each one's summary as it ends.

    Returns the worst exit status.
    """
    harvesters: list[subprocess.Popen[bytes]] = []
    outputs: dict[int, Path] = {}

    def stop(signum: int, frame: FrameType | None) -> None:
        print(f"harvest: {signal.Signals(signum).name}: stopping {len(harvesters)} harvesters", file=sys.stderr)
        for harvester in harvesters:
            if harvester.poll() is None:
                harvester.send_signal(signal.SIGTERM)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for number, (command, log_file) in enumerate(commands, start=1):
            outputs[number] = log_file.with_suffix(".out")
            with outputs[number].open("wb") as out:  # the child keeps its own copy of the descriptor
                harvester = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, env=os.environ.copy(),
                                             preexec_fn=terminated_with(os.getpid()))
            harvesters.append(harvester)
            print(f"harvest: harvester {number} started, pid {harvester.pid}, log {log_file}", flush=True)
        started = time.monotonic()
        running = dict(enumerate(harvesters, start=1))
        worst = 0
        while running:
            for number, harvester in list(running.items()):
                status = harvester.poll()
                if status is None:
                    continue
                del running[number]
                worst = max(worst, abs(status))
                print(f"harvest: harvester {number} ended with status {status} after {time.monotonic() - started:.0f} s", flush=True)
                summary = outputs[number].read_text(encoding="utf-8", errors="replace").strip()
                if summary:
                    print("\n".join(f"  {line}" for line in summary.splitlines()), flush=True)
            time.sleep(0.2)
        return worst
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
