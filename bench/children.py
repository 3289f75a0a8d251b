"""The processes a benchmark starts end with it.

A bench stopped by Ctrl-C, SIGTERM or SIGKILL must not leave a crawler, a web
server or a Redis running behind it: each child asks the kernel (Linux's
parent-death signal) for SIGTERM when the bench process dies.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from combine_scrapy.commands.harvest import terminated_with


def ends_with_bench() -> Callable[[], None] | None:
    """Popen's ``preexec_fn`` for a child of this benchmark process."""
    return terminated_with(os.getpid())
