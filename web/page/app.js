// kgym's view of a training run. Everything shown comes from the run (programs, messages,
// evidence: written by untrusted policies and candidates) and is put on the page as text
// only (textContent), never as markup; the server's Content-Security-Policy forbids inline
// script besides.
"use strict";

// int64 fields come as strings in protobuf's JSON mapping.
function int(value) {
  return Number(value || 0);
}

const state = { run: null, metrics: [], charts: [], filter: { state: "", task: "", verdict: "" }, open: null,
                listPending: false };

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

// A schema enum's name as people read it: "FEEDBACK_CORRECT_FAST" -> "correct_fast" (the
// prefix given), "CACHED_OUTPUT" -> "cached_output".
function enumText(name, prefix) {
  const text = String(name || "");
  return (prefix && text.startsWith(prefix) ? text.slice(prefix.length) : text).toLowerCase();
}

function num(value, digits) {
  return typeof value === "number" ? value.toFixed(digits) : (0).toFixed(digits);
}

async function getJson(path) {
  const answer = await fetch(path, { credentials: "same-origin" });
  const body = await answer.json();
  if (!answer.ok) throw new Error(body.error || answer.statusText);
  return body;
}

function notice(text) {
  const box = document.getElementById("notice");
  box.hidden = !text;
  box.textContent = text || "";
}

// ---- the run and its charts ------------------------------------------------------------

function showRun(run) {
  state.run = run;
  document.getElementById("run-dir").textContent = run.run_dir || "";
  const facts = document.getElementById("run-state");
  facts.replaceChildren();
  const parts = [["state", run.live ? "training" : "not training (from its files)"],
                 ["iterations", int(run.iterations)], ["policy", "v" + int(run.policy_version)],
                 ["episodes finished", int(run.episodes_finished)], ["running", int(run.episodes_running)]];
  if (run.latest) parts.push(["latest mean reward", num(run.latest.mean_reward, 3)]);
  parts.forEach(([name, value], i) => {
    if (i) facts.append(" · ");
    facts.append(name + " ");
    facts.append(el("b", value));
  });
  fillSelect("filter-task", run.tasks || []);
  fillSelect("filter-verdict", run.verdicts || []);
  if (!state.charts.length && run.panels) makeCharts(run.panels);
}

function fillSelect(id, values) {
  const select = document.getElementById(id);
  const have = new Set(Array.from(select.options).map((o) => o.value));
  values.forEach((v) => { if (!have.has(v)) select.append(new Option(v, v)); });
}

function makeCharts(panels) {
  const box = document.getElementById("charts");
  if (typeof Dygraph === "undefined") {
    notice("Charts need Debian's libjs-dygraphs on the serving machine (/lib/dygraph.min.js did not load).");
    return;
  }
  panels.forEach((panel) => {
    const wrap = el("div", undefined, "chart-wrap");
    wrap.append(el("div", panel.title, "chart-title"));
    const div = el("div", undefined, "chart");
    wrap.append(div);
    box.append(wrap);
    const fields = panel.series.map((s) => s.field);
    const graph = new Dygraph(div, [[0].concat(fields.map(() => null))], {
      labels: ["iteration"].concat(panel.series.map((s) => s.label)), legend: "always", connectSeparatedPoints: true,
      xlabel: "iteration", includeZero: true,
      axes: { x: { axisLabelFormatter: (v) => (Number.isInteger(v) ? String(v) : "") } } });
    state.charts.push({ graph, fields });
  });
  drawCharts();
}

function drawCharts() {
  if (!state.metrics.length) return;
  state.charts.forEach(({ graph, fields }) => {
    const rows = state.metrics.map((m) => [int(m.iteration) + 1].concat(fields.map((f) => m[f] || 0)));
    graph.updateOptions({ file: rows });
  });
}

function addMetrics(series) {
  const since = int(series.since);
  state.metrics = state.metrics.slice(0, since).concat(series.iterations || []);
  drawCharts();
}

// ---- the episode table -------------------------------------------------------------------

function episodeRow(s) {
  const row = el("tr");
  row.dataset.id = s.episode_id;
  const running = s.state === "EPISODE_RUNNING";
  const verdict = s.last_verdict && s.turn ? s.last_verdict : "-";
  // Running: its age now (its age at its last report, plus the time since); finished: its wall time.
  const age = running ? num((s.elapsed_s || 0) + Math.max(0, Date.now() / 1000 - (s.updated_unix_s || Date.now() / 1000)), 0) + " s"
                      : num(s.wall_s, 1) + " s";
  [s.episode_id, s.task_id, int(s.iteration) + 1, running ? "running" : "finished",
   (s.turn || 0) + "/" + (s.turns || 0), running ? (s.stage || "").toLowerCase() : "done"].forEach((v) => row.append(el("td", v)));
  row.append(el("td", verdict, "verdict-" + verdict));
  row.append(el("td", num(s.last_reward, 3), "num"));
  row.append(el("td", s.best_speedup ? num(s.best_speedup, 3) + "x" : "-", "num"));
  row.append(el("td", age, "num"));
  if (!running) row.addEventListener("click", () => openEpisode(s.episode_id));
  return row;
}

