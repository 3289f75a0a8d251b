"""A project directory as a user has one, and the commands run in it as a user runs them.

The directory holds a ``scrapy.cfg`` and ``topics/`` (the repository's jobs, their seeds moved to a test web's
port); the commands are the ``scrapy`` program of the virtual environment, started in that directory with the
default settings, so the data directory is the relative ``data/`` and nothing is given with ``-s`` that a user
would not give.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from crawling import PROJECT

from combine_scrapy.operations.sampleweb import DEMO_PORT

#: The scrapy program installed beside this interpreter (the project's .venv/bin/scrapy).
SCRAPY_PROGRAM = Path(sys.executable).parent / "scrapy"


def user_environment() -> dict[str, str]:
    """A shell with the virtual environment activated; the checkout under test on the path (its package, not
    another checkout's, whichever one the environment's editable install points at)."""
    return {
        **os.environ,
        "PATH": os.pathsep.join([str(SCRAPY_PROGRAM.parent), os.environ.get("PATH", "")]),
        "PYTHONPATH": str(PROJECT),
    }


@dataclass
class UserProject:
    root: Path

    @classmethod
    def create(cls, root: Path, port: int) -> UserProject:
        """A project in ``root`` with the repository's scrapy.cfg and jobs, the sample web's port made ``port``."""
        root.mkdir(parents=True, exist_ok=True)
        shutil.copy(PROJECT / "scrapy.cfg", root / "scrapy.cfg")
        shutil.copytree(PROJECT / "topics", root / "topics")
        for seeds in (root / "topics").glob("*/seeds.txt"):
            seeds.write_text(seeds.read_text().replace(f":{DEMO_PORT}/", f":{port}/"))
        return cls(root)

    def scrapy(self, *args: str, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
        """``scrapy ARGS`` in the project directory; its status and output."""
        return subprocess.run(
            [str(SCRAPY_PROGRAM), *args], cwd=self.root, capture_output=True, text=True, timeout=timeout,
            env=user_environment(), **kwargs,
        )

    def shell(self, command: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """A shell command line (pipes, several commands) in the project directory, with ``set -eo pipefail``."""
        return subprocess.run(
            ["bash", "-c", f"set -eo pipefail\n{command}"], cwd=self.root, capture_output=True, text=True,
            timeout=timeout, env=user_environment(),
        )

    def popen(self, *args: str, **kwargs) -> subprocess.Popen:
        return subprocess.Popen([str(SCRAPY_PROGRAM), *args], cwd=self.root, env=user_environment(), **kwargs)
