"""The console's HTML pages, written out from data; every value is escaped, nothing is loaded from elsewhere."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from combine_scrapy.records.store.search import share_of_best

if TYPE_CHECKING:
    from combine_scrapy.operations.console.data import SearchPage

#: Characters of a record's text shown on its page at most.
TEXT_SHOWN = 100_000
_BRACKETED = re.compile(r"\[([^\[\]]+)\]")


def when(moment: float | None) -> str:
    return "" if moment is None else datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def layout(job: str, title: str, body: str, *, script: bool = False) -> str:
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)} - {escape(job)}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/console.css">
</head>
<body>
<header>
<span class="brand">combine-scrapy</span> <span class="job">job <b>{escape(job)}</b></span>
<nav><a href="/">Console</a> <a href="/search">Search</a> <a href="/oai?verb=Identify">OAI-PMH</a> <a href="/api">API</a></nav>
</header>
<main>
{body}
</main>
{'<script src="/static/console.js"></script>' if script else ''}
</body>
</html>
"""


def console_page(job: str) -> str:
    counters = "".join(
        f'<div class="counter"><span class="value" id="{name}">-</span><span class="label">{label}</span></div>'
        for name, label in (
            ("state", "state"), ("per-minute", "pages/min"), ("fetched", "pages fetched"), ("relevant", "relevant"),
            ("harvest-rate", "harvest rate"), ("records", "records"), ("frontier-urls", "URLs known"),
            ("due", "marked, due"), ("locked", "marked, locked"), ("done", "done"),
        )
    )
    body = f"""
<section id="counters" class="counters">{counters}</section>
<section class="plots">
  <figure><figcaption>Harvest rate over time (overall, and over the last pages)</figcaption>
    <svg id="plot-rate" viewBox="0 0 480 260" role="img" aria-label="harvest rate over time"></svg></figure>
  <figure><figcaption>Relevant pages against pages fetched</figcaption>
    <svg id="plot-relevant" viewBox="0 0 480 260" role="img" aria-label="relevant pages against pages fetched"></svg></figure>
</section>
<section class="actions">
  <h2>Actions</h2>
  <label>Token <input id="token" type="password" autocomplete="off" placeholder="printed by scrapy serve"></label>
  <button id="pause" type="button">Pause</button>
  <button id="resume" type="button">Resume</button>
  <button id="stop" type="button">Stop harvesters</button>
  <div class="seed"><textarea id="seed-urls" rows="2" placeholder="URLs to seed, one a line"></textarea>
  <button id="seed" type="button">Seed</button></div>
  <p id="action-result" role="status"></p>
</section>
<section><h2>Harvesters</h2>
<table id="harvesters"><thead><tr><th>harvester</th><th>state</th><th>pages</th><th>fetching now</th><th>last fetched</th></tr></thead><tbody></tbody></table>
</section>
<section class="columns">
<div><h2>Recent relevant pages</h2>
<table id="recent"><thead><tr><th>page</th><th>score</th><th>class</th></tr></thead><tbody></tbody></table></div>
<div><h2>Errors by kind</h2>
<table id="errors"><thead><tr><th>kind</th><th>fetches</th></tr></thead><tbody></tbody></table></div>
</section>
<section><h2>Frontier by host</h2>
<table id="hosts"><thead><tr><th>host</th><th>marked</th><th>locked</th><th>done</th><th>relevant</th></tr></thead><tbody></tbody></table>
</section>
<p class="updated">updated <span id="updated">never</span></p>
"""
    return layout(job, "Console", body, script=True)


def _snippet(text: str) -> str:
    """A search snippet with the query words, which the store brackets, highlighted."""
    return _BRACKETED.sub(r"<mark>\1</mark>", escape(text, quote=False))


