// Builds the dialogue and state pages from window.SITE_DATA (set by the page's data script).
// Text is always set with textContent: dialogues hold model output, which must never become markup.
"use strict";

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined) continue;
    if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

function fmt(x, digits) {
  return x === null || x === undefined ? "—" : Number(x).toFixed(digits === undefined ? 3 : digits);
}

function options(select, values, all) {
  select.append(el("option", { value: "", text: all }));
  for (const v of values) select.append(el("option", { value: String(v), text: String(v) }));
}

function turnsOf(turns) {
  const box = el("div", { class: "turns" });
  for (const t of turns) {
    const turn = el("div", { class: "turn " + t.role }, el("span", { class: "role", text: t.role }));
    turn.append(document.createTextNode(t.text));
    if (t.page) {
      turn.append(el("a", { href: t.page }, el("img", { src: t.page, alt: "the page of this turn" })));
      turn.append(el("div", { class: "similarity", text: "similarity to the target: " + fmt(t.similarity) }));
    }
    box.append(turn);
  }
  return box;
}

// ---- dialogues page ----------------------------------------------------------------------------

const PAGE = 50;

// What a dialogue shows follows from what its task carries: hidden facts and tests (a backend task),
// or a target page (a design task).
function dialogueBody(ep, task) {
  const body = el("div", {});
  body.append(el("p", { text: task.request }));
  if (task.facts) {
    const told = new Set(ep.told || []);
    const facts = el("ul", { class: "facts" });
    task.facts.forEach((f, i) => facts.append(el("li", { class: told.has(i) ? "told" : "untold",
      text: (told.has(i) ? "✓ asked for and told: " : "✗ never told: ") + f.fact })));
    body.append(el("h4", { text: "Hidden facts" }), facts);
    if (ep.diagnosis) body.append(el("p", { class: "bad", text: "failed: " + ep.diagnosis.replace("_", " ") }));
  } else {
    const row = el("div", { class: "pages-row" });
    row.append(el("figure", {}, el("img", { src: task.target, alt: "target" }), el("figcaption", { text: "target" })));
    if (ep.final_page) {
      row.append(el("figure", {}, el("img", { src: ep.final_page, alt: "final page" }),
        el("figcaption", { text: "final page, similarity " + fmt(ep.final_similarity) })));
    } else {
      row.append(el("p", { class: "bad", text: "The final answer shows no page." }));
    }
    body.append(row);
  }
  body.append(el("h4", { text: "Dialogue" }), turnsOf(ep.turns));
  body.append(el("h4", { text: "Answer" }), el("pre", { text: ep.answer }));
  if (task.tests) {
    const table = el("table", { class: "tests" });
    table.append(el("tr", {}, el("th", { text: "test" }), el("th", { text: "expected" }),
      el("th", { text: "actual" }), el("th", { text: "" })));
    task.tests.forEach(([call, expected], i) => {
      const out = ep.outputs ? ep.outputs[i] : undefined;
      const passed = ep.passed ? ep.passed[i] : undefined;
      table.append(el("tr", {}, el("td", {}, el("code", { text: call })), el("td", { text: expected === null ? "—" : expected }),
        el("td", { text: out === undefined ? "not recorded" : out === null ? "(raised)" : out }),
        el("td", { class: passed ? "ok" : "bad", text: passed === undefined ? "" : passed ? "pass" : "fail" })));
    });
    body.append(el("h4", { text: "Tests" }), table);
  }
  return body;
}

function dialoguesPage(data) {
  const form = document.getElementById("filters");
  const list = document.getElementById("dialogues");
  const more = document.getElementById("more");
  const count = document.getElementById("count");
  const familyOf = (ep) => data.tasks[ep.task].family;
  const distinct = (f) => [...new Set(data.episodes.map(f).filter((v) => v !== null && v !== undefined))].sort();
  options(form.method, data.methods, "every method");
  options(form.seed, distinct((e) => e.seed), "every seed");
  options(form.outcome, distinct((e) => e.outcome), "every outcome");
  options(form.family, distinct(familyOf), "every family");
  let matches = [];
  let shown = 0;

  function card(ep) {
    const summary = el("summary", {},
      el("strong", { text: ep.method }), document.createTextNode(
        `  seed ${ep.seed === null ? "—" : ep.seed} · ${ep.task} · ${familyOf(ep)} · ${ep.outcome} · reward ${fmt(ep.reward)}`));
    const box = el("details", { class: "dialogue", "data-method": ep.method, "data-outcome": ep.outcome,
      "data-family": familyOf(ep) }, summary);
    // Built when opened: thousands of dialogues stay cheap until read.
    box.addEventListener("toggle", () => {
      if (box.open && box.children.length === 1) box.append(dialogueBody(ep, data.tasks[ep.task]));
    });
    return box;
  }

  function showMore() {
    for (const ep of matches.slice(shown, shown + PAGE)) list.append(card(ep));
    shown = Math.min(matches.length, shown + PAGE);
    more.hidden = shown >= matches.length;
    count.textContent = `${matches.length} of ${data.episodes.length} dialogues match; ${shown} shown.`;
  }

  function apply() {
    const f = Object.fromEntries(new FormData(form));
    matches = data.episodes.filter((e) => (!f.method || e.method === f.method)
      && (!f.seed || String(e.seed) === f.seed) && (!f.outcome || e.outcome === f.outcome)
      && (!f.family || familyOf(e) === f.family) && (!f.task || e.task.includes(f.task)));
    list.replaceChildren();
    shown = 0;
    showMore();
  }

  form.addEventListener("input", apply);
  more.addEventListener("click", showMore);
  if (data.frontend_limit) {
    form.after(el("p", { text: `The first ${data.frontend_limit} design dialogues of each method's first seed are shown, each page rendered.` }));
  }
  apply();
}

