// The labelling page. All text from the server goes through prmkitRender.renderText or textContent.
"use strict";
const state = { project: null, view: null, focus: 0, flag: false, shownAt: performance.now(), busy: false };
const $ = (id) => document.getElementById(id);
const LABELS = { "1": "Great", "0": "Okay", "-1": "Bad" };

async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) { init.headers["Content-Type"] = "application/json"; init.body = JSON.stringify(body); }
  const response = await fetch(path, init);
  if (response.status === 401) { window.location.href = "/login"; throw new Error("not logged in"); }
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.error || (data.detail && JSON.stringify(data.detail)) || response.statusText);
  return data;
}

function say(text, error) { $("status").textContent = text; $("status").className = error ? "error" : ""; }
function elapsed() { const ms = Math.round(performance.now() - state.shownAt); state.shownAt = performance.now(); return ms; }

function button(text, onClick, cls) {
  const b = document.createElement("button");
  b.type = "button"; b.textContent = text; if (cls) b.className = cls;
  b.addEventListener("click", onClick); return b;
}

function renderCompletion(step, c, current) {
  const div = document.createElement("div");
  div.className = "alt" + (c.chosen ? " chosen" : "") + (current && c.index === state.focus ? " focus" : "");
  div.dataset.completion = c.index;
  const text = document.createElement("div");
  text.className = "text";
  prmkitRender.renderText(text, c.text);
  div.appendChild(text);
  const row = document.createElement("div");
  row.className = "rating";
  if (c.rating !== null) {
    const span = document.createElement("span");
    span.className = "r" + c.rating; span.textContent = LABELS[c.rating] + (c.flagged ? " (unsure)" : "");
    row.appendChild(span);
  }
  if (current) {
    for (const r of [1, 0, -1]) row.appendChild(button(LABELS[r], () => rate(step.index, c.index, r)));
    if (state.view.phase === 1 && c.rating !== null && c.rating !== -1)
      row.appendChild(button("Continue with this", () => choose(step.index, c.index)));
  }
  div.appendChild(row);
  return div;
}

function renderStep(step) {
  const li = document.createElement("li");
  const current = state.view.frontier === step.index;
  li.className = "step" + (current ? " current" : "");
  const head = document.createElement("div");
  head.textContent = "Step " + (step.index + 1) + (current && state.flag ? " (will be flagged unsure)" : "");
  li.appendChild(head);
  for (const c of step.completions) li.appendChild(renderCompletion(step, c, current));
  if (step.human) {
    const own = document.createElement("div");
    own.className = "alt chosen text";
    prmkitRender.renderText(own, "Your step: " + step.human.text);
    li.appendChild(own);
  }
  return li;
}

function render() {
  const v = state.view;
  $("task").hidden = !v;
  if (!v) return;
  $("screening").hidden = !v.screening;
  prmkitRender.renderText($("problem"), v.problem);
  prmkitRender.renderText($("guess"), v.current_guess == null ? "(none)" : v.current_guess);
  const steps = $("steps");
  steps.textContent = "";
  for (const step of v.steps) steps.appendChild(renderStep(step));
  $("own").hidden = !(v.phase === 1 && v.status === "open" && state.writing);
  $("write-own").hidden = !(v.phase === 1 && v.status === "open");
  $("done").hidden = v.status !== "done";
  $("done").textContent = v.status === "done" ? "Finished: " + v.finish_reason + ". Press N for the next solution." : "";
  const current = steps.querySelector(".step.current");
  if (current) current.scrollIntoView({ block: "nearest" });
}

async function act(fn) {
  if (state.busy) return;
  state.busy = true;
  try {
    const before = state.view && state.view.frontier;
    state.view = await fn(); state.flag = false;
    if (state.view.frontier !== before) state.focus = 0;  // a new step: start at its first alternative
    say(""); render();
  }
  catch (e) { say(e.message, true); }
  finally { state.busy = false; }
}

function rate(step, completion, rating) {
  return act(() => api("POST", `/api/assignments/${state.view.assignment}/labels`,
    { step, completion, rating, flagged: state.flag, time_ms: elapsed() }));
}

