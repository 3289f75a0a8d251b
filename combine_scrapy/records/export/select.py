"""Which records an export takes: by topic class and by date, decided per record in constant memory."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from combine_scrapy.records.record import Record

DATE_FIELDS = ("changed", "checked", "modified")
_DATE_ONLY = re.compile(r"\d{4}-?\d{2}-?\d{2}")


def parse_date(text: str, *, end_of_day: bool = False) -> float:
    """A Unix time from ``YYYY-MM-DD`` or an ISO 8601 date-time (UTC unless it names its offset).

    With ``end_of_day``, a bare date means the end of that day, so ``--until
    2026-01-31`` takes in all of the 31st. Raises ValueError naming the text.
    """
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"bad date {text!r}: use YYYY-MM-DD or YYYY-MM-DDThh:mm[:ss][+hh:mm]") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if end_of_day and _DATE_ONLY.fullmatch(text.strip()):
        moment += timedelta(days=1)
    return moment.timestamp()


@dataclass(frozen=True)
class Selection:
    """Records of a topic class (or any of its sub-classes) with a date in ``[since, until)``."""

    topic_class: str | None = None
    since: float | None = None
    until: float | None = None
    date_field: str = "changed"  # the record's datestamp (see Record.changed)

    def __post_init__(self) -> None:
        if self.date_field not in DATE_FIELDS:
            raise ValueError(f"bad date field {self.date_field!r}: use {' or '.join(DATE_FIELDS)}")

    def matches(self, record: Record) -> bool:
        if self.topic_class is not None and not any(
            name == self.topic_class or name.startswith(self.topic_class + ".")
            for name in (topic.name for topic in record.classes)
        ):
            return False
        if self.since is None and self.until is None:
            return True
        moment = getattr(record, self.date_field)
        if moment is None and self.date_field == "changed":  # a record no store has dated: its last check
            moment = record.checked
        if moment is None:
            return False
        return (self.since is None or moment >= self.since) and (self.until is None or moment < self.until)
