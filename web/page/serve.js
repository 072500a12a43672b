// kgym serve's page: the queue, the executors and the latest answers, polled once a second,
// and charts of the queue and the answer rate since the page opened (the service keeps no
// history: each browser keeps its own samples, the last hour of them).
// Messages come from candidates' runs: put on the page as text only (textContent).
"use strict";

const MAX_SAMPLES = 3600;
const serveState = { samples: [], charts: null, last: null, opened: Date.now() / 1000 };

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

// int64 fields come as strings in protobuf's JSON mapping.
function int(value) {
  return Number(value || 0);
}

function show(view) {
  const status = view.status || {};
  const scheduler = status.scheduler || {};
  const facts = document.getElementById("serve-state");
  facts.replaceChildren();
  [["queued", int(scheduler.queued)], ["placed", int(scheduler.in_flight)],
   ["requests in flight", int(status.requests_in_flight)], ["answered", int(status.answered)],
   ["refused", int(status.refused)], ["cached results", int(scheduler.cached)],
   ["up", (status.uptime_s || 0).toFixed(0) + " s"]].forEach(([name, value], i) => {
    if (i) facts.append(" · ");
    facts.append(name + " ");
    facts.append(el("b", value));
  });
  document.querySelector("#executors tbody").replaceChildren(...(scheduler.executors || []).map((e) => {
    const row = el("tr");
    row.append(el("td", e.name), el("td", int(e.in_flight), "num"), el("td", e.leaving ? "leaving" : "serving"));
    return row;
  }));
  const now = Date.now() / 1000;
  document.querySelector("#recent tbody").replaceChildren(...(view.recent || []).map((r) => {
    const row = el("tr");
    const verdict = r.verdict || "-";
    row.append(el("td", r.request_id), el("td", r.task_id), el("td", verdict, "verdict-" + verdict),
               el("td", r.speedup ? r.speedup.toFixed(3) + "x" : "-", "num"), el("td", r.executor + (r.from_cache ? " (cache)" : "")),
               el("td", (r.wall_s || 0).toFixed(2) + " s", "num"),
               el("td", Math.max(0, now - (r.answered_unix_s || now)).toFixed(0) + " s ago", "num"), el("td", r.message));
    return row;
  }));
}

// One sample a poll: [seconds since the page opened, queued, placed, requests in flight,
// answers a minute since the previous sample].
function sample(view) {
  const status = view.status || {};
  const scheduler = status.scheduler || {};
  const now = Date.now() / 1000;
  const answered = int(status.answered);
  const last = serveState.last;
  const rate = last && now > last.at ? (60 * Math.max(0, answered - last.answered)) / (now - last.at) : 0;
  serveState.samples.push([now - serveState.opened, int(scheduler.queued), int(scheduler.in_flight),
                           int(status.requests_in_flight), rate]);
  if (serveState.samples.length > MAX_SAMPLES) serveState.samples.shift();
  serveState.last = { at: now, answered };
}

// The page's notice: `text` shown, or hidden when there is none (as the run's page does).
function notice(text) {
  const box = document.getElementById("notice");
  box.hidden = !text;
  box.textContent = text || "";
}

function drawCharts() {
  if (typeof Dygraph === "undefined") {
    notice("Charts need Debian's libjs-dygraphs on the serving machine (/lib/dygraph.min.js did not load).");
    return;
  }
  const queue = serveState.samples.map((s) => [s[0], s[1], s[2], s[3]]);
  const rate = serveState.samples.map((s) => [s[0], s[4]]);
  if (!serveState.charts) {
    const options = { legend: "always", xlabel: "seconds", includeZero: true };
    serveState.charts = {
      queue: new Dygraph(document.getElementById("queue-chart"), queue,
                         { ...options, labels: ["seconds", "queued", "placed", "in flight"] }),
      rate: new Dygraph(document.getElementById("rate-chart"), rate,
                        { ...options, labels: ["seconds", "answers a minute"] }),
    };
    return;
  }
  serveState.charts.queue.updateOptions({ file: queue });
  serveState.charts.rate.updateOptions({ file: rate });
}

async function poll() {
  try {
    const answer = await fetch("/api/serve?limit=100", { credentials: "same-origin" });
    const body = await answer.json();
    if (!answer.ok) throw new Error(body.error || answer.statusText);
    show(body);
    notice("");
    sample(body);
    drawCharts();
  } catch (err) {
    notice("the service does not answer: " + err.message);
  }
  setTimeout(poll, 1000);
}

document.addEventListener("DOMContentLoaded", poll);
