"""``scrapy resume JOB``: the job's harvesters take URLs again after ``scrapy pause JOB``."""

from __future__ import annotations

from combine_scrapy.commands import pause


class Command(pause.Command):
    pause = False

    def short_desc(self) -> str:
        return "Resume a paused job: its harvesters take URLs again"
