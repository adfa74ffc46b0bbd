// cockroach-play page: shows the view the server computes for this seat, sends moves.
// No rule and no hidden card lives here: legal moves come from the server.
"use strict";

const $ = (sel) => document.querySelector(sel);
const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "html") node.innerHTML = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== null && v !== undefined && v !== false) node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) node.append(c);
  return node;
};
const label = (name) => (name || "").replace(/_/g, " ");
// the number key of the k-th choice: 1 to 9, then 0; later choices (a Royal hand holds up to 16 kinds) are reached with Tab and Enter
const keyOf = (k) => (k < 9 ? String(k + 1) : k === 9 ? "0" : null);

const KEEP_ALIVE_MS = 20_000;

const state = {
  setup: null, lastRequest: null, gameId: null, token: null, view: null,
  art: {}, artLoading: {}, selection: {}, ws: null, retry: 0, endShown: false, closedForGood: false,
};

async function api(method, url, body) {
  const response = await fetch(url, {
    method, headers: body ? { "Content-Type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const detail = typeof data.detail === "string" ? data.detail
      : Array.isArray(data.detail) ? data.detail.map((d) => `${(d.loc || []).join(".")}: ${d.msg}`).join("; ")
      : response.statusText;
    throw new Error(detail);
  }
  return data;
}

function artFor(edition) {
  // one request per edition, however many views wait for it: they then go on in the order they arrived
  if (!state.artLoading[edition]) {
    state.artLoading[edition] = api("GET", `/api/art/${edition}`).then((sheet) => (state.art[edition] = sheet))
      .catch((error) => { delete state.artLoading[edition]; throw error; });
  }
  return state.artLoading[edition];
}

function cardNode(identity, extra = {}) {
  const sheet = state.art[state.view.config.edition];
  return el("div", { class: "card" + (extra.class ? " " + extra.class : ""), "data-card": identity || "",
    html: sheet[identity || "back"], ...Object.fromEntries(Object.entries(extra).filter(([k]) => k !== "class")) });
}

function chip(identity, count) {
  const sheet = state.art[state.view.config.edition];
  return el("span", { class: "chip", "data-card": identity, "data-count": count, title: `${label(identity)}: ${count}` },
    el("span", { class: "mini", html: sheet[identity] }), el("span", { class: "chip-name" }, label(identity)), el("b", {}, String(count)));
}

// ---------------------------------------------------------------- setup
function presetString() {
  const edition = $("#edition").value;
  const variants = [...document.querySelectorAll("#variants input:checked")].map((i) => i.value);
  return [edition, ...variants].join("+");
}

async function refreshRules() {
  const players = Number($("#players").value);
  $("#setup-error").textContent = "";
  let rules;
  try {
    rules = await api("GET", `/api/rules?preset=${encodeURIComponent(presetString())}&num_players=${players}`);
  } catch (error) {
    $("#setup-error").textContent = error.message;
    $("#start").disabled = true;
    return;
  }
  $("#start").disabled = false;
  const c = rules.config;
  $("#rules-note").textContent = `${c.num_players} players, ${c.edition}: ${c.discard} cards removed, ${c.loss_count} of a kind lose` +
    (c.rainbow_loses ? ", a rainbow loses" : "") + (c.opening_cards ? ", one creature to start" : "") + ".";
  const box = $("#seat-choices");
  const previous = [...box.querySelectorAll("select")].map((s) => s.value);
  box.replaceChildren();
  const agents = rules.agents;
  const best = agents.find((a) => a !== "human" && !["random", "honest", "bluffer", "heuristic", "counter"].includes(a)) || "heuristic";
  for (let seat = 0; seat < players; seat++) {
    const select = el("select", { id: `seat-${seat}`, "aria-label": `player_${seat}` },
      ...agents.map((a) => el("option", { value: a }, a === "human" ? "human (you)" : a)));
    const wanted = previous[seat] && agents.includes(previous[seat]) ? previous[seat] : seat === 0 ? "human" : best;
    select.value = wanted;
    box.append(el("label", { class: "seat-choice" }, `player_${seat}`, select));
  }
  if (state.setup.custom_agents)
    box.append(el("label", { class: "seat-choice" }, "your own agent", el("input", { id: "custom-agent", placeholder: "module:Class or checkpoint path", title: 'if set, every non-human seat plays this agent' })));
}

function setupRequest() {
  const seats = [...document.querySelectorAll("#seat-choices select")].map((s) => s.value);
  const custom = $("#custom-agent") ? $("#custom-agent").value.trim() : "";
  if (custom) for (let k = 0; k < seats.length; k++) if (seats[k] !== "human") seats[k] = custom;
  const seed = $("#seed").value === "" ? null : Number($("#seed").value);
  return { preset: presetString(), num_players: Number($("#players").value), seats, seed, pace_ms: Number($("#pace").value) };
}

async function startGame(request) {
  $("#setup-error").textContent = "";
  let created;
  try {
    created = await api("POST", "/api/games", request);
  } catch (error) {
    $("#setup-error").textContent = error.message;
    $("#setup").hidden = false;
    return;
  }
  state.lastRequest = request;
  sessionStorage.setItem("cockroach-setup", JSON.stringify(request));
  const humans = Object.keys(created.tokens);
  state.otherSeats = humans.slice(1).map((agent) => ({ agent, url: `/?game=${created.game_id}&token=${created.tokens[agent]}` }));
  sessionStorage.setItem("cockroach-others", JSON.stringify(state.otherSeats));
  join(created.game_id, created.tokens[humans[0]]);
}

function join(gameId, token) {
  if (state.ws) { state.closedForGood = true; state.ws.close(); }
  state.gameId = gameId; state.token = token; state.view = null; state.selection = {}; state.endShown = false;
  history.replaceState(null, "", `/?game=${gameId}&token=${encodeURIComponent(token)}`);
  $("#setup").hidden = true; $("#game").hidden = false; $("#end").hidden = true;
  api("GET", `/api/games/${gameId}?token=${encodeURIComponent(token)}`).then(show).catch((error) => {
    $("#status").textContent = error.message;
    $("#game").hidden = true; $("#setup").hidden = false;
  });
  connect();
}

function connect() {
  state.closedForGood = false;
  const proto = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${proto}://${location.host}/api/games/${state.gameId}/ws?token=${encodeURIComponent(state.token)}`);
  state.ws = ws;
  ws.onopen = () => { state.retry = 0; $("#status").textContent = "connected"; $("#status").dataset.connected = "1"; };
  // keep-alive: a page that only watches keeps its game from expiring after --idle-minutes (one minute at least)
  const keepAlive = setInterval(() => { if (ws.readyState === WebSocket.OPEN) ws.send("keep-alive"); }, KEEP_ALIVE_MS);
  ws.onmessage = (message) => show(JSON.parse(message.data));
  ws.onclose = (event) => {
    clearInterval(keepAlive);
    $("#status").dataset.connected = "";
    if (state.ws !== ws || state.closedForGood) return;
    // 4400-4499: the server refused the page for good (wrong host or token, no such game, expired, too many pages)
    if (event.code >= 4400 && event.code < 4500) { $("#status").textContent = `game closed: ${event.reason}`; return; }
    $("#status").textContent = "reconnecting...";
    state.retry = Math.min(state.retry + 1, 6);
    setTimeout(() => { if (state.ws === ws) connect(); }, 250 * 2 ** state.retry);
  };
}

// ---------------------------------------------------------------- rendering
async function show(view) {
  await artFor(view.config.edition);
  // from here on nothing waits, so no other view is shown in between: an older one than the page's is dropped
  if (state.view && view.version < state.view.version) return;
  // a view carries the log from view.log_from on; the page keeps the earlier events
  const known = state.view ? state.view.log : [];
  if (view.log_from > known.length) {
    return api("GET", `/api/games/${state.gameId}?token=${encodeURIComponent(state.token)}`).then(show);
  }
  view.log = known.slice(0, view.log_from).concat(view.log);
  view.log_from = 0;
  const turnChanged = !state.view || state.view.version !== view.version;
  state.view = view;
  if (turnChanged) state.selection = {};
  document.body.dataset.version = view.version;
  document.body.dataset.seat = view.seat;
  $("#pace").value = view.pace_ms; paceLabel();
  renderSeats(); renderChain(); renderHand(); renderActions(); renderLog(); renderEnd();
}

function seatPanel(agent, mine) {
  const v = state.view, t = v.table;
  const seatInfo = v.seats.find((s) => s.agent === agent);
  const stats = t.history[agent];
  const chain = t.chain;
  const toAct = t.to_act === agent;
  const lost = t.loser === agent;
  const collection = t.collections[agent];
  const panel = el("div", { class: "seat" + (toAct ? " to-act" : "") + (lost ? " lost" : "") + (mine ? " mine" : ""),
    id: `seat-${agent}`, "data-agent": agent, "data-hand-size": t.hand_sizes[agent], "data-to-act": toAct ? "1" : "" },
    el("div", { class: "seat-head" },
      el("strong", {}, agent + (mine ? " (you)" : "")),
      el("span", { class: "who" }, seatInfo.human ? "human" : seatInfo.label),
      toAct ? el("span", { class: "badge" }, "to act") : "", lost ? el("span", { class: "badge lost" }, "loses") : "",
      chain && chain.seen.includes(agent) ? el("span", { class: "badge seen", title: "has seen the card in play" }, "seen") : ""),
    el("div", { class: "seat-stats" },
      el("span", { class: "hand-count", title: "cards in hand" }, `🂠 ${t.hand_sizes[agent]}`),
      el("span", {}, `true ${stats.truthful_claims} · bluffs ${stats.false_claims}`),
      el("span", {}, `calls ${stats.right_calls}✓ ${stats.wrong_calls}✗`),
      el("span", {}, `peeks ${stats.peeks}`)),
    el("div", { class: "collection" }, ...(Object.keys(collection).length
      ? Object.entries(collection).map(([c, n]) => chip(c, n)) : [el("span", { class: "empty" }, "no cards collected")])));
  return panel;
}

function renderSeats() {
  const v = state.view, players = v.table.players;
  const me = players.indexOf(v.seat);
  const others = players.slice(me + 1).concat(players.slice(0, me));
  $("#opponents").replaceChildren(...others.map((a) => seatPanel(a, false)));
  $("#my-seat").replaceChildren(seatPanel(v.seat, true));
  const links = (state.otherSeats || JSON.parse(sessionStorage.getItem("cockroach-others") || "[]"))
    .filter((s) => s.agent !== v.seat && location.search.includes(state.gameId));
  $("#other-seats").replaceChildren(...(links.length ? [el("span", {}, "Other human seats: "),
    ...links.map((s) => el("a", { href: s.url, target: "_blank" }, `open ${s.agent}'s seat`))] : []));
}

function renderChain() {
  const t = state.view.table, chain = t.chain, box = $("#chain");
  box.dataset.claim = chain ? chain.claim : "";
  box.dataset.holder = chain ? chain.holder : "";
  box.dataset.card = chain && chain.card ? chain.card : "";
  if (!chain) {
    box.replaceChildren(el("div", { class: "no-chain" }, t.loser ? `${t.loser} loses (${label(t.loss_reason)})` : "no card in play"));
  } else {
    box.replaceChildren(
      cardNode(chain.card, { class: "in-play", title: chain.card ? `you have seen it: ${label(chain.card)}` : "face down" }),
      el("div", { class: "chain-text" },
        el("div", { class: "claim" }, `“It's a ${label(chain.claim)}”`),
        el("div", {}, `holder: ${chain.holder}`),
        el("div", {}, `seen by: ${chain.seen.join(", ")}`),
        el("ol", { class: "claims" }, ...chain.claims.map((c) => el("li", {}, `${c.player}: ${label(c.claim)}`))),
        chain.card ? el("div", { class: "you-saw" }, `You know it is a ${label(chain.card)}`) : ""));
  }
  if (t.edition === "royal") box.append(el("div", { class: "penalty" }, `penalty deck ${t.penalty_size}, face up: ${label(t.penalty_top) || "-"}`));
  const turn = $("#turn");
  turn.dataset.toAct = t.to_act || "";
  const seat = state.view.seats.find((s) => s.agent === t.to_act);
  turn.textContent = t.to_act === null ? "game over" : t.to_act === state.view.seat ? "Your turn" : `${t.to_act} (${seat.human ? "human" : seat.label}) is to act…`;
}

function renderHand() {
  const v = state.view, hand = v.table.hand || {};
  const legal = v.legal;
  const pickable = legal && legal.offer ? legal.offer.cards : legal && legal.place ? legal.place.cards : [];
  const entries = Object.entries(hand);
  $("#hand").replaceChildren(...(entries.length ? entries.map(([c, n], k) => {
    const can = pickable.includes(c);
    const key = can ? keyOf(k) : null;
    const node = cardNode(c, { class: (can ? "pickable" : "") + (state.selection.card === c ? " selected" : ""),
      "data-count": n, tabindex: can ? "0" : null, role: can ? "button" : null,
      "aria-label": `${label(c)}, ${n} in hand` + (key ? `, key ${key}` : "") });
    node.append(el("span", { class: "count" }, `×${n}`));
    if (key) node.append(el("span", { class: "key" }, key));
    if (can) node.addEventListener("click", () => pickCard(c));
    if (can) node.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); e.stopPropagation(); pickCard(c); } });
    return node;
  }) : [el("div", { class: "empty" }, "your hand is empty")]));
}

