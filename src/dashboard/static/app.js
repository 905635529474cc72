// The orb dashboard: one page, no build step. Reads the GCS's /api (the state API's rows)
// with the cluster's token (from ?token= once, then sessionStorage) and keeps a history
// of samples since the page opened for the charts.
"use strict";

const params = new URLSearchParams(location.search);
if (params.get("token")) sessionStorage.setItem("orb-token", params.get("token"));
const token = sessionStorage.getItem("orb-token") || "";
const history = [];  // {t, nodes: {id: {cpu, cpuTotal, store, storeTotal}}, finished, failed, running}
const kHistory = 300;

async function api(path) {
  const response = await fetch("api/" + path, { headers: token ? { Authorization: "Bearer " + token } : {} });
  const text = await response.text();
  if (!response.ok) throw new Error(response.status + ": " + text);
  return JSON.parse(text);
}

function esc(v) {
  return String(v ?? "").replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
const short = id => (id ? esc(id.slice(0, 8)) : "-");
const bytes = n => n >= 1 << 30 ? (n / (1 << 30)).toFixed(2) + " GiB" : n >= 1 << 20 ? (n / (1 << 20)).toFixed(1) + " MiB"
  : n >= 1024 ? (n / 1024).toFixed(1) + " KiB" : n + " B";
const state = s => `<span class="state-${esc(s)}">${esc(s)}</span>`;
const resources = m => esc(Object.entries(m || {}).filter(([k]) => k !== "memory" && !k.includes("_group_"))
  .map(([k, v]) => `${k}: ${+v.toFixed(2)}`).join(", "));

function table(columns, rows, empty) {
  if (!rows.length) return `<p class="muted">${esc(empty)}</p>`;
  const head = columns.map(c => `<th>${esc(c[0])}</th>`).join("");
  const body = rows.map(r => "<tr>" + columns.map(c => `<td${c[2] ? ' class="mono"' : ""}>${c[1](r)}</td>`).join("") + "</tr>").join("");
  return `<table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

function cards(items) {
  return '<div class="cards">' + items.map(([label, value, id]) =>
    `<div class="card" id="${id}"><div class="value">${esc(value)}</div><div class="label">${esc(label)}</div></div>`).join("") + "</div>";
}

// A line chart of `series` ({name: [[t, v], ...]}) as inline SVG.
function chart(title, series, format) {
  const w = 400, h = 120, pad = 4;
  const points = Object.values(series).flat();
  if (!points.length) return `<div class="chart"><h3>${esc(title)}</h3><p class="muted">no samples yet</p></div>`;
  const t0 = Math.min(...points.map(p => p[0])), t1 = Math.max(...points.map(p => p[0]), t0 + 1);
  const vmax = Math.max(...points.map(p => p[1]), 1e-9);
  const colors = ["#2f7de1", "#17a35b", "#d9822b", "#9b51e0", "#c0392b", "#16a2b8"];
  const lines = Object.entries(series).map(([name, pts], i) => {
    const xy = pts.map(([t, v]) => `${(pad + (t - t0) / (t1 - t0) * (w - 2 * pad)).toFixed(1)},${(h - pad - v / vmax * (h - 2 * pad)).toFixed(1)}`);
    return `<polyline fill="none" stroke="${colors[i % colors.length]}" stroke-width="2" points="${xy.join(" ")}"><title>${esc(name)}</title></polyline>`;
  }).join("");
  const legend = Object.keys(series).map((name, i) => `<span style="color:${colors[i % colors.length]}">■ ${esc(name)}</span>`).join(" ");
  return `<div class="chart"><h3>${esc(title)} <span class="muted">(max ${esc(format(vmax))})</span></h3>
    <svg viewBox="0 0 ${w} ${h}" preserveAspectRatio="none">${lines}</svg><div>${legend}</div></div>`;
}

function seriesOf(pick) {
  const out = {};
  for (const s of history) for (const [name, v] of Object.entries(pick(s))) (out[name] = out[name] || []).push([s.t, v]);
  return out;
}

async function sample() {
  const s = await api("summary");
  const nodes = {};
  for (const n of s.nodes) {
    if (n.state !== "ALIVE") continue;
    const total = n.resources_total || {}, free = n.resources_available || {};
    nodes[n.node_id.slice(0, 8)] = {
      cpu: (total.CPU || 0) - (free.CPU || 0), cpuTotal: total.CPU || 0,
      store: n.object_store_used_bytes || 0, storeTotal: n.object_store_bytes || 0,
    };
  }
  history.push({ t: s.time_ms / 1000, nodes, finished: s.tasks.FINISHED || 0, failed: s.tasks.FAILED || 0,
    running: s.tasks.RUNNING || 0 });
  if (history.length > kHistory) history.shift();
  return s;
}

const pages = {
  async overview() {
    const s = await sample();
    const alive = s.nodes.filter(n => n.state === "ALIVE");
    const sum = (key, r) => alive.reduce((a, n) => a + ((n[key] || {})[r] || 0), 0);
    const used = alive.reduce((a, n) => a + (n.object_store_used_bytes || 0), 0);
    const cap = alive.reduce((a, n) => a + (n.object_store_bytes || 0), 0);
    return "<h2>Cluster</h2>" + cards([
      ["nodes alive", alive.length, "nodes-alive"],
      ["CPUs in use", `${+(sum("resources_total", "CPU") - sum("resources_available", "CPU")).toFixed(2)} / ${sum("resources_total", "CPU")}`, "cpus"],
      ["GPUs in use", `${+(sum("resources_total", "GPU") - sum("resources_available", "GPU")).toFixed(2)} / ${sum("resources_total", "GPU")}`, "gpus"],
      ["actors alive", s.actors.ALIVE || 0, "actors-alive"],
      ["tasks running", s.tasks.RUNNING || 0, "tasks-running"],
      ["tasks finished", s.tasks.FINISHED || 0, "tasks-finished"],
      ["tasks failed", s.tasks.FAILED || 0, "tasks-failed"],
      ["jobs running", s.jobs.RUNNING || 0, "jobs-running"],
      ["object store", `${bytes(used)} / ${bytes(cap)}`, "store"],
    ]) + '<div class="charts">' +
      chart("CPU in use, by node", seriesOf(x => Object.fromEntries(Object.entries(x.nodes).map(([k, v]) => [k, v.cpu]))), v => v.toFixed(2)) +
      chart("tasks finished", seriesOf(x => ({ finished: x.finished, failed: x.failed })), v => v.toFixed(0)) + "</div>";
  },
  async nodes() {
    await sample();
    const { rows } = await api("list/nodes");
    return "<h2>Nodes</h2>" + table([
      ["node", r => short(r.node_id), true], ["state", r => state(r.state)], ["address", r => esc(r.ip + ":" + r.raylet_port)],
      ["host", r => esc(r.hostname)], ["resources (free / total)", r => `${resources(r.resources_available)}<br><span class="muted">${resources(r.resources_total)}</span>`],
      ["object store", r => esc(bytes(r.object_store_used_bytes) + " / " + bytes(r.object_store_bytes))],
      ["metrics", r => r.metrics_export_port ? `<a href="http://${esc(r.ip)}:${r.metrics_export_port}/metrics">:${r.metrics_export_port}</a>` : "-"],
      ["death", r => `<span class="error">${esc(r.death_reason)}</span>`],
    ], rows, "no nodes") + '<h2 style="margin-top:20px">Utilisation since this page opened</h2><div class="charts">' +
      chart("CPU in use / CPUs", seriesOf(x => Object.fromEntries(Object.entries(x.nodes).map(([k, v]) => [k, v.cpuTotal ? v.cpu / v.cpuTotal : 0]))), v => (100 * v).toFixed(0) + "%") +
      chart("object store in use", seriesOf(x => Object.fromEntries(Object.entries(x.nodes).map(([k, v]) => [k, v.store]))), bytes) + "</div>";
  },
  async actors() {
    const { rows } = await api("list/actors");
    return "<h2>Actors</h2>" + table([
      ["actor", r => short(r.actor_id), true], ["class", r => esc(r.class_name)], ["state", r => state(r.state)],
      ["name", r => esc(r.name || "-")], ["node", r => short(r.node_id), true], ["address", r => esc(r.address || "-")],
      ["restarts", r => `${r.num_restarts} / ${r.max_restarts < 0 ? "∞" : r.max_restarts}`],
      ["death", r => `<span class="error">${esc(r.death_reason)}</span>`],
    ], rows, "no actors");
  },
  async tasks(query) {
    const filter = query.get("filter") || "";
    const filters = filter.split(",").map(f => f.trim()).filter(Boolean).join("\n");
    const { rows, total } = await api("list/tasks?limit=500&filters=" + encodeURIComponent(filters));
    return `<h2>Tasks</h2><div class="toolbar"><input id="task-filter" placeholder="state=FAILED, name=Square" value="${esc(filter)}">
      <button onclick="location.hash='#/tasks?filter='+encodeURIComponent(document.getElementById('task-filter').value)">Filter</button>
      <span class="muted">${rows.length} of ${total}</span></div>` + table([
      ["task", r => short(r.task_id), true], ["name", r => esc(r.name)], ["state", r => state(r.state)], ["type", r => esc(r.type)],
      ["node", r => short(r.node_id), true], ["worker pid", r => esc(r.worker_pid || "-")],
      ["duration", r => esc(r.duration_ms ? r.duration_ms.toFixed(2) + " ms" : "-")],
      ["error", r => r.error_type ? `<span class="error">${esc(r.error_type + ": " + r.error_message)}</span>` : ""],
    ], rows, "no tasks match");
  },
  async "placement-groups"() {
    const { rows } = await api("list/placement-groups");
    return "<h2>Placement groups</h2>" + table([
      ["group", r => short(r.placement_group_id), true], ["name", r => esc(r.name || "-")], ["strategy", r => esc(r.strategy)],
      ["state", r => state(r.state)],
      ["bundles", r => r.bundles.map(b => `{${resources(b.resources)}} @ ${short(b.node_id)}`).join("<br>")],
    ], rows, "no placement groups");
  },
  async jobs() {
    const { rows } = await api("list/jobs");
    return "<h2>Jobs</h2>" + table([
      ["job", r => esc(r.job_id), true], ["state", r => state(r.state)], ["driver", r => esc(r.driver_ip + " pid " + r.driver_pid)],
      ["namespace", r => esc(r.namespace)], ["started", r => esc(new Date(r.start_time_ms).toLocaleString())],
    ], rows, "no jobs");
  },
  async autoscaler() {
    const { status, node_types: types } = await api("autoscaler");
    if (!status && !types) return "<h2>Autoscaler</h2><p class='muted'>No autoscaler runs on this cluster.</p>";
    const nodes = (status && status.nodes || []).filter(n => n.type);
    const pending = status && status.pending_launches || {};
    const count = (type, st) => nodes.filter(n => n.type === type && n.state === st).length;
    const typeRows = Object.entries(types || {}).map(([name, t]) => ({ name, ...t }));
    let html = `<h2>Autoscaler <span class="muted">${esc(status && status.cluster_name)}</span></h2>`;
    if (status && status.error) html += `<p class="error">${esc(status.error)}</p>`;
    html += "<h3>Node types</h3>" + table([
      ["type", r => esc(r.name), true], ["resources", r => resources(r.resources)],
      ["min / max", r => esc((r.min_workers || 0) + " / " + (r.max_workers || 0))], ["warm pool", r => esc(r.warm_pool || 0)],
      ["running", r => esc(count(r.name, "running"))], ["idle", r => esc(count(r.name, "idle"))],
      ["launching", r => esc(count(r.name, "launching") + (pending[r.name] ? ` (${pending[r.name]} pending)` : ""))],
    ], typeRows, "no node types");
    html += "<h3>Nodes it launched</h3>" + table([
      ["node (pod)", r => esc(r.id), true], ["type", r => esc(r.type)], ["state", r => state(r.state)],
      ["why", r => r.state === "idle" ? esc("idle for " + r.idle_s + " s")
        : r.state === "launching" ? esc((r.provider_state || "pending") + (r.reason ? ": " + r.reason : "")) : ""],
      ["resources (free / total)", r => esc((r.available || "") + " / " + (r.resources || ""))],
    ], nodes, "none now");
    const infeasible = status && status.infeasible || [];
    if (infeasible.length) html += "<h3>Cannot be placed</h3><ul>" + infeasible.map(l => `<li>${esc(l)}</li>`).join("") + "</ul>";
    const decisions = (status && status.decisions || []).slice().reverse();
    html += "<h3>Decisions, newest first</h3>" + table([
      ["when", r => esc(r.ago_s + " s ago")], ["decision", r => esc(r.what)],
    ], decisions, "none yet");
    return html;
  },
  async workers() {
    const { rows } = await api("list/workers");
    return "<h2>Workers</h2>" + table([
      ["worker", r => short(r.worker_id), true], ["node", r => short(r.node_id), true], ["state", r => state(r.state)],
      ["pid", r => esc(r.pid)], ["job", r => esc(r.job_id)], ["lease", r => resources(r.lease_resources)],
      ["log", r => r.log_file ? `<a href="#/logs?node=${esc(r.node_id)}&file=${encodeURIComponent(r.log_file.split("/").pop())}">${esc(r.log_file.split("/").pop())}</a>` : "-"],
    ], rows, "no workers");
  },
  async logs(query) {
    const { rows: nodes } = await api("list/nodes?filters=" + encodeURIComponent("state=ALIVE"));
    const node = query.get("node") || (nodes[0] || {}).node_id;
    const file = query.get("file");
    let html = "<h2>Logs</h2>";
    for (const n of nodes) {
      const { files } = await api("logs/" + n.node_id);
      html += `<h3>node ${short(n.node_id)} <span class="muted">${esc(n.ip)}</span></h3><p>` + files.map(f =>
        `<a href="#/logs?node=${esc(n.node_id)}&file=${encodeURIComponent(f.name)}">${esc(f.name)}</a> <span class="muted">(${bytes(f.size)})</span>`).join(" · ") + "</p>";
    }
    if (node && file) {
      const log = await api(`log?node_id=${encodeURIComponent(node)}&name=${encodeURIComponent(file)}&offset=-65536`);
      html += `<h3 id="log-name">${esc(file)} <span class="muted">on ${short(node)}, last ${bytes(log.data.length)} of ${bytes(log.size)}</span></h3>
        <pre class="log" id="log-text">${esc(log.data)}</pre>`;
    }
    return html;
  },
  async metrics() {
    await sample();
    return "<h2>Metrics since this page opened</h2><div class='charts'>" +
      chart("tasks finished and failed", seriesOf(x => ({ finished: x.finished, failed: x.failed })), v => v.toFixed(0)) +
      chart("tasks running", seriesOf(x => ({ running: x.running })), v => v.toFixed(0)) +
      chart("CPU in use, by node", seriesOf(x => Object.fromEntries(Object.entries(x.nodes).map(([k, v]) => [k, v.cpu]))), v => v.toFixed(2)) +
      chart("object store in use, by node", seriesOf(x => Object.fromEntries(Object.entries(x.nodes).map(([k, v]) => [k, v.store]))), bytes) +
      "</div><p class='muted'>Every daemon's full metrics are on its /metrics endpoint for Prometheus (orb metrics targets).</p>";
  },
};

let rendering = false;
async function render() {
  if (rendering) return;
  rendering = true;
  const [path, search] = (location.hash.slice(2) || "overview").split("?");
  const page = pages[path] ? path : "overview";
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.getAttribute("href") === "#/" + page);
  try {
    const html = await pages[page](new URLSearchParams(search || ""));
    const focused = document.activeElement && document.activeElement.id;
    document.getElementById("content").innerHTML = html;
    if (focused && document.getElementById(focused)) document.getElementById(focused).focus();
    document.getElementById("status").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (e) {
    document.getElementById("content").innerHTML = `<p class="error">Cannot read the cluster: ${esc(e.message)}</p>`;
  } finally {
    rendering = false;
  }
}

window.addEventListener("hashchange", render);
render();
setInterval(() => { if (!(document.activeElement && document.activeElement.tagName === "INPUT")) render(); }, 2000);
