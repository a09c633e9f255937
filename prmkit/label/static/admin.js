// The admin page: read-only figures of one project. Text goes in through textContent only.
"use strict";
const $ = (id) => document.getElementById(id);

async function api(path) {
  const response = await fetch(path);
  if (response.status === 401) { window.location.href = "/login"; throw new Error("not logged in"); }
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

function fmt(value) {
  if (value === null || value === undefined) return "n/a";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

function table(target, columns, rows) {
  const t = document.createElement("table");
  const head = t.insertRow();
  for (const [title] of columns) { const th = document.createElement("th"); th.textContent = title; head.appendChild(th); }
  for (const row of rows) {
    const tr = t.insertRow();
    for (const [, get] of columns) tr.insertCell().textContent = fmt(get(row));
  }
  const el = $(target); el.textContent = ""; el.appendChild(t);
}

async function show(name) {
  const s = await api(`/api/admin/projects/${encodeURIComponent(name)}/stats`);
  table("settings", [["phase", (r) => r.phase], ["overlap", (r) => r.overlap], ["QC every", (r) => r.qc_every],
    ["screening pass", (r) => r.screening_min]], [s.project]);
  table("progress", [["generation", (r) => r.generation], ["kind", (r) => r.kind], ["items", (r) => r.items],
    ["open", (r) => r.open], ["done", (r) => r.done], ["labels", (r) => r.labels],
    ["finish reasons", (r) => r.finish_reasons]], s.progress);
  table("labellers", [["name", (r) => r.name], ["role", (r) => r.role], ["assignments", (r) => r.assignments],
    ["done", (r) => r.done], ["labels", (r) => r.labels], ["time (min)", (r) => (r.time_ms / 60000).toFixed(1)],
    ["QC steps", (r) => r.gold && r.gold.compared], ["QC accuracy", (r) => r.gold && r.gold.accuracy],
    ["QC kappa", (r) => r.gold && r.gold.kappa], ["screening", (r) => r.screening.status]], s.labellers);
  const a = s.agreement;
  table("agreement", [["labellers", (r) => r.labellers.join(" / ")], ["shared steps", (r) => r.units],
    ["Cohen's kappa", (r) => r.kappa]], a.cohen_pairs);
  const p = document.createElement("p");
  p.textContent = `Fleiss' kappa over ${a.units} steps rated by two or more labellers: ${fmt(a.fleiss_kappa)}`;
  $("agreement").prepend(p);
}

async function start() {
  const projects = await api("/api/admin/projects");
  const select = $("project");
  for (const p of projects) {
    const o = document.createElement("option"); o.value = p.name; o.textContent = p.name; select.appendChild(o);
  }
  select.addEventListener("change", () => show(select.value).catch((e) => { $("status").textContent = e.message; }));
  if (projects.length) await show(select.value); else $("status").textContent = "No projects yet.";
  document.body.dataset.ready = "1";
}

start().catch((e) => { $("status").textContent = e.message; });
