"""The harvest report: one HTML page with PNG plots and tables, for a finished or running job.

The main plot is the one the Combine study draws for its crawl strategies
(Figure 3.10): relevant pages against pages fetched, counting the pages the
topic filter judged (fetches that bring no page, such as a 304 or a 404, are
left out, as in the harvest rate: ``harvestlog.harvest_rate``). Other jobs, for example
the same topic crawled with another CrawlStrategy, can be drawn beside it.
The numbers come from the harvest log (every fetch, in order), the frontier
and the record store.
"""

from __future__ import annotations

import datetime
import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from combine_scrapy.frontier import FrontierCounts
from combine_scrapy.operations.harvestlog import HostRow, format_rate, harvest_rate

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: Plots are drawn from at most this many points of a curve.
PLOT_POINTS = 2000
PLOTS = {
    "relevant.png": "Relevant pages against pages judged",
    "timeline.png": "Pages judged and relevant pages over time",
    "harvest_rate.png": "Harvest rate over the crawl",
}

Curve = list[tuple[float, int, int]]  # (time, pages judged so far, relevant pages so far)


@dataclass
class ReportData:
    job: str
    curve: Curve
    hosts: list[HostRow]
    classes: list[tuple[str, int]]
    records: int
    frontier: FrontierCounts
    fetched: int = 0  # fetches with a response, judged or not (304s, redirects and errors too)
    compared: dict[str, Curve] = field(default_factory=dict)  # other jobs' curves, by job name
    generated: float = 0.0
    #: The link model's strongest named features, ``(what it is, weight)``: positive weights lead to new relevant
    #: pages, negative ones away from them (irrelevant pages and duplicates).
    features: list[tuple[str, float]] = field(default_factory=list)