async function refreshList() {
  if (state.listPending) return;
  state.listPending = true;
  try {
    const query = new URLSearchParams();
    Object.entries(state.filter).forEach(([k, v]) => { if (v) query.set(k, v); });
    query.set("limit", "200");
    const list = await getJson("/api/episodes?" + query.toString());
    const body = document.querySelector("#episodes tbody");
    body.replaceChildren(...(list.episodes || []).map(episodeRow));
    document.getElementById("episode-count").textContent =
      int(list.matched) + " match, " + int(list.finished_stored) + " finished in all";
  } catch (err) {
    notice("episodes: " + err.message);
  } finally {
    state.listPending = false;
  }
}

// ---- one episode -------------------------------------------------------------------------

function facts(pairs) {
  const dl = el("dl");
  pairs.forEach(([name, value]) => {
    if (value === undefined || value === null || value === "") return;
    dl.append(el("dt", name), el("dd", value));
  });
  return dl;
}

function turnView(turn) {
  const result = turn.result || {};
  const reward = turn.reward || {};
  const box = el("div", undefined, "turn");
  const head = el("div", undefined, "turn-head");
  head.append("turn " + ((turn.index || 0) + 1) + " · ");
  head.append(el("span", result.verdict || "-", "verdict-" + (result.verdict || "none")));
  if (turn.cached) head.append(" · from the evaluation cache");
  box.append(head);
  const body = el("div", undefined, "turn-body");
  const left = el("div");
  left.append(el("div", "answer (the program as the policy wrote it)", "chart-title"), el("pre", turn.response || ""));
  const prompt = el("details");
  prompt.append(el("summary", "prompt (with the earlier turns it carried as context)"), el("pre", turn.prompt || ""));
  left.append(prompt);
  const right = el("div");
  right.append(el("div", "verdict", "chart-title"), facts([
    ["message", result.message], ["speedup", result.speedup ? num(result.speedup, 3) + "x" : ""],
    ["coverage", result.profile && result.profile.coverage !== undefined ? num(result.profile.coverage, 3) : ""],
    ["failed phase", enumText(result.failed_phase, "PHASE_")], ["wall", num(result.wall_s, 2) + " s"], ["executor", result.executor],
    ["feedback shown", enumText(turn.feedback, "FEEDBACK_")], ["policy", "v" + int(turn.policy_version)]]));
  right.append(el("div", "reward", "chart-title"), facts([
    ["total", num(reward.total, 3)], ["correctness", num(reward.correctness, 3)], ["speedup term", num(reward.speedup, 3)],
    ["coverage term", num(reward.coverage, 3)], ["why", reward.reason]]));
  if ((result.evidence || []).length) {
    right.append(el("div", "evidence", "chart-title"));
    const list = el("ul", undefined, "evidence");
    result.evidence.forEach((e) => list.append(el("li", enumText(e.kind) + ": " + (e.detail || "") + " (" + (e.source || "") + ")")));
    right.append(list);
  }
  body.append(left, right);
  box.append(body);
  return box;
}

async function openEpisode(id) {
  try {
    const episode = await getJson("/api/episodes/" + encodeURIComponent(id));
    state.open = id;
    history.replaceState(null, "", "#episode=" + encodeURIComponent(id));  // a link to this episode
    document.getElementById("episode-id").textContent = id;
    const f = document.getElementById("episode-facts");
    f.replaceChildren(facts([["task", episode.task_id], ["iteration", int(episode.iteration) + 1],
                             ["group", episode.group_id], ["wall", num(episode.wall_s, 1) + " s"]]));
    document.getElementById("turns").replaceChildren(...(episode.turns || []).map(turnView));
    const section = document.getElementById("episode-section");
    section.hidden = false;
    section.scrollIntoView();
  } catch (err) {
    notice("episode " + id + ": " + err.message);
  }
}

// ---- start and live updates -----------------------------------------------------------

function listen() {
  const events = new EventSource("/api/events");
  events.addEventListener("run", (e) => showRun(JSON.parse(e.data)));
  events.addEventListener("metrics", (e) => addMetrics(JSON.parse(e.data)));
  events.addEventListener("episodes", () => refreshList());
  events.onerror = () => notice(state.run && state.run.live ? "lost the live stream; retrying" : "");
  events.onopen = () => notice("");
}

async function start() {
  document.getElementById("episode-close").addEventListener("click", () => {
    document.getElementById("episode-section").hidden = true;
    state.open = null;
    history.replaceState(null, "", location.pathname + location.search);
  });
  ["state", "task", "verdict"].forEach((name) => {
    document.getElementById("filter-" + name).addEventListener("change", (e) => {
      state.filter[name] = e.target.value;
      refreshList();
    });
  });
  try {
    showRun(await getJson("/api/run"));
    addMetrics(await getJson("/api/metrics"));
  } catch (err) {
    notice(err.message);
  }
  await refreshList();
  if (location.hash.startsWith("#episode=")) await openEpisode(decodeURIComponent(location.hash.slice(9)));
  listen();
}

document.addEventListener("DOMContentLoaded", start);
