"""Where a job's data is: its data directory, and the Redis and MySQL servers its crawl used.

COMBINE_DATA_DIR is relative (``data``) by default; :func:`data_directory` makes it
absolute once, against the directory the command started in, so that every
path built on it means the same directory and can be written as a URI (a
read-only SQLite connection needs one).

A crawl with REDIS_URL or MYSQL_URL writes them to ``data/<job>/stores.json``
(:func:`record_stores`), without their passwords; a later command on the job
that names neither (``scrapy status J``, ``export``, ``serve``, ``search``...)
reads the same stores (:func:`with_recorded_stores`) instead of the empty
SQLite files beside that file. A recorded URL that had a password needs it
again: from REDIS_PARAMS' ``password`` for Redis, else the command says which
setting to give.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

logger = logging.getLogger(__name__)

STORES_FILE = "stores.json"
#: The settings naming a job's shared stores, and what each holds.
STORE_SETTINGS = {"REDIS_URL": "frontier in Redis", "MYSQL_URL": "records in MySQL"}


class StoresNotGiven(ValueError):
    """A command on a job whose crawl used a server with a password that the command's settings do not give."""


def data_directory(settings: Any) -> Path:
    """COMBINE_DATA_DIR as an absolute path (a relative one is taken from the working directory)."""
    return Path(settings.get("COMBINE_DATA_DIR")).absolute()


def without_password(url: str) -> tuple[str, bool]:
    """``url`` with its password removed (in the user part or a ``password=`` query parameter), and whether it had one."""
    parts = urlsplit(url)
    had_password = parts.password is not None
    netloc = parts.netloc
    if had_password:
        user, _, host = netloc.rpartition("@")
        name = user.split(":", 1)[0]
        netloc = f"{name}@{host}" if name else host
    query = parse_qsl(parts.query, keep_blank_values=True)
    kept = [(name, value) for name, value in query if name.lower() != "password"]
    had_password = had_password or len(kept) < len(query)
    return parts._replace(netloc=netloc, query=urlencode(kept)).geturl(), had_password


def stores_path(directory: Path, job: str) -> Path:
    return directory / job / STORES_FILE


def record_stores(settings: Any, job: str) -> None:
    """Write which shared stores the crawl of ``job`` uses (REDIS_URL, MYSQL_URL, passwords removed) to stores.json;
    warn when the last crawl used others, whose data the commands then no longer read."""
    path = stores_path(data_directory(settings), job)
    before = _read(path)
    stores: dict[str, Any] = {}
    for name in STORE_SETTINGS:
        url = settings.get(name)
        if url:
            stored, had_password = without_password(url)
            stores[name] = {"url": stored, "password": had_password}
    for name, what in STORE_SETTINGS.items():
        if name in before and name not in stores:
            logger.warning(
                "the last crawl of job %s kept its %s (%s); this one does not: commands on the job will read %s",
                job, what, before[name]["url"], path.parent,
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    # A file of this writer's own, then renamed: harvesters starting together each write whole files.
    handle, partial = tempfile.mkstemp(prefix=f"{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as file:
            file.write(json.dumps(stores, indent=1) + "\n")
        os.replace(partial, path)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise


def _read(path: Path) -> dict[str, Any]:
    try:
        stores = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        logger.warning("%s cannot be read (%s): the job's stores are taken from the settings alone", path, e)
        return {}
    if not isinstance(stores, dict):
        return {}
    return {name: store for name, store in stores.items()
            if name in STORE_SETTINGS and isinstance(store, dict) and isinstance(store.get("url"), str)}


def recorded_stores(settings: Any, job: str) -> dict[str, dict[str, Any]]:
    """The shared stores job's last crawl recorded: ``{setting: {"url": ..., "password": bool}}``."""
    return _read(stores_path(data_directory(settings), job))


def with_recorded_stores(settings: Any, job: str) -> list[str]:
    """Set REDIS_URL and MYSQL_URL that ``settings`` leave empty to the stores ``job``'s crawl recorded; return
    lines saying what was taken. A recorded URL that had a password is used when the settings give that password
    some other way (REDIS_PARAMS' ``password``), else it is a StoresNotGiven naming the setting to give."""
    taken = []
    for name, recorded in recorded_stores(settings, job).items():
        if settings.get(name):
            continue
        url = recorded["url"]
        if recorded.get("password") and not (name == "REDIS_URL" and settings.getdict("REDIS_PARAMS").get("password")):
            raise StoresNotGiven(
                f"job {job} was crawled with its {STORE_SETTINGS[name]} at {url} (its password is not recorded): "
                f"give it with -s {name}=... and the password"
            )
        settings.set(name, url, priority="cmdline")
        taken.append(f"job {job}: {STORE_SETTINGS[name]} at {url}, as its crawl recorded in {stores_path(data_directory(settings), job)}")
    return taken
