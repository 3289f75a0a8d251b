// The console page: polls the JSON API every two seconds and redraws counters, tables and two SVG plots.
// Nothing is loaded from elsewhere; the plots are drawn here.
"use strict";

const POLL_MS = 2000;
const RECENT_WINDOW = 50;  // pages over which the recent harvest rate is measured
const SVG = "http://www.w3.org/2000/svg";
const COLORS = {overall: "#1f77b4", recent: "#ff7f0e", relevant: "#d62728", all: "#999999"};

function $(id) { return document.getElementById(id); }

function text(id, value) { const node = $(id); if (node) node.textContent = value; }

function percent(fraction) { return fraction === null || fraction === undefined ? "n/a" : Math.round(fraction * 100) + "%"; }

function cell(row, value, className) {
  const td = document.createElement("td");
  if (value instanceof Node) td.appendChild(value); else td.textContent = value;
  if (className) td.className = className;
  row.appendChild(td);
  return td;
}

function link(href, label) {
  const a = document.createElement("a");
  a.href = href;
  a.textContent = label;
  return a;
}

function fill(tableId, rows, render) {
  const body = $(tableId).querySelector("tbody");
  body.replaceChildren();
  for (const row of rows) {
    const tr = document.createElement("tr");
    render(tr, row);
    body.appendChild(tr);
  }
  if (!rows.length) {
    const tr = document.createElement("tr");
    const td = cell(tr, "none yet", "empty");
    td.colSpan = $(tableId).querySelectorAll("th").length;
    body.appendChild(tr);
  }
}

function element(name, attributes, parent) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  if (parent) parent.appendChild(node);
  return node;
}

// A line plot of series [{points: [[x, y], ...], color, label}] with axes from 0, into an SVG of 480 x 260.
function plot(svg, series, xLabel, yLabel, yMax, formatX) {
  svg.replaceChildren();
  const left = 52, right = 470, top = 26, bottom = 220;
  const xs = series.flatMap(s => s.points.map(p => p[0]));
  const xMin = xs.length ? Math.min(...xs) : 0;
  const xMax = Math.max(xMin + 1, ...xs);
  const yTop = Math.max(yMax || 0, 1, ...series.flatMap(s => s.points.map(p => p[1])));
  const x = v => left + (v - xMin) / (xMax - xMin) * (right - left);
  const y = v => bottom - v / yTop * (bottom - top);
  element("rect", {x: left, y: top, width: right - left, height: bottom - top, class: "frame"}, svg);
  for (let i = 0; i <= 4; i++) {
    const value = yTop * i / 4;
    element("line", {x1: left, x2: right, y1: y(value), y2: y(value), class: "grid"}, svg);
    const label = element("text", {x: left - 6, y: y(value) + 4, "text-anchor": "end", class: "tick"}, svg);
    label.textContent = yMax === 1 ? Math.round(value * 100) + "%" : Math.round(value);
    const xValue = xMin + (xMax - xMin) * i / 4;
    const xTick = element("text", {x: x(xValue), y: bottom + 16, "text-anchor": "middle", class: "tick"}, svg);
    xTick.textContent = formatX(xValue);
  }
  element("text", {x: (left + right) / 2, y: 254, "text-anchor": "middle", class: "axis"}, svg).textContent = xLabel;
  element("text", {x: 12, y: (top + bottom) / 2, "text-anchor": "middle", class: "axis",
                   transform: `rotate(-90 12 ${(top + bottom) / 2})`}, svg).textContent = yLabel;
  let legendX = left + 8;
  for (const s of series) {
    if (s.points.length) {
      element("polyline", {points: s.points.map(p => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" "),
                           fill: "none", stroke: s.color, "stroke-width": 2.5, class: "series"}, svg);
    }
    element("rect", {x: legendX, y: 4, width: 10, height: 10, fill: s.color}, svg);
    const label = element("text", {x: legendX + 14, y: 13, class: "legend"}, svg);
    label.textContent = s.label;
    legendX += 14 + 7 * s.label.length + 16;
  }
}

