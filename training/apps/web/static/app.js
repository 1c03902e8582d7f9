// Love Letter web app: three pages (Play, Replays, Leaderboard) drawn from the server's JSON.
// The server decides everything about the game; this file only draws it and sends clicks.
"use strict";

const state = { meta: null, cardRules: "classic", game: null, chosenCard: null, chosenTarget: null, busy: false, replay: null, source: null, frame: 0 };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function showError(message) {
  const box = document.getElementById("error");
  box.textContent = message;
  box.hidden = !message;
}

async function api(path, options) {
  const response = await fetch(path, options);
  const body = await response.json().catch(() => ({ error: `answer ${response.status} is not JSON` }));
  if (!response.ok) {
    const error = new Error(body.error || `request failed (${response.status})`);
    error.game = body.game;  // the game as the failure left it (a bot that failed stops its game)
    throw error;
  }
  return body;
}

function postJSON(path, body) {
  return api(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
}

// Cards -----------------------------------------------------------------------------------

// A card as the rules on show (the game's, the replay's) have it: a rule option changes what a card does.
function cardInfo(value) {
  const cards = state.meta.cards_by_rules[state.cardRules] || state.meta.cards;
  return cards.find((c) => c.value === value);
}

function cardNode(value, opts = {}) {
  if (!value) return el("div", { class: "card back" + (opts.small ? " small" : "") }, opts.small ? "?" : "");
  const info = cardInfo(value);
  if (opts.small) {
    return el("div", { class: `card small v${value}`, title: `${info.name}: ${info.effect}`, dataset: { card: value } },
      el("span", { class: "value" }, value), el("span", { class: "cname" }, info.name));
  }
  return el("div", { class: `card v${value}`, dataset: { card: value }, title: info.effect },
    el("span", { class: "value" }, value), el("span", { class: "cname" }, info.name),
    el("span", { class: "effect" }, info.effect));
}

function cardName(value) {
  return value ? cardInfo(value).name : "?";
}

// "1 card", "2 cards".
function plural(count, noun) {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

// The cards as the rules preset deals them: on a ladder rung, the copies in play and those always face up.
function renderReference(container, rules = "classic") {
  const cards = state.meta.cards_by_rules[rules] || state.meta.cards;
  container.replaceChildren(el("h3", {}, rules === "classic" ? "Cards" : `Cards (${rules})`),
    ...cards.map((c) => el("div", { class: "ref-card" + (c.copies ? "" : " all-face-up") },
      el("span", { class: `ref-value v${c.value}` }, c.value),
      el("strong", {}, `${c.name} ×${c.copies}`,
        ...(c.face_up ? [" ", el("span", { class: "face-up-count" }, c.copies ? `(+${c.face_up} face up)` : "(all face up)")] : [])),
      el("span", {}, c.effect))));
}

// The table -------------------------------------------------------------------------------

function playerBox(p, view) {
  const flags = [];
  if (p.to_act) flags.push(el("span", { class: "flag acting" }, "to act"));
  if (p.protected) flags.push(el("span", { class: "flag protected" }, "protected"));
  if (p.out) flags.push(el("span", { class: "flag out" }, "out"));
  if (view.round_over && view.round_winners.includes(p.seat)) flags.push(el("span", { class: "flag acting" }, "won the round"));
  const hand = p.hand ? p.hand.map((c) => cardNode(c, { small: true })) : Array.from({ length: p.hand_size }, () => cardNode(0, { small: true }));
  const known = [];
  if (p.known) known.push(el("div", {}, "You know they hold: ", el("strong", {}, cardName(p.known))));
  if (p.ruled_out.length) known.push(el("div", { class: "hint" }, "A Guard proved they hold no ", p.ruled_out.map(cardName).join(", ")));
  if (p.knows_your_card) known.push(el("div", { class: "hint" }, "They have seen your card"));
  return el("div", { class: "player" + (p.to_act ? " to-act" : "") + (p.out ? " out" : "") + (p.you ? " you" : ""), dataset: { seat: p.seat } },
    el("div", {}, el("span", { class: "name" }, p.you ? `You (player_${p.seat})` : p.name), ...flags),
    el("div", { class: "tokens", title: `${p.tokens} of ${plural(view.tokens_to_win, "token")}` }, "♥".repeat(p.tokens) + "♡".repeat(Math.max(0, view.tokens_to_win - p.tokens))),
    el("div", { class: "hint" }, "Hand:"), el("div", { class: "cards hand" }, hand),
    el("div", { class: "hint" }, "Discards, in order:"), el("div", { class: "cards discards" }, p.discards.map((c) => cardNode(c, { small: true }))),
    ...known);
}

function renderTable(container, view, handArea) {
  const info = el("div", { class: "table-info" },
    el("strong", {}, `Round ${view.round}`), el("span", {}, `Deck: ${plural(view.deck_remaining, "card")}`),
    el("span", {}, `Rules: ${view.rules}`), el("span", {}, `Tokens to win: ${view.tokens_to_win}`));
  // One group, so that the label never wraps away from its cards.
  if (view.face_up.length) info.append(el("span", { class: "face-up" }, "Face up: ", el("div", { class: "cards" }, view.face_up.map((c) => cardNode(c, { small: true })))));
  if (view.set_aside) info.append(el("span", {}, "Set aside: "), cardNode(view.set_aside, { small: true }));
  const players = el("div", { class: "players" }, view.players.map((p) => playerBox(p, view)));
  container.replaceChildren(info, players);
  if (handArea) container.append(handArea);
}

// Play ------------------------------------------------------------------------------------

function opponentOptions() {
  const bots = state.meta.opponents.bots.map((b) => el("option", { value: b.name }, b.name));
  const checkpoints = state.meta.opponents.checkpoints.map((c) => el("option", { value: `checkpoint:${c}` }, `checkpoint ${c}`));
  const policies = state.meta.opponents.policies.map((p) => el("option", { value: `solved:${p.name}`, dataset: { rules: p.rules } }, `solved ${p.name} (rules ${p.rules})`));
  return [...bots, ...checkpoints, ...policies];
}

// The default network for the table size when it was offered, else the first checkpoint: the
// shipped 2-player network, and at 3 or 4 players the version 1 2-4 player one, which plays
// stronger there than the shipped version 2 one (the same choice as DEFAULT_NETWORKS of games.py).
function preferredCheckpoint(players) {
  const offered = state.meta.opponents.checkpoints;
  const preferred = players === 2 ? "shipped/ppo_2p" : "v1/ppo_2to4p";
  return offered.includes(preferred) ? preferred : offered[0];
}

// The bots that take options (the searches), by name: {option: what it may be}.
function botOptions(name) {
  const bot = state.meta.opponents.bots.find((b) => b.name === name);
  return bot && bot.options.length ? bot.allowed : null;
}

function renderOpponentRows() {
  const count = Number(document.getElementById("players").value) - 1;
  const rows = [];
  for (let i = 1; i <= count; i++) {
    const select = el("select", { id: `opp-${i}`, class: "opponent" }, opponentOptions());
    select.value = i === 1 && preferredCheckpoint(count + 1) ? `checkpoint:${preferredCheckpoint(count + 1)}` : "belief";
    const options = el("input", { id: `opt-${i}`, placeholder: "options, e.g. iterations=300", size: 26 });
    const sync = () => {
      // A solved policy plays only the rung it was solved for.
      const rules = select.selectedOptions[0] && select.selectedOptions[0].dataset.rules;
      if (rules) document.getElementById("rules").value = rules;
      const allowed = botOptions(select.value);
      options.hidden = !allowed;
      options.title = allowed ? Object.entries(allowed).map(([k, v]) => `${k}: ${v}`).join("\n") : "";
    };
    select.addEventListener("change", sync);
    sync();
    rows.push(el("div", { class: "row" }, el("label", {}, `Opponent ${i} `, select), options));
  }
  document.getElementById("opponents").replaceChildren(...rows);
}

// One request to the game at a time: while one is on its way, the table's controls are
// disabled and clicks on it ignored, so that a double click sends one move, not two.
function setBusy(busy) {
  state.busy = busy;
  document.getElementById("game").classList.toggle("busy", busy);
  document.querySelectorAll("#start, #picker button, #result button").forEach((b) => { b.disabled = busy; });
  const prompt = document.getElementById("prompt");
  if (busy && prompt) prompt.textContent = "Playing…";
}

// Runs `request` unless another is on its way; draws the game it answers, or the error.
// The server lets each bot move once per request: while the game says the bots are still
// to move (after you are out, say), each of their turns is drawn and the next asked for.
async function gameRequest(request) {
  if (state.busy) return;
  setBusy(true);
  try {
    let game = await request();
    if (game) {
      showError("");
      showGame(game);
    }
    while (game && game.waiting) {
      game = await postJSON(`/api/games/${game.id}/play-on`, {});
      showGame(game);
    }
  } catch (err) {
    if (err.game) showGame(err.game);
    else if (state.game && !document.getElementById("game").hidden) showGame(state.game);
    showError(err.message);
  } finally {
    setBusy(false);
  }
}

async function startGame(event) {
  event.preventDefault();
  const players = Number(document.getElementById("players").value);
  const opponents = [];
  for (let i = 1; i < players; i++) {
    const name = document.getElementById(`opp-${i}`).value;
    const options = document.getElementById(`opt-${i}`).value.trim();
    opponents.push(botOptions(name) && options ? `${name}:${options}` : name);
  }
  const request = { players, opponents, rules: document.getElementById("rules").value, length: document.getElementById("length").value };
  const seed = document.getElementById("seed").value.trim();
  if (seed) {
    // A larger number would reach the server rounded: another seed than the one typed.
    if (!/^\d+$/.test(seed) || !Number.isSafeInteger(Number(seed))) {
      showError(`The seed must be a whole number from 0 to ${Number.MAX_SAFE_INTEGER}, got ${seed}.`);
      return;
    }
    request.seed = Number(seed);
  }
  await gameRequest(() => postJSON("/api/games", request));
}

function showGame(game) {
  state.game = game;
  state.cardRules = game.view.rules;
  state.chosenCard = null;
  state.chosenTarget = null;
  document.getElementById("game").hidden = false;
  document.getElementById("setup").hidden = true;
  const view = game.view;
  const me = view.players[game.seat];
  const playable = new Set(game.legal.map((m) => m.card));
  const handCards = (me.hand || []).map((c, i) => {
    const node = cardNode(c);
    node.dataset.index = i;
    if (playable.has(c)) {
      node.classList.add("playable");
      node.addEventListener("click", () => chooseCard(c, node));
    } else if (game.legal.length) {
      node.classList.add("disabled");
    }
    return node;
  });
  const prompt = game.legal.length ? "Your turn: click a card to play." : (view.round_over || game.stopped ? "" : "Waiting for the others…");
  const handArea = el("div", { class: "hand-area panel" }, el("h3", {}, "Your hand"), el("div", { class: "cards", id: "hand" }, handCards), el("div", { class: "hint", id: "prompt" }, prompt));
  renderTable(document.getElementById("board"), view, handArea);
  renderReference(document.getElementById("reference"), view.rules);
  renderPicker();
  const log = document.getElementById("log");
  log.replaceChildren(...game.log.map((line) => el("li", {}, line)));
  log.scrollTop = log.scrollHeight;
  renderResult();
}

function movesFor(card, target) {
  return state.game.legal.filter((m) => m.card === card && (target === undefined || m.target === target));
}

function chooseCard(card, node) {
  if (state.busy) return;
  const moves = movesFor(card);
  document.querySelectorAll("#hand .card").forEach((n) => n.classList.toggle("chosen", n === node));
  if (moves.length === 1) return play(moves[0]);
  state.chosenCard = card;
  state.chosenTarget = null;
  renderPicker();
}

function chooseTarget(target) {
  if (state.busy) return;
  const moves = movesFor(state.chosenCard, target);
  if (moves.length === 1) return play(moves[0]);
  state.chosenTarget = target;
  renderPicker();
}

function renderPicker() {
  const picker = document.getElementById("picker");
  const card = state.chosenCard;
  if (card === null) { picker.hidden = true; picker.replaceChildren(); return; }
  picker.hidden = false;
  const cancel = el("button", { id: "cancel", type: "button", onclick: () => showGame(state.game) }, "Cancel");
  if (state.chosenTarget === null) {
    const targets = [...new Set(movesFor(card).map((m) => m.target))];
    picker.replaceChildren(el("h3", {}, `${cardName(card)}: choose a player`),
      ...targets.map((t) => el("button", { type: "button", class: "target-btn", dataset: { seat: t }, onclick: () => chooseTarget(t) },
        t === state.game.seat ? "yourself" : state.game.view.players[t].name)), cancel);
  } else {
    // A name the person can see every copy of is legal but a sure miss: not offered, and the page says why.
    const moves = movesFor(card, state.chosenTarget);
    const seen = moves.filter((m) => !m.possible).map((m) => cardName(m.guess));
    picker.replaceChildren(el("h3", {}, `${cardName(card)} on ${state.game.view.players[state.chosenTarget].name}: name a card`),
      ...moves.filter((m) => m.possible).map((m) => el("button", { type: "button", class: "guess-btn", dataset: { guess: m.guess }, onclick: () => play(m) }, cardName(m.guess))), cancel,
      seen.length ? el("div", { class: "hint", id: "not-offered" }, `Not offered (${state.meta.seen_guess_reason}): ${seen.join(", ")}.`) : null);
  }
}

// Playing the Princess, or a Prince on yourself while the Princess is your other card, puts you out.
function discardsPrincess(move) {
  const hand = state.game.view.players[state.game.seat].hand || [];
  return move.card === 8 || (move.card === 5 && move.target === state.game.seat && hand.includes(8));
}

function confirmPrincess() {
  return new Promise((resolve) => {
    const modal = document.getElementById("confirm");
    modal.hidden = false;
    const done = (answer) => { modal.hidden = true; resolve(answer); };
    document.getElementById("confirm-yes").onclick = () => done(true);
    document.getElementById("confirm-no").onclick = () => done(false);
  });
}

function play(move) {
  return gameRequest(async () => {
    if (discardsPrincess(move) && !(await confirmPrincess())) {
      showGame(state.game);
      return null;
    }
    return postJSON(`/api/games/${state.game.id}/move`, { action: move.action });
  });
}

function replayLink(file, words) {
  return el("p", {}, words, el("a", { href: `#/replays/${encodeURIComponent(file)}`, id: "replay-link" }, file), ".");
}

function renderResult() {
  const box = document.getElementById("result");
  const game = state.game;
  const view = game.view;
  if (game.stopped) {
    box.replaceChildren(el("div", { class: "winner", id: "stopped" }, `Game stopped: ${game.stopped}.`),
      ...(game.replay_file ? [replayLink(game.replay_file, "The rounds finished are saved as replay ")] : []),
      el("button", { id: "new-game", type: "button", onclick: newGame }, "New game"));
    box.hidden = false;
    return;
  }
  if (!view.round_over) { box.hidden = true; box.replaceChildren(); return; }
  const names = (seats) => seats.map((s) => (s === game.seat ? "You" : view.players[s].name)).join(", ");
  const children = [el("div", { class: "winner", id: "round-winner" }, `Round ${view.round} won by ${names(view.round_winners)}.`)];
  if (view.game_over) children.push(el("div", { class: "winner", id: "game-winner" }, `Game over: ${names(view.game_winners)} won the game.`));
  if (game.replay_file) children.push(replayLink(game.replay_file, "Saved as replay "));
  if (!game.finished) children.push(el("button", { id: "next-round", type: "button", onclick: nextRound }, "Next round"));
  children.push(el("button", { id: "new-game", type: "button", onclick: newGame }, "New game"));
  box.replaceChildren(...children);
  box.hidden = false;
}

function newGame() {
  document.getElementById("game").hidden = true;
  document.getElementById("setup").hidden = false;
  window.scrollTo(0, 0);
}

function nextRound() {
  return gameRequest(() => postJSON(`/api/games/${state.game.id}/next-round`, {}));
}

// Replays ---------------------------------------------------------------------------------

async function loadReplayList() {
  try {
    const data = await api("/api/replays");
    document.getElementById("replay-folder").textContent = data.folder ? `Folder: ${data.folder}` : "No replay folder.";
    const items = data.files.map((f) => el("li", {}, el("button", { type: "button", class: "replay-item", dataset: { name: f.name }, onclick: () => openReplay({ file: f.name }) }, f.name)));
    document.getElementById("replay-list").replaceChildren(...(items.length ? items : [el("li", { class: "hint" }, "No replays yet: play a game, or run training.evaluate with --save-replays.")]));
  } catch (err) {
    showError(err.message);
  }
}

async function openReplay(source, seat = "open") {
  const path = source.file ? `/api/replays/file/${source.file.split("/").map(encodeURIComponent).join("/")}` : `/api/uploads/${source.upload}`;
  try {
    const replay = await api(`${path}?seat=${seat}`);
    showError("");
    const keepFrame = state.source && (state.source.file === source.file && state.source.upload === source.upload);
    state.replay = replay;
    state.source = source;
    state.frame = keepFrame ? Math.min(state.frame, replay.frames.length - 1) : 0;
    document.getElementById("viewer").hidden = false;
    document.getElementById("replay-title").textContent = source.file || "uploaded replay";
    const select = document.getElementById("view-seat");
    select.replaceChildren(el("option", { value: "open" }, "every card open"),
      ...replay.agents.map((a, i) => el("option", { value: i }, `player_${i} (${a.name})`)));
    select.value = seat;
    renderReference(document.getElementById("reference-replays"), replay.rules);
    renderFrame();
  } catch (err) {
    showError(err.message);
  }
}

function renderFrame() {
  const replay = state.replay;
  const frame = replay.frames[state.frame];
  document.getElementById("frame-label").textContent = `${state.frame + 1} / ${replay.frames.length}`;
  state.cardRules = replay.rules;
  renderTable(document.getElementById("replay-board"), frame.view, null);
  const log = [];
  replay.frames.slice(0, state.frame + 1).forEach((f, i) => f.log.forEach((line) => log.push(el("li", { class: i === state.frame ? "current" : "" }, line))));
  const logNode = document.getElementById("replay-log");
  logNode.replaceChildren(...log);
  logNode.scrollTop = logNode.scrollHeight;
  renderDetails(frame);
}

function renderDetails(frame) {
  const box = document.getElementById("details");
  const d = frame.details;
  if (!d) { box.hidden = true; box.replaceChildren(); return; }
  const parts = [el("h3", {}, `What player_${d.player} thought before this move`)];
  if (d.probabilities.length) {
    parts.push(el("div", { class: "hint" }, "Policy over the legal moves:"));
    const shown = d.probabilities.slice(0, 8);
    shown.forEach((m) => parts.push(el("div", { class: "bar" }, el("span", {}, m.text),
      el("div", {}, el("div", { class: "fill", style: `width:${(100 * m.p).toFixed(1)}%` })), el("span", {}, `${(100 * m.p).toFixed(1)}%`))));
    if (d.probabilities.length > shown.length) parts.push(el("div", { class: "hint" }, `and ${d.probabilities.length - shown.length} less likely moves`));
  }
  if (d.value !== null && d.value !== undefined) parts.push(el("div", { id: "value-estimate" }, `Value estimate: ${d.value >= 0 ? "+" : ""}${d.value.toFixed(2)} (−1 loses, +1 wins)`));
  if (d.hand_beliefs.length) {
    const head = el("tr", {}, el("th", {}, "hand of"), ...d.hand_beliefs[0].cards.map((c) => el("th", {}, c.name)));
    const rows = d.hand_beliefs.map((b) => el("tr", {}, el("th", {}, `player_${b.seat}`), ...b.cards.map((c) => el("td", {}, c.p ? `${Math.round(100 * c.p)}%` : ""))));
    parts.push(el("div", { class: "hint" }, "Its probabilities for each opponent's hand:"), el("table", { class: "beliefs" }, head, ...rows));
  }
  box.replaceChildren(...parts);
  box.hidden = false;
}

function stepReplay(where) {
  if (!state.replay) return;
  const last = state.replay.frames.length - 1;
  state.frame = Math.max(0, Math.min(last, where === "first" ? 0 : where === "last" ? last : state.frame + where));
  renderFrame();
}

async function uploadReplay(event) {
  const file = event.target.files[0];
  if (!file) return;
  try {
    const text = await file.text();
    const answer = await api("/api/replays", { method: "POST", headers: { "Content-Type": "application/json" }, body: text });
    openReplay({ upload: answer.id });
  } catch (err) {
    showError(err.message);
  } finally {
    event.target.value = "";
  }
}

// Leaderboard -----------------------------------------------------------------------------

async function loadLeaderboard() {
  try {
    const data = await api("/api/leaderboard");
    const table = document.getElementById("league-table");
    const chart = document.getElementById("league-chart");
    const message = document.getElementById("league-message");
    if (!data.available) {
      message.textContent = `No league to show: ${data.reason}.`;
      table.hidden = chart.hidden = true;
      return;
    }
    message.textContent = `League run in ${data.folder}: ratings fitted on every episode, best first.`;
    table.replaceChildren(el("tr", {}, data.columns.map((c) => el("th", {}, c))),
      ...data.cells.map((row) => el("tr", {}, row.map((c) => el("td", {}, c)))));
    table.hidden = false;
    renderRatingChart(chart, data.ratings);
    document.getElementById("league-png").hidden = !data.chart;
  } catch (err) {
    showError(err.message);
  }
}

// Ratings as bars from the agents' average: the differences are what a rating means, and
// bars from 0 would make 1414 and 1552 look alike.
function renderRatingChart(chart, ratings) {
  if (!ratings.length) { chart.hidden = true; return; }
  const average = ratings.reduce((sum, r) => sum + r.rating, 0) / ratings.length;
  const span = 1.1 * Math.max(1, ...ratings.map((r) => Math.abs(r.rating - average)));
  const rows = ratings.map((r) => {
    const diff = r.rating - average;
    const left = 50 + (Math.min(0, diff) / span) * 50;
    const fill = el("div", { class: "fill" + (diff < 0 ? " below" : ""), style: `left:${left.toFixed(2)}%;width:${((Math.abs(diff) / span) * 50).toFixed(2)}%` });
    return el("div", { class: "rating-row" }, el("span", { class: "agent" }, r.agent),
      el("div", { class: "track" }, el("div", { class: "axis" }), fill),
      el("span", { class: "value" }, `${Math.round(r.rating)} (${diff >= 0 ? "+" : "−"}${Math.abs(Math.round(diff))})`));
  });
  const scale = el("div", { class: "rating-row scale" }, el("span", {}),
    el("div", { class: "ticks" }, el("span", {}, Math.round(average - span)), el("span", {}, `${Math.round(average)} (average)`), el("span", {}, Math.round(average + span))),
    el("span", {}));
  chart.replaceChildren(el("h3", {}, "Rating against the average agent"), ...rows, scale);
  chart.hidden = false;
}

// Pages -----------------------------------------------------------------------------------

function route() {
  const hash = location.hash || "#/play";
  const [, page, ...rest] = hash.split("/");
  const name = ["play", "replays", "leaderboard"].includes(page) ? page : "play";
  for (const p of ["play", "replays", "leaderboard"]) {
    document.getElementById(`page-${p}`).hidden = p !== name;
    document.getElementById(`nav-${p}`).classList.toggle("active", p === name);
  }
  showError("");
  if (name === "replays") {
    loadReplayList();
    if (rest.length) openReplay({ file: decodeURIComponent(rest.join("/")) });
  }
  if (name === "leaderboard") loadLeaderboard();
}

async function init() {
  try {
    state.meta = await api("/api/meta");
  } catch (err) {
    showError(`The server did not answer: ${err.message}`);
    return;
  }
  document.getElementById("rules").replaceChildren(...state.meta.rules.map((r) => el("option", { value: r, selected: r === "classic" }, r)));
  document.getElementById("players").addEventListener("change", renderOpponentRows);
  document.getElementById("setup").addEventListener("submit", startGame);
  renderOpponentRows();
  renderReference(document.getElementById("reference"));
  renderReference(document.getElementById("reference-replays"));
  document.getElementById("first").addEventListener("click", () => stepReplay("first"));
  document.getElementById("prev").addEventListener("click", () => stepReplay(-1));
  document.getElementById("next").addEventListener("click", () => stepReplay(1));
  document.getElementById("last").addEventListener("click", () => stepReplay("last"));
  document.getElementById("view-seat").addEventListener("change", (e) => openReplay(state.source, e.target.value));
  document.getElementById("upload").addEventListener("change", uploadReplay);
  document.addEventListener("keydown", (e) => {
    if (document.getElementById("page-replays").hidden || e.target.tagName === "INPUT" || e.target.tagName === "SELECT") return;
    if (e.key === "ArrowRight") stepReplay(1);
    if (e.key === "ArrowLeft") stepReplay(-1);
  });
  window.addEventListener("hashchange", route);
  route();
}

init();