function pickCard(card) {
  const legal = state.view.legal;
  if (legal && legal.place) return sendMove({ kind: "place", card });
  state.selection.card = card;
  renderHand(); renderActions();
}

function steps() {
  // the choices still open for this move, in order
  const legal = state.view.legal;
  if (!legal) return [];
  if (legal.offer) return ["card", "target", "claim"];
  if (legal.pass) return ["target", "claim"];
  return [];
}

function activeStep() { return steps().find((s) => !state.selection[s]); }

function optionButtons(kind, values, labelOf) {
  const active = activeStep() === kind;
  return el("div", { class: "options" + (active ? " active" : ""), "data-step": kind },
    ...values.map((value, k) => el("button", { type: "button", class: state.selection[kind] === value ? "selected" : "",
      "data-value": value, onclick: () => { state.selection[kind] = value; renderActions(); } },
      active && keyOf(k) ? el("kbd", {}, keyOf(k)) : "", labelOf(value))));
}

function claimLabel(c) {
  const sheet = state.art[state.view.config.edition];
  const node = el("span", { class: "claim-option" });
  if (sheet[c]) node.append(el("span", { class: "mini", html: sheet[c] }));
  node.append(label(c));
  return node;
}

function renderActions() {
  const v = state.view, legal = v.legal, box = $("#actions");
  $("#move-error").textContent = "";
  if (v.over) { box.replaceChildren(el("p", {}, "The game is over."), el("button", { type: "button", onclick: newGame }, "New game (N)")); return; }
  if (v.error) { box.replaceChildren(el("p", { class: "error" }, v.error), el("button", { type: "button", onclick: newGame }, "New game")); return; }
  if (!legal) { box.replaceChildren(el("p", { class: "waiting" }, "Waiting for the other players…")); return; }
  const s = state.selection;
  if (legal.call) {
    box.replaceChildren(el("p", {}, `${v.table.chain.latest_passer} says it's a ${label(v.table.chain.claim)}. Your answer:`),
      el("div", { class: "options active" },
        el("button", { type: "button", id: "call-true", onclick: () => sendMove({ kind: "call", believe: true }) }, el("kbd", {}, "T"), "True"),
        el("button", { type: "button", id: "call-false", onclick: () => sendMove({ kind: "call", believe: false }) }, el("kbd", {}, "F"), "False"),
        legal.peek ? el("button", { type: "button", id: "peek", onclick: () => sendMove({ kind: "peek" }) }, el("kbd", {}, "P"), "Peek and pass on") : ""));
    return;
  }
  if (legal.place) { box.replaceChildren(el("p", {}, "Place a card from your hand into your collection (click it or press its number).")); return; }
  const targets = legal.offer ? legal.offer.targets : legal.pass.targets;
  const kind = legal.offer ? "offer" : "pass";
  const ready = steps().every((k) => s[k]);
  const submit = el("button", { type: "button", id: "submit-move", class: "primary", disabled: !ready,
    onclick: () => sendMove(kind === "offer" ? { kind, card: s.card, target: s.target, claim: s.claim } : { kind, target: s.target, claim: s.claim }) },
    kind === "offer" ? "Offer" : "Pass", el("kbd", {}, "Enter"));
  box.replaceChildren(
    el("p", {}, kind === "offer" ? (s.card ? `Offer your ${label(s.card)}` : "Pick a card from your hand") : "Pass the card on (you have peeked at it)"),
    el("div", { class: "step-label" }, "to"), optionButtons("target", targets, (t) => t),
    el("div", { class: "step-label" }, "claiming"), optionButtons("claim", legal.claims, claimLabel),
    el("div", { class: "row" }, submit, el("button", { type: "button", onclick: () => { state.selection = {}; renderHand(); renderActions(); } }, el("kbd", {}, "Esc"), "Clear")));
}