function drawPlots(curve) {
  const start = curve.length ? curve[0][0] : 0;
  const span = curve.length ? curve[curve.length - 1][0] - start : 0;
  const inMinutes = span >= 120;
  const since = v => inMinutes ? ((v - start) / 60).toFixed(1) : Math.round(v - start);
  const overall = curve.map(p => [p[0], p[2] / p[1]]);
  const recent = [];
  for (let i = 0, j = 0; i < curve.length; i++) {
    while (curve[i][1] - curve[j][1] > RECENT_WINDOW) j++;
    const fetched = curve[i][1] - (j < i ? curve[j][1] : 0);
    const relevant = curve[i][2] - (j < i ? curve[j][2] : 0);
    if (fetched > 0) recent.push([curve[i][0], relevant / fetched]);
  }
  plot($("plot-rate"), [
    {points: overall, color: COLORS.overall, label: "overall"},
    {points: recent, color: COLORS.recent, label: `last ${RECENT_WINDOW} pages`},
  ], (inMinutes ? "minutes" : "seconds") + " since the first fetch", "harvest rate", 1, since);
  plot($("plot-relevant"), [
    {points: curve.map(p => [p[1], p[1]]), color: COLORS.all, label: "every page relevant"},
    {points: curve.map(p => [p[1], p[2]]), color: COLORS.relevant, label: "relevant"},
  ], "pages fetched", "relevant pages", 0, v => Math.round(v));
}

function showStatus(status) {
  text("state", status.paused ? "paused" : (status.harvesters.length ? "running" : "no harvester"));
  $("state").className = "value " + (status.paused ? "paused" : (status.harvesters.length ? "running" : "idle"));
  text("per-minute", status.per_minute.toFixed(1));
  text("fetched", status.fetched);
  text("relevant", status.relevant);
  text("harvest-rate", percent(status.harvest_rate));
  text("records", status.records);
  text("frontier-urls", status.frontier.urls);
  text("due", status.frontier.marked_ready);
  text("locked", status.frontier.marked_locked);
  text("done", status.frontier.done);
  drawPlots(status.curve);
  fill("harvesters", status.harvesters, (tr, h) => {
    cell(tr, (h.machine ? h.machine + " " : "") + "pid " + h.pid);
    cell(tr, h.silent ? "silent" : (h.paused ? "paused" : "running"));
    cell(tr, h.pages === undefined ? "" : h.pages);
    cell(tr, (h.fetching || []).map(f => f.url).join("\n") || "-", "urls");
    cell(tr, h.last_fetch ? h.last_fetch.url : "-", "urls");
  });
  fill("recent", status.recent_relevant, (tr, page) => {
    cell(tr, page.record ? link("/record/" + page.record, page.url) : page.url, "urls");
    cell(tr, page.score === null ? "" : Number(page.score).toFixed(1));
    cell(tr, page.class || "");
  });
  fill("errors", status.errors, (tr, error) => { cell(tr, error.kind); cell(tr, error.count); });
  text("updated", new Date(status.time * 1000).toLocaleTimeString());
}

function showHosts(hosts) {
  fill("hosts", hosts, (tr, h) => {
    cell(tr, h.host);
    cell(tr, h.marked);
    cell(tr, h.locked_for > 0 ? h.locked_for.toFixed(0) + " s" : "free");
    cell(tr, h.fetched);
    cell(tr, h.relevant);
  });
}

async function poll() {
  try {
    const [status, hosts] = await Promise.all([fetch("/api/status"), fetch("/api/hosts?limit=30")]);
    if (status.ok) showStatus(await status.json());
    if (hosts.ok) showHosts(await hosts.json());
    const failed = [status, hosts].find((answer) => !answer.ok);
    if (failed) text("updated", `console error: ${failed.url} answered ${failed.status} (scrapy serve's log says why)`);
  } catch (e) {
    text("updated", "console unreachable: " + e);
  }
  setTimeout(poll, POLL_MS);
}

async function act(path, body) {
  const token = $("token").value.trim();
  sessionStorage.setItem("combine-console-token", token);
  const response = await fetch(path, {
    method: "POST",
    headers: {"Authorization": "Bearer " + token, "Content-Type": "application/json"},
    body: JSON.stringify(body || {}),
  });
  const answer = await response.json();
  text("action-result", response.ok ? describe(path, answer) : "refused: " + answer.error);
  $("action-result").className = response.ok ? "ok" : "error";
}

function describe(path, answer) {
  if (path === "/api/seed") {
    const refused = Object.values(answer.refused).reduce((a, b) => a + b, 0);
    return `seeded: ${answer.accepted} accepted (${answer.new} new, ${answer.known} already known), ${refused} refused`;
  }
  if (path === "/api/stop") return answer.stopping.length ? "stopping harvesters " + answer.stopping.join(", ") : "no harvester is running here";
  return answer.paused ? "paused: harvesters finish what they fetch and take no new URL" : "resumed";
}

document.addEventListener("DOMContentLoaded", () => {
  $("token").value = sessionStorage.getItem("combine-console-token") || "";
  $("pause").addEventListener("click", () => act("/api/pause"));
  $("resume").addEventListener("click", () => act("/api/resume"));
  $("stop").addEventListener("click", () => act("/api/stop"));
  $("seed").addEventListener("click", () => act("/api/seed", {urls: $("seed-urls").value.split("\n")}));
  poll();
});
