"""Run a Python module under cProfile in every thread, its stats merged: ``python -m bench.profiled OUT MODULE ARGS...``.

``python -m cProfile`` sees only the main thread, and the harvester parses
pages in worker threads (``asyncio.to_thread``). Here each thread gets a
profiler of its own, started by ``threading.setprofile`` when the thread
starts, with cProfile's own fast clock (a per-thread CPU clock called from
Python slowed the crawl sixteen-fold). That clock runs on while a thread
waits for the GIL, so two busy threads would each be charged the whole run;
instead a sampler reads every thread's CPU clock, and each thread's times are
scaled to the CPU it really used before the threads are merged. Calls still
open at the end (a worker waiting for work) are left out rather than closed
with another thread's clock.
"""

from __future__ import annotations

import cProfile
import pstats
import runpy
import sys
import threading
import time

#: Waiting, not working: the event loop's poll, worker threads waiting for work, blocked locks.
IDLE = (
    "<method 'poll' of 'select.epoll' objects>",
    "<method 'get' of '_queue.SimpleQueue' objects>",
    "<method 'acquire' of '_thread.lock' objects>",
    "<built-in method time.sleep>",
)
#: Seconds between two readings of the threads' CPU clocks.
SAMPLE_EVERY = 0.2


def is_idle(function: tuple) -> bool:
    return function[0] == "~" and function[2] in IDLE


class ThreadProfile:
    """One thread's finished calls, scaled to its CPU time, in the form ``pstats.Stats.add`` takes."""

    def __init__(self, stats: dict, cpu_seconds: float | None):
        working = sum(entry[2] for function, entry in stats.items() if not is_idle(function))
        factor = cpu_seconds / working if cpu_seconds is not None and working > 0 else 1.0
        self.stats = {
            function: (cc, nc, tt * factor, ct * factor,
                       {caller: (c1, c2, t * factor, c * factor) for caller, (c1, c2, t, c) in callers.items()})
            for function, (cc, nc, tt, ct, callers) in stats.items()
        }

    def create_stats(self) -> None:
        """Made in __init__."""


class CpuSampler(threading.Thread):
    """Read the CPU clock of every thread now and then; the last reading of each is its CPU time."""

    def __init__(self):
        super().__init__(daemon=True, name="cpu-sampler")
        self.cpu: dict[int, float] = {}
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(SAMPLE_EVERY):
            self.sample()

    def sample(self) -> None:
        for thread in threading.enumerate():
            if thread is self or thread.ident is None:
                continue
            try:
                self.cpu[thread.ident] = time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
            except (OSError, ProcessLookupError):  # the thread ended between enumerate() and the reading
                pass


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit("usage: python -m bench.profiled OUT MODULE [ARGS...]")
    out, module, *args = sys.argv[1:]
    sampler = CpuSampler()
    sampler.start()
    main_profile = cProfile.Profile()
    workers: list[tuple[int, cProfile.Profile]] = []

    def profile_thread(*_) -> None:
        sys.setprofile(None)
        profile = cProfile.Profile()
        workers.append((threading.get_ident(), profile))
        profile.enable()

    threading.setprofile(profile_thread)
    sys.argv = [module, *args]
    main_profile.enable()
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as e:
        code = e.code
    else:
        code = 0
    finally:
        main_profile.disable()
        threading.setprofile(None)
        sampler.stopped.set()
        sampler.sample()
        main_profile.create_stats()
        worker_cpu = {ident: sampler.cpu.get(ident) for ident, _ in workers}
        main_cpu = time.process_time() - sum(cpu for cpu in worker_cpu.values() if cpu is not None)
        stats = pstats.Stats(ThreadProfile(main_profile.stats, main_cpu))
        for ident, profile in workers:
            profile.snapshot_stats()  # not create_stats: it would close open calls with this thread's clock
            if profile.stats:
                stats.add(ThreadProfile(profile.stats, worker_cpu[ident]))
        stats.dump_stats(out)
    sys.exit(code)


if __name__ == "__main__":
    main()