function renderLog() {
  const log = state.view.log, list = $("#log");
  list.replaceChildren(...log.map((entry) => el("li", { class: `ev-${entry.type}` }, entry.text)));
  list.scrollTop = list.scrollHeight;
}

function renderEnd() {
  const v = state.view;
  if (!v.over || !v.reveal) { $("#end").hidden = true; return; }
  if (state.endShown) return;
  state.endShown = true;
  const r = v.reveal;
  $("#end-title").textContent = r.loser ? `${r.loser}${r.loser === v.seat ? " (you)" : ""} loses: ${label(r.loss_reason)}` : "the game stopped without a loser";
  const summaryRows = Object.entries(r.summary).map(([agent, s]) => el("tr", {},
    el("th", {}, agent + (agent === v.seat ? " (you)" : "")), el("td", {}, String(s.true_claims)), el("td", {}, String(s.bluffs)),
    el("td", {}, String(s.right_calls)), el("td", {}, String(s.wrong_calls)), el("td", {}, String(s.peeks)), el("td", {}, String(s.cards_collected))));
  const dealt = Object.entries(r.deal.hands).map(([agent, hand]) => el("li", {}, el("b", {}, agent + ": "),
    Object.entries(hand).map(([c, n]) => `${label(c)} ${n}`).join(", ")));
  const claims = r.claims.map((c) => el("li", { class: c.true ? "truth" : "bluff" },
    `${c.player} → ${c.target}: “${label(c.claim)}” — it was a ${label(c.card)} `, el("b", {}, c.true ? "✓ true" : "✗ bluff")));
  $("#end-body").replaceChildren(
    el("table", { class: "summary" }, el("tr", {}, ...["", "true claims", "bluffs", "right calls", "wrong calls", "peeks", "cards taken"].map((h) => el("th", {}, h))), ...summaryRows),
    el("details", { open: true }, el("summary", {}, "Every claim, revealed"), el("ol", { class: "reveal-claims" }, ...claims)),
    el("details", {}, el("summary", {}, "Hands as dealt"), el("ul", {}, ...dealt)));
  const q = `?token=${encodeURIComponent(state.token)}`;
  $("#download-replay").href = `/api/games/${state.gameId}/replay${q}`;
  $("#download-record").href = `/api/games/${state.gameId}/record${q}`;
  $("#end").hidden = false;
}