def thin(curve: Curve, points: int = PLOT_POINTS) -> Curve:
    """Every k-th point and the last one, so a plot of a long crawl stays light."""
    if len(curve) <= points:
        return curve
    step = -(-len(curve) // points)
    return curve[::step] + ([curve[-1]] if (len(curve) - 1) % step else [])


def windowed_rate(curve: Curve, window: int) -> list[tuple[int, float]]:
    """``(pages fetched, share of the last ``window`` pages that were relevant)``, from ``window`` pages on."""
    return [
        (fetched, (relevant - curve[i - window][2]) / window)
        for i, (_, fetched, relevant) in enumerate(curve)
        if i >= window
    ]


def _figure() -> tuple[Figure, Axes]:
    # The Agg canvas draws to PNG without a display and without pyplot's global state.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4.2), dpi=100, layout="tight")
    FigureCanvasAgg(figure)
    return figure, figure.add_subplot()


def _save(figure: Figure, axes: Axes, path: Path, plot: str, xlabel: str, ylabel: str, top: float | None = None) -> None:
    """Label, frame from zero, grid, legend and write one of the report's PLOTS."""
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(PLOTS[plot])
    axes.set_xlim(left=0)
    axes.set_ylim(0, top)
    axes.grid(alpha=0.3)
    axes.legend()
    figure.savefig(path)


def plot_relevant(curves: dict[str, Curve], path: Path) -> None:
    """Figure 3.10's plot: one line per job, and the line every page relevant would draw."""
    figure, axes = _figure()
    most = max((curve[-1][1] for curve in curves.values() if curve), default=1)
    axes.plot([0, most], [0, most], linestyle=":", color="grey", label="every page relevant")
    for name, curve in curves.items():
        points = thin(curve)
        axes.plot([p[1] for p in points], [p[2] for p in points], label=name)
    _save(figure, axes, path, "relevant.png", "pages judged", "relevant pages")


def plot_timeline(curve: Curve, path: Path) -> None:
    figure, axes = _figure()
    start = curve[0][0]
    points = thin(curve)
    minutes = [(p[0] - start) / 60 for p in points]
    axes.plot(minutes, [p[1] for p in points], label="pages judged")
    axes.plot(minutes, [p[2] for p in points], label="relevant pages")
    _save(figure, axes, path, "timeline.png", "minutes since the first fetch", "pages")


def plot_harvest_rate(curve: Curve, path: Path) -> None:
    """The share of relevant pages among the last pages fetched, and overall."""
    window = max(10, len(curve) // 20)
    figure, axes = _figure()
    points = thin(curve)
    axes.plot([p[1] for p in points], [p[2] / p[1] for p in points], label="all pages so far")
    recent = windowed_rate(curve, window) if len(curve) > window else []
    if recent:
        step = max(1, len(recent) // PLOT_POINTS)
        axes.plot([r[0] for r in recent[::step]], [r[1] for r in recent[::step]], label=f"last {window} pages")
    _save(figure, axes, path, "harvest_rate.png", "pages judged", "harvest rate (relevant / judged)", top=1.05)


def _when(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _table(headings: list[str], rows: Sequence[Sequence[object]], empty: str) -> str:
    if not rows:
        return f"<p>{html.escape(empty)}</p>"
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headings)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _share(part: int, whole: int) -> str:
    return format_rate(harvest_rate(part, whole))


def render(data: ReportData, output: Path) -> Path:
    """Write ``index.html`` and its PNG plots into ``output``; returns the page's path."""
    output.mkdir(parents=True, exist_ok=True)
    curve = data.curve
    plots = []
    if curve:
        plot_relevant({data.job: curve, **data.compared}, output / "relevant.png")
        plot_timeline(curve, output / "timeline.png")
        plot_harvest_rate(curve, output / "harvest_rate.png")
        plots = list(PLOTS)
    judged, relevant = (curve[-1][1], curve[-1][2]) if curve else (0, 0)
    fetched = data.fetched
    minutes = (curve[-1][0] - curve[0][0]) / 60 if len(curve) > 1 else 0
    frontier = data.frontier
    summary: list[list[object]] = [
        ["pages fetched", fetched],
        ["relevant pages", f"{relevant} of {judged} judged (harvest rate {_share(relevant, judged)})"],
        ["records stored", data.records],
        ["crawl time", f"{minutes:.1f} minutes" + (f" ({fetched / minutes:.1f} pages/min)" if minutes else "")],
        ["first and last fetch", f"{_when(curve[0][0])} to {_when(curve[-1][0])}" if curve else "none yet"],
        ["frontier", f"{frontier.urls} URLs on {frontier.hosts} hosts: {frontier.marked_ready} marked and due, "
                     f"{frontier.marked_locked} marked and locked, {frontier.done} done"],
    ]
    summary += [
        [f"compared: {name}", f"{c[-1][2]} relevant of {c[-1][1]} judged ({_share(c[-1][2], c[-1][1])})" if c else "no fetches"]
        for name, c in data.compared.items()
    ]
    hosts = [[h.host, h.fetched, h.relevant, h.new_records, h.duplicates, _share(h.relevant, h.judged)]
             for h in data.hosts]
    leading = [[name, f"{weight:+.2f}"] for name, weight in data.features if weight > 0]
    away = [[name, f"{weight:+.2f}"] for name, weight in data.features if weight < 0]
    classes = [[name, count, _share(count, relevant)] for name, count in data.classes]
    figures = "".join(
        f'<figure><img src="{name}" alt="{html.escape(PLOTS[name])}"><figcaption>{html.escape(PLOTS[name])}</figcaption></figure>'
        for name in plots
    ) or "<p>No fetches logged yet: the plots appear once the crawl has fetched pages.</p>"
    title = f"Harvest report: job {data.job}"
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em auto; max-width: 60em; color: #222; }}
table {{ border-collapse: collapse; margin-bottom: 1.5em; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }}
td:nth-child(n+2) {{ font-variant-numeric: tabular-nums; }}
figure {{ margin: 1em 0; }} img {{ max-width: 100%; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<p>Generated {_when(data.generated)}.</p>
<h2>Summary</h2>
{_table(["", ""], summary, "")}
<h2>Plots</h2>
{figures}
<h2>Top hosts</h2>
{_table(["host", "pages fetched", "relevant", "new records", "duplicates", "harvest rate"], hosts,
        "No pages fetched yet.")}
<h2>What the link model learned</h2>
<p>Why the crawl went where it went: the features of a link that weigh most in the online link model
(LinkStrategy = online), learned from what the links led to. A duplicate of a stored record teaches as an
irrelevant page does.</p>
<h3>Leads to new relevant pages</h3>
{_table(["feature", "weight"], leading, "Nothing learned yet (or another LinkStrategy).")}
<h3>Leads elsewhere</h3>
{_table(["feature", "weight"], away, "Nothing learned yet (or another LinkStrategy).")}
<h2>Top classes</h2>
{_table(["class", "relevant pages", "share of relevant pages"], classes, "No relevant page with a class yet.")}
</body></html>
"""
    index = output / "index.html"
    index.write_text(page, encoding="utf-8")
    return index
