"""Record stores: one interface, an embedded SQLite default and MySQL/MariaDB for servers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from combine_scrapy.record import Record


class RecordStore(Protocol):
    """Records keyed by the MD5 of their content, each with all the URLs that served it."""

    location: str  # where the records are, for people (a file path, a server URL without password)

    def store(self, record: Record) -> bool:
        """Store under ``record.url``; True when the content is new. One transaction."""

    def forget_url(self, url: str) -> str | None:
        """Drop a URL from its record; returns the record's key if that deleted the record."""

    def key_for_url(self, url: str) -> str | None: ...

    def urls(self, key: str) -> list[str]: ...

    def count(self) -> int: ...

    def get(self, key: str) -> Record | None: ...

    def __iter__(self) -> Iterator[Record]:
        """Every record, read in pages so memory stays flat."""

    def close(self) -> None: ...