// ---------------------------------------------------------------- moves
async function sendMove(move) {
  try {
    const logFrom = state.view ? state.view.log.length : 0;
    // the version of the table the move was chosen on: a second click or key press is refused, not played on a newer table
    const version = state.view ? state.view.version : undefined;
    const view = await api("POST", `/api/games/${state.gameId}/move`, { token: state.token, log_from: logFrom, version, ...move });
    state.selection = {};
    show(view);
  } catch (error) {
    $("#move-error").textContent = error.message;
  }
}

function paceLabel() {
  const ms = Number($("#pace").value);
  $("#pace-value").textContent = ms === 0 ? "instant" : `${(ms / 1000).toFixed(1)} s`;
}

async function newGame() {
  const request = state.lastRequest || JSON.parse(sessionStorage.getItem("cockroach-setup") || "null");
  if (!request) { $("#setup").hidden = false; return; }
  await startGame({ ...request, seed: null, pace_ms: Number($("#pace").value) });
}

document.addEventListener("keydown", (e) => {
  if (e.target.matches("input, select, textarea") || e.ctrlKey || e.metaKey || e.altKey) return;
  const v = state.view;
  if (!v) return;
  const key = e.key.toLowerCase();
  if (key === "n" && v.over) { newGame(); return; }
  if (key === "escape") { if (!$("#end").hidden) { $("#end").hidden = true; return; } state.selection = {}; renderHand(); renderActions(); return; }
  const legal = v.legal;
  if (!legal) return;
  if (legal.call) {
    if (key === "t") sendMove({ kind: "call", believe: true });
    else if (key === "f") sendMove({ kind: "call", believe: false });
    else if (key === "p" && legal.peek) sendMove({ kind: "peek" });
    return;
  }
  const digit = /^[0-9]$/.test(key) ? (key === "0" ? 9 : Number(key) - 1) : null;
  if (digit !== null) {
    const step = legal.place ? "card" : activeStep();
    if (step === "card") {
      const cards = Object.keys(v.table.hand || {});
      const allowed = legal.place ? legal.place.cards : legal.offer.cards;
      if (cards[digit] && allowed.includes(cards[digit])) pickCard(cards[digit]);
    } else if (step) {
      const values = step === "target" ? (legal.offer ? legal.offer.targets : legal.pass.targets) : legal.claims;
      if (values[digit]) { state.selection[step] = values[digit]; renderActions(); }
    }
    e.preventDefault();
    return;
  }
  if (key === "enter" && steps().length && steps().every((k) => state.selection[k])) {
    e.preventDefault();
    $("#submit-move").click();
  }
});

$("#pace").addEventListener("input", paceLabel);
$("#pace").addEventListener("change", async () => {
  if (!state.gameId) return;
  try { await api("POST", `/api/games/${state.gameId}/pace`, { token: state.token, pace_ms: Number($("#pace").value) }); }
  catch (error) { $("#status").textContent = error.message; }
});
$("#new-game").addEventListener("click", newGame);
$("#again").addEventListener("click", newGame);
$("#close-end").addEventListener("click", () => { $("#end").hidden = true; });
$("#show-setup").addEventListener("click", () => { $("#setup").hidden = !$("#setup").hidden; });
$("#setup-form").addEventListener("submit", (e) => { e.preventDefault(); startGame(setupRequest()); });
for (const id of ["#edition", "#players"]) $(id).addEventListener("change", refreshRules);
$("#variants").addEventListener("change", refreshRules);

(async function init() {
  state.setup = await api("GET", "/api/setup");
  await refreshRules();
  const params = new URLSearchParams(location.search);
  if (params.get("game") && params.get("token")) join(params.get("game"), params.get("token"));
  else $("#setup").hidden = false;
})();
