"""A loopback site whose topical text and links exist only after its scripts run, and canaries it must not reach.

The seed page is an empty single-page-app root that a script fills from a JSON
endpoint on the same host (its links to two more pages come from there); each
of those pages writes its own text with an inline script. The seed's script
also asks two loopback canaries for a URL: another port of the seed's host and
another loopback host, neither named by the job. An image, a font and a
stylesheet's image on the seed's host are there to be left unloaded.
"""

from __future__ import annotations

import json

from combine_scrapy.operations.sampleweb import Page

TOPIC = "100: carnivorous plants=CP\n"

#: Pages the crawl must find (their titles) once rendered; none is reachable without running scripts.
TOPICAL_TITLES = ("Sundews of the bog", "Pitcher plants of the pine barrens", "Venus flytrap care")


def _shell(title: str, script: str) -> Page:
    return Page(
        f"<!doctype html><html><head><title>{title}</title></head>"
        f'<body><div id="root"></div><noscript>Please enable JavaScript to view this site.</noscript>'
        f"<script>{script}</script></body></html>"
    )


def _inline(title: str, text: str) -> str:
    body = json.dumps(f"<h1>{title}</h1><p>{text}</p><img src='/photo.jpg'>")
    return f"document.title = {json.dumps(title)}; document.getElementById('root').innerHTML = {body};"


def render_site(canaries: tuple[str, ...]) -> dict[str, Page]:
    """The seed host's pages; ``canaries`` are URLs the seed's script asks for (each must stay untouched)."""
    text = ("Carnivorous plants trap insects. Carnivorous plants such as sundews grow in bogs, and carnivorous plants "
            "digest their prey with enzymes. ") * 3
    canary_calls = "".join(f"fetch({json.dumps(url)}).catch(function () {{}});" for url in canaries)
    app = (
        "fetch('/api/pages.json').then(function (r) { return r.json(); }).then(function (data) {"
        "  var html = '<h1>' + data.title + '</h1><p>' + data.text + '</p><ul>';"
        "  data.links.forEach(function (l) { html += '<li><a href=\"' + l.href + '\">' + l.text + '</a></li>'; });"
        "  document.getElementById('root').innerHTML = html + '</ul>'; document.title = data.title;"
        "});" + canary_calls
    )
    pages = {
        "/api/pages.json": Page(json.dumps({
            "title": TOPICAL_TITLES[0],
            "text": text,
            "links": [{"href": "/pitchers.html", "text": "pitcher plants"}, {"href": "/flytrap.html", "text": "flytraps"}],
        }), headers={"Content-Type": "application/json"}),
        "/app.js": Page(app, headers={"Content-Type": "application/javascript"}),
        "/photo.jpg": Page(b"\xff\xd8\xff", headers={"Content-Type": "image/jpeg"}),
        "/pitchers.html": _shell("Loading", _inline(TOPICAL_TITLES[1], text.replace("sundews", "pitcher plants"))),
        "/flytrap.html": _shell("Loading", _inline(TOPICAL_TITLES[2], text.replace("sundews", "flytraps"))),
    }
    pages["/"] = Page(
        "<!doctype html><html><head><title>Loading</title></head>"
        '<body><div id="root"></div><noscript>Please enable JavaScript to view this site.</noscript>'
        '<script src="/app.js"></script></body></html>'
    )
    return pages