function choose(step, completion) {
  return act(() => api("POST", `/api/assignments/${state.view.assignment}/choose`,
    { step, completion, time_ms: elapsed() }));
}

function chooseOwn() {
  const text = $("own-text").value;
  state.writing = false;
  return act(() => api("POST", `/api/assignments/${state.view.assignment}/choose`,
    { step: state.view.frontier, text, time_ms: elapsed() }));
}

function finish(reason) {
  if (!state.view || state.view.status !== "open") return;
  return act(() => api("POST", `/api/assignments/${state.view.assignment}/finish`, { reason, time_ms: elapsed() }));
}

async function next() {
  if (!state.project || state.busy) return;
  state.busy = true;
  try {
    const data = await api("POST", `/api/projects/${encodeURIComponent(state.project)}/next`, {});
    state.view = data.assignment; state.focus = 0; state.flag = false; state.shownAt = performance.now();
    say(state.view ? "" : "Nothing left to label in this project. Thank you!");
    render();
  } catch (e) { say(e.message, true); state.view = null; render(); }
  finally { state.busy = false; }
}

function currentStep() {
  const v = state.view;
  return v && v.status === "open" && v.frontier !== null ? v.steps[v.frontier] : null;
}

function onKey(event) {
  if (event.target.tagName === "TEXTAREA") {
    if (event.key === "Enter" && event.ctrlKey) { event.preventDefault(); chooseOwn(); }
    if (event.key === "Escape") { state.writing = false; render(); }
    return;
  }
  if (event.target.tagName === "INPUT" || event.target.tagName === "SELECT" || event.altKey || event.metaKey) return;
  const step = currentStep(), key = event.key;
  const ratings = { "1": 1, "2": 0, "3": -1 };
  if (key in ratings && step) rate(step.index, state.focus, ratings[key]);
  else if ((key === "f" || key === "F") && step && !event.shiftKey) { state.flag = !state.flag; render(); }
  else if ((key === "ArrowDown" || key === "j") && step) { state.focus = Math.min(state.focus + 1, step.completions.length - 1); render(); }
  else if ((key === "ArrowUp" || key === "k") && step) { state.focus = Math.max(state.focus - 1, 0); render(); }
  else if (key === "Enter" && step && state.view.phase === 1) choose(step.index, state.focus);
  else if (key === "w" && step && state.view.phase === 1) { state.writing = true; render(); $("own-text").focus(); }
  else if (key === "n" || key === "N") { if (!state.view || state.view.status === "done") next(); }
  else if (key === "G" && event.shiftKey) finish("give_up");
  else if (key === "P" && event.shiftKey) finish("bad_problem");
  else return;
  event.preventDefault();
}

async function start() {
  const me = await api("GET", "/api/me");
  $("me").textContent = me.name + " (" + me.role + ")";
  $("admin-link").hidden = me.role !== "admin";
  const projects = await api("GET", "/api/projects");
  const select = $("project");
  for (const p of projects) {
    const option = document.createElement("option");
    option.value = p.name; option.textContent = p.name + " (phase " + p.phase + ")";
    select.appendChild(option);
  }
  const wanted = new URLSearchParams(location.search).get("project");
  if (wanted && projects.some((p) => p.name === wanted)) select.value = wanted;
  state.project = select.value || null;
  select.addEventListener("change", () => { state.project = select.value; select.blur(); next(); });
  $("logout").addEventListener("click", async () => { await api("POST", "/api/logout", {}); location.href = "/login"; });
  $("give-up").addEventListener("click", () => finish("give_up"));
  $("bad-problem").addEventListener("click", () => finish("bad_problem"));
  $("next").addEventListener("click", next);
  $("own-submit").addEventListener("click", chooseOwn);
  $("write-own").addEventListener("click", () => { state.writing = true; render(); $("own-text").focus(); });
  document.addEventListener("keydown", onKey);
  if (!state.project) { say("No projects yet."); return; }
  await next();
  document.body.dataset.ready = "1";
}

start().catch((e) => say(e.message, true));