// ---- SWEET-RL states page ----------------------------------------------------------------------

function stateCard(s, critics) {
  const box = el("details", { class: "state", "data-state": s.state, "data-checked": Object.keys(s.played_out).length > 0 },
    el("summary", {}, el("strong", { text: s.state }), document.createTextNode(`  turn ${s.turn} · ${s.family}`)));
  box.append(el("p", { text: s.request }));
  if (s.facts.length) {
    const facts = el("ul", {});
    for (const f of s.facts) facts.append(el("li", { text: f }));
    box.append(el("h4", { text: "Hidden facts (what the critic with training-time information also reads)" }), facts);
  }
  box.append(el("h4", { text: "The dialogue so far" }),
    s.dialogue.length ? turnsOf(s.dialogue) : el("p", { text: "(the first turn: nothing said yet)" }));
  const chosen = new Set(critics.flatMap((c) => (s.pairs[c] || []).map(([a]) => a)));
  const table = el("table", { class: "candidates" });
  const head = el("tr", {}, el("th", { text: "#" }), el("th", { text: "candidate action" }), el("th", { text: "label" }));
  for (const c of critics) head.append(el("th", { text: "score: " + c }));
  for (const c of critics) head.append(el("th", { text: "pairs: " + c }));
  table.append(head);
  for (const cand of s.candidates) {
    const row = el("tr", { class: chosen.has(cand.index) ? "chosen" : null }, el("td", { text: String(cand.index) }),
      el("td", { class: "message", text: cand.message }),
      el("td", { class: cand.good === null ? "" : cand.good ? "ok" : "bad",
        text: cand.kind === null ? "—" : `${cand.good ? "good" : "bad"} (${cand.kind.replaceAll("_", " ")})` }));
    for (const c of critics) row.append(el("td", { text: fmt(s.scores[c][String(cand.index)]) }));
    for (const c of critics) {
      const roles = (s.pairs[c] || []).flatMap(([a, b]) => (a === cand.index ? ["≻ " + b] : b === cand.index ? ["≺ " + a] : []));
      row.append(el("td", { text: roles.join(", ") }));
    }
    table.append(row);
  }
  box.append(el("h4", { text: `The ${s.candidates.length} candidates` }), table);
  const played = Object.entries(s.played_out);
  if (played.length) {
    const list = el("ul", { class: "played-out" });
    for (const [c, p] of played) {
      list.append(el("li", { text: `${c}: its best, #${p.best}, played out to reward ${fmt(p.best_reward)}; `
        + `its worst, #${p.worst}, to ${fmt(p.worst_reward)}` }));
    }
    box.append(el("h4", { text: "Played out (critic check)" }), list);
  }
  return box;
}

function statesPage(data) {
  const form = document.getElementById("state-filters");
  const list = document.getElementById("states");
  options(form.state, data.states.map((s) => s.state), `every shown state (${data.states.length} of ${data.total_states})`);
  function apply() {
    const only = form.checked.checked;
    const pick = form.state.value;
    list.replaceChildren();
    for (const s of data.states) {
      if (pick && s.state !== pick) continue;
      if (only && !Object.keys(s.played_out).length) continue;
      list.append(stateCard(s, data.critics));
    }
    const first = list.querySelector("details");
    if (first) first.open = true;
  }
  form.addEventListener("input", apply);
  apply();
}

if (document.getElementById("dialogues")) dialoguesPage(window.SITE_DATA);
if (document.getElementById("states")) statesPage(window.SITE_DATA);
