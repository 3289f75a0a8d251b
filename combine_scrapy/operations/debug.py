"""Debugging a job's topic filter on one page, in ``scrapy shell``.

    $ scrapy shell https://en.wikipedia.org/wiki/Optical_glass --job glass
    >>> score(response)            # or score(response, "glass") for any job
    relevant: yes  (score 512.0, normalized 1.37, algorithm Std) ...

The page goes through the same steps as in a crawl: parse, the topic
filter's document (title, meta, headings, text, URL path), the job's filter.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from combine_scrapy.access.urls import host_of
from combine_scrapy.document.parse import parse_document
from combine_scrapy.job import Job, load_job
from combine_scrapy.topic import Document
from combine_scrapy.topic.matching import Classification

if TYPE_CHECKING:
    from scrapy.http import Response


@dataclass(frozen=True, repr=False)
class PageScore:
    """What the job's topic filter made of a page; the shell echoes it as the text ``str()`` gives."""

    url: str
    job: str
    title: str
    classification: Classification

    @property
    def relevant(self) -> bool:
        return self.classification.relevant

    @property
    def score(self) -> float:
        return self.classification.score

    def __str__(self) -> str:
        c = self.classification
        lines = [
            f"{self.url} (job {self.job})",
            f"title: {self.title!r}",
            f"relevant: {'yes' if c.relevant else 'no'}  (score {c.score:g}, normalized {c.normalized:g}, algorithm {c.algorithm})",
        ]
        lines += [
            f"  class {k.name}: absolute {k.absolute:g}, relative {k.relative:g}; terms: {', '.join(k.terms) or '-'}"
            for k in c.classes
        ]
        lines.append(f"matched terms: {', '.join(c.terms) or 'none'}")
        return "\n".join(lines)

    __repr__ = __str__  # what an interactive console echoes for ``>>> score(response)``


def _topics_dir() -> str:
    from scrapy.utils.project import get_project_settings

    topics_dir: str = get_project_settings().get("COMBINE_TOPICS_DIR")
    return topics_dir


def score(response: Response, job: Job | str, topics_dir: str | Path | None = None) -> PageScore:
    """Score a Scrapy response with a job's topic filter (a Job, or a job name looked up in
    ``topics_dir``, by default the project's COMBINE_TOPICS_DIR)."""
    if isinstance(job, str):
        job = load_job(job, topics_dir or _topics_dir())
    headers = {
        key.decode("latin-1").lower(): b", ".join(values).decode("latin-1") for key, values in response.headers.items()
    }
    page = parse_document(response.url, response.body, headers, extract_links_from_text=job.links.from_text)
    classification = job.topic_filter.classify(Document.from_page(page, host_of(response.url)))
    return PageScore(response.url, job.name, page.title, classification)