def search_page(job: str, form: dict[str, str], classes: list[tuple[str, int]], found: SearchPage | None,
                error: str | None, page: int = 1, page_size: int = 50) -> str:
    options = ['<option value="">any class</option>'] + [
        f'<option value="{escape(name)}"{" selected" if name == form.get("class") else ""}>{escape(name)} ({count})</option>'
        for name, count in classes
    ]
    body = [f"""
<h1>Search the records</h1>
<form class="search" action="/search" method="get">
  <input id="q" name="q" type="search" value="{escape(form.get('q', ''))}" placeholder="words to find" autofocus>
  <select id="class" name="class">{''.join(options)}</select>
  <input id="host" name="host" value="{escape(form.get('host', ''))}" placeholder="host">
  <label>changed from <input id="since" name="since" type="date" value="{escape(form.get('since', ''))}"></label>
  <label>to <input id="until" name="until" type="date" value="{escape(form.get('until', ''))}"></label>
  <button type="submit">Search</button>
</form>"""]
    if error:
        body.append(f'<p class="error">{escape(error)}</p>')
    elif found is not None:
        first = (page - 1) * page_size + 1
        shown = f", {first} to {first + len(found.hits) - 1} shown" if found.hits and found.total > page_size else ""
        total = f"{found.total} or more records" if found.more else f'{found.total} record{"s" * (found.total != 1)}'
        body.append(f'<p class="count">{total}{shown}</p><ol id="results" class="results" start="{first}">')
        for hit in found.hits:
            score = "" if hit["score"] is None else (
                f' <span class="score">relevance {share_of_best(hit["score"], found.best)}</span>')
            classes_shown = ", ".join(hit["classes"][:5])
            body.append(
                f'<li><a class="title" href="/record/{escape(hit["key"])}">{escape(hit["title"] or "(no title)")}</a>{score}'
                f'<div class="url">{escape(hit["url"])}</div><div class="snippet">{_snippet(hit["snippet"])}</div>'
                f'<div class="meta">{escape(classes_shown)} &middot; changed {when(hit["changed"])}</div></li>'
            )
        body.append("</ol>")
        body.append(_pager(form, page, first - 1 + len(found.hits) < found.total))
    return layout(job, "Search", "\n".join(body))


def _pager(form: dict[str, str], page: int, more: bool) -> str:
    """Links to the previous and next pages of a search's results."""
    links = [
        f'<a rel="{rel}" href="/search?{escape(urlencode({**form, "page": number}))}">{label}</a>'
        for rel, number, label, shown in (("prev", page - 1, "previous page", page > 1), ("next", page + 1, "next page", more))
        if shown
    ]
    return f'<p class="pages">{" &middot; ".join(links)}</p>' if links else ""


def record_page(job: str, record: dict[str, Any]) -> str:
    def rows(pairs: Iterable[tuple[str, str]]) -> str:
        return "".join(f"<tr><th>{escape(name)}</th><td>{value}</td></tr>" for name, value in pairs)

    urls = "".join(f'<li><a href="{escape(url)}" rel="noreferrer">{escape(url)}</a></li>' for url in record["urls"])
    classes = "".join(
        f"<tr><td>{escape(topic['name'])}</td><td>{topic['absolute']:g}</td><td>{topic['relative']:g}</td>"
        f"<td>{escape(', '.join(topic['terms']))}</td></tr>"
        for topic in record["classes"]
    )
    links_out = "".join(
        f'<li><a href="{escape(link["url"])}" rel="noreferrer">{escape(link["url"])}</a> '
        f'<span class="anchor">{escape(link["anchor"])}</span> <span class="kind">{escape(link["kind"])}</span></li>'
        for link in record["links_out"]
    )
    links_in = "".join(
        f'<li><a href="/record/{escape(link["record"])}">{escape(link["url"] or link["record"])}</a> '
        f'&rarr; {escape(link["to"])} <span class="anchor">{escape(link["anchor"])}</span></li>'
        for link in record["links_in"]
    )
    text = record["text"]
    shown = escape(text[:TEXT_SHOWN]) + ("\n[...]" if len(text) > TEXT_SHOWN else "")
    body = f"""
<h1 id="title">{escape(record['title'] or '(no title)')}</h1>
<table class="fields">{rows([
        ("record", f"{escape(record['key'])} (id {record['id']})"),
        ("type", escape(record['mime_type'])),
        ("language", escape(record['language'] or 'unknown')),
        ("country", escape(record['country'] or '')),
        ("topic score", f"{record['score']:g} (normalized {record['normalized']:g}, {escape(record['algorithm'])})"),
        ("checked", when(record['checked'])),
        ("changed", when(record['changed'])),
        ("modified", when(record['modified'])),
    ])}</table>
<h2>Found under {len(record['urls'])} URL{'s' * (len(record['urls']) != 1)}</h2>
<ul id="urls">{urls}</ul>
<h2>Topic scores by class</h2>
<table id="classes"><thead><tr><th>class</th><th>absolute</th><th>relative</th><th>terms</th></tr></thead><tbody>{classes}</tbody></table>
<h2>Links out ({len(record['links_out'])})</h2><ul id="links-out" class="links">{links_out}</ul>
<h2>Links in from stored records ({len(record['links_in'])})</h2><ul id="links-in" class="links">{links_in}</ul>
<h2>Text</h2><pre id="text">{shown}</pre>
"""
    return layout(job, record["title"] or record["key"], body)


def not_found_page(job: str, what: str) -> str:
    return layout(job, "Not found", f'<h1>Not found</h1><p class="error">{escape(what)}</p>')
