// A seat's table: the seat's own view, live through the stream (EventSource with a stream
// ticket, bought with the seat's token), drawn with text nodes only; one button for every
// command the view's `moves` lists, and nothing else.
"use strict";
(() => {
  const game = document.body.dataset.game;
  const store = `bura-seat-${game}`;
  const main = document.getElementById("table");
  const status = document.getElementById("status");
  const news = document.getElementById("news");
  const RANKS = { A: "ace", K: "king", Q: "queen", J: "jack", 10: "ten", 9: "nine", 8: "eight",
    7: "seven", 6: "six", 5: "five", 4: "four", 3: "three", 2: "two" };
  const SUITS = { S: ["spades", "♠"], H: ["hearts", "♥"], D: ["diamonds", "♦"], C: ["clubs", "♣"] };
  const VERBS = { lead: "lead", respond: "respond", draw: "draw", dave_answer: "answer the dave",
    seeding: "send seeds", seed: "send your seed", dealing: "deal" };
  const CLAIMS = { thirty_one: "31", bura: "bura", four_aces: "four aces" };
  // the Czech game's combinations, led out of turn (or, by the seat due, a molodka or three aces)
  const COMBINATIONS = { bura: "a bura (three trumps)", three_aces: "three aces",
    molodka: "a molodka (three of one suit)" };
  let token = null;
  let last = 0; // the last version this page has: a reconnect resumes after it
  let source = null;
  let shown = null;
  let ended = false;
  let retry = 500;
  let refocus = false; // a move was just sent: focus stays on the moves (keyboard play)
  let heard = null; // the view the news last told of: what changed since is told next
  let told = []; // what changed since, gathered from every message until the latest
  // Each seat taken (a token, a link) is a sitting of its own: a connect still buying its
  // ticket, or waiting to retry, when another seat is taken is dropped, and so is anything
  // its stream says.
  let sitting = 0;
  // when the stream last said anything (a view, a presence); the keep-alives it also
  // sends are comments, which EventSource never hands on
  let heardAt = Date.now();
  const WAIT = 10000; // what a request may take before the page gives up on it
  // a stream silent this long is asked after with a read: two of the server's keep-alive
  // periods, which the page is given (data-quiet, milliseconds)
  const QUIET = Number(main.dataset.quiet) || 30000;
  const name = (c) => `${RANKS[c.slice(0, -1)]} of ${SUITS[c.slice(-1)][0]}`;
  const sign = (c) => c.slice(0, -1) + SUITS[c.slice(-1)][1];
  const names = (cs) => cs.map(name).join(" and ");
  const el = (tag, text, attrs = {}) => {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    return node;
  };
  const cardOf = (c) => el("span", sign(c), { class: `card ${SUITS[c.slice(-1)][0]}`,
    "data-card": c, role: "img", "aria-label": name(c) });
  const backs = (n) => Array.from({ length: n }, () =>
    el("span", "🂠", { class: "card back", role: "img", "aria-label": "a hidden card" }));
  const seatName = (view, s) => (s === null || s === undefined ? "nobody"
    : `${view.seats[s].name}${s === view.seat ? " (you)" : ""}`);
  const say = (text) => { status.textContent = text; };
  // a reason as the arbiter's page and the command line say it (services/pages/words.py)
  const reasonNamed = (r) => (r === "thirty_one" ? "31" : r.replaceAll("_", " "));
  // who did something, as a sentence's subject: "you", or the seat's name
  const doers = (view, seats) => seats.map((s) => (s === view.seat ? "you" : view.seats[s].name)).join(" and ");
  // what ended a deal, said of the seat that did it: "bob drew out of turn", not a bare
  // "out of turn draw" beside the winner's name
  const BY_LOSERS = { false_declaration: "declared falsely", double_draw: "drew two cards at once",
    extra_card: "drew with a full hand", out_of_turn_draw: "drew out of turn", conceded: "conceded",
    dave_declined: "declined the dave", timeout: "ran out of time", abandoned: "left the table" };
  const BY_WINNERS = { thirty_one: "declared 31", bura: "showed a bura", four_aces: "showed four aces",
    most_points: "had the most points" };
  function why(view, past) {
    // the seat whose act it was (`by`); a whole side only where none is named
    const did = (side) => (past.by === undefined || past.by === null ? side : [past.by]);
    if (BY_LOSERS[past.reason] && past.losers.length) return `${doers(view, did(past.losers))} ${BY_LOSERS[past.reason]}`;
    if (BY_WINNERS[past.reason] && past.winners.length) return `${doers(view, did(past.winners))} ${BY_WINNERS[past.reason]}`;
    return past.reason === "no_claim" ? "nobody declared 31" : reasonNamed(past.reason);
  }
  const outcome = (view, past) => (past.winners.length
    ? `won by ${doers(view, past.winners)} (${why(view, past)})` : `void (${why(view, past)})`);

  function subsets(cards, k) {
    if (k === 0) return [[]];
    if (cards.length < k) return [];
    const [first, ...rest] = cards;
    return [...subsets(rest, k - 1).map((s) => [first, ...s]), ...subsets(rest, k)];
  }

  // Every command the view's moves stand for, as domain/moves.py `commands` writes them out.
  function commands(moves, hand) {
    const out = [];
    if (moves.seed) {
      const bytes = crypto.getRandomValues(new Uint8Array(16));
      const value = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
      out.push({ command: { type: "seed", value }, text: "Send my seed" });
    }
    for (const group of moves.lead) {
      for (const count of group.counts) {
        for (const cards of subsets(group.cards, count)) {
          out.push({ command: { type: "lead", cards }, text: `Lead ${cards.map(sign).join(" ")}`,
            spoken: names(cards) });
        }
      }
    }
    for (const combo of moves.combinations) {
      out.push({ command: { type: "lead", cards: combo.cards },
        text: `Lead ${COMBINATIONS[combo.combination]} ${combo.cards.map(sign).join(" ")}`,
        spoken: names(combo.cards) });
    }
    if (moves.respond !== null && moves.respond !== undefined) {
      for (const cards of subsets(hand, moves.respond)) {
        out.push({ command: { type: "respond", cards }, text: `Respond ${cards.map(sign).join(" ")}`,
          spoken: names(cards) });
      }
    }
    if (moves.draw) out.push({ command: { type: "draw" }, text: "Draw a card" });
    if (moves.dave_answer) {
      out.push({ command: { type: "dave_answer", accept: true }, text: "Accept the dave" });
      out.push({ command: { type: "dave_answer", accept: false }, text: "Decline the dave" });
    }
    if (moves.pass) out.push({ command: { type: "pass" }, text: "Pass" });
    for (const claim of moves.declare) {
      out.push({ command: { type: "declare", claim }, text: `Declare ${CLAIMS[claim]}` });
    }
    if (moves.dave) out.push({ command: { type: "dave" }, text: "Offer a dave" });
    if (moves.concede) out.push({ command: { type: "concede" }, text: "Concede the deal" });
    return out;
  }

  function key() {
    if (crypto.randomUUID) return crypto.randomUUID();
    return `k${Date.now()}${Math.random().toString(16).slice(2)}`;
  }

  async function send(command, buttons) {
    refocus = buttons.includes(document.activeElement);
    for (const b of buttons) b.disabled = true;
    try {
      const answer = await fetch(`/games/${encodeURIComponent(game)}/commands`, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json",
          "Idempotency-Key": key() },
        body: JSON.stringify({ ...command, seen: shown.version }),
        signal: AbortSignal.timeout(WAIT),
      });
      // the stream may have told the game's end before this answer came: that stays said
      if (answer.ok) { if (!ended) say(`Sent: ${command.type}.`); return; }
      const problem = await answer.json().catch(() => ({}));
      say(`Refused: ${problem.detail || answer.status}`);
    } catch (error) {
      say("The server could not be reached; try again.");
    }
    if (shown) render(shown, false);  // the news already told stays
  }

  // the server's clock less this browser's, as of the last view with a clock: deadlines
  // are counted down on the server's time, not on a browser clock set wrong
  let skew = 0;

  function left(deadline) {
    const seconds = Math.max(0, Math.round((deadline - (Date.now() + skew)) / 1000));
    return `${new Date(deadline).toLocaleTimeString()} (${seconds} s left)`;
  }

  // What changed from one version to the next, in words, for #news (a live region that
  // stays in the page: a region made anew with each view is not announced). Every message
  // of the stream is heard, the versions one command records included, so an answer that
  // ended a trick is told before the trick leaves the table.
  function changes(before, view) {
    const out = [];
    if (!before || before.status !== "in_progress") return out;
    if (view.deals.length > before.deals.length) {
      for (const past of view.deals.slice(before.deals.length)) {
        out.push(`Deal ${past.number} is over: ${outcome(view, past)}.`);
      }
      return out;
    }
    const was = before.trick;
    const is = view.trick;
    const same = was && is && was.leader === is.leader && was.led.join() === is.led.join();
    if (is && !same) out.push(`${seatName(view, is.leader)} led ${names(is.led)}.`);
    for (const r of is ? is.responses.slice(same ? was.responses.length : 0) : []) {
      const cards = r.cards ? names(r.cards) : `${r.count} card${r.count === 1 ? "" : "s"} face down`;
      out.push(`${seatName(view, r.seat)} answered with ${cards}${r.beat ? " and beat it" : ""}.`);
    }
    view.seats.forEach((s, i) => {
      if (s.tricks > before.seats[i].tricks) out.push(`${seatName(view, i)} took the trick.`);
    });
    // cards from the stock in play, not the deal's dealing (the server deals, nobody draws)
    const drawing = view.deal === before.deal && view.phase !== "dealing" && before.phase !== "dealing"
      && view.stock_count < before.stock_count;
    if (drawing && view.seat !== null && view.hand && before.hand) {
      const drawn = view.hand.filter((c) => !before.hand.includes(c));
      if (drawn.length) out.push(`You drew ${names(drawn)}.`);
    }
    view.seats.forEach((s, i) => {
      const more = s.cards - before.seats[i].cards;
      if (drawing && i !== view.seat && more > 0) {
        out.push(`${seatName(view, i)} drew ${more === 1 ? "a card" : `${more} cards`}.`);
      }
    });
    if (view.phase === "dave_answer" && before.phase !== "dave_answer" && view.dave.offered_by !== null) {
      out.push(`${seatName(view, view.dave.offered_by)} offers a dave: double the stake, or give up the deal.`);
    }
    if (view.dave.multiplier > before.dave.multiplier) {
      out.push(`The dave was accepted: the deal counts ×${view.dave.multiplier}.`);
    }
    return out;
  }

  // what an event says that the views before and after it do not: a declaration (a false
  // one may leave the deal going on) and a pass
  function acted(view, event) {
    if (!event || event.seat === undefined || event.seat === null) return [];
    const who = event.seat === view.seat ? "You" : view.seats[event.seat].name;
    if (event.type === "declared") {
      return [`${who} declared ${CLAIMS[event.claim] || event.claim}${event.true ? "" : ", falsely"}.`];
    }
    if (event.type === "passed") return [`${who} passed.`];
    // a move the server makes for a seat (auto_play) is told as the seat's, so the timeout
    // before it is told first: it was not the seat's own
    if (event.type === "timed_out") {
      const why = event.clock === "abandon" ? `${who} ${event.seat === view.seat ? "were" : "was"} away from the table too long`
        : `${who} ran out of time`;
      if (event.verdict === "auto_play") return [`${why}: the server plays for ${whomever(view, event.seat)}.`];
      if (event.verdict === "pause") return [`${why}: the clock is paused for the operator's ruling.`];
      return [`${why}.`];
    }
    if (event.type === "pause_ended") {
      return [event.verdict === "play_on" ? `The operator ruled: ${whomever(view, event.seat)} plays on.`
        : `The operator ruled: ${whomever(view, event.seat)} lose${event.seat === view.seat ? "" : "s"} the deal.`];
    }
    return [];
  }

  const whomever = (view, s) => (s === view.seat ? "you" : view.seats[s].name);

  function hear(view, event) {
    if (heard && heard.status === "in_progress") told.push(...acted(view, event));
    told.push(...changes(heard, view));
    heard = view;
  }

  function tell(turn) {
    const said = [...told, turn].join(" ");
    told = [];
    if (said !== news.textContent) news.textContent = said;
  }

  function render(view, retell = true) {
    // keyboard play: focus on the moves (or a move just sent) stays on the moves group,
    // through views that offer none (the other seat's turn); Tab then reaches the first
    // move. It is never put on a move itself: Enter would play one not yet heard.
    const held = refocus || document.activeElement?.closest?.("#moves") != null;
    shown = view;
    if (typeof view.now === "number") skew = view.now - Date.now();
    main.dataset.version = String(view.version);
    main.dataset.status = view.status;
    main.replaceChildren();
    // a spectator's (or the operator's) token shows the table without a hand of its own
    const me = view.seat === null ? null : view.seats[view.seat];
    main.append(el("h2", me ? `You are ${me.name}, seat ${view.seat}. Deal ${view.deal}.`
      : `Watching as the ${view.viewer}. Deal ${view.deal}.`));

    const turn = el("p", null, { id: "turn" });
    if (view.status === "finished") {
      const winners = view.result ? view.result.winners : [];
      const told = !me ? `${winners.map((w) => view.seats[w].name).join(", ")} won`
        : (winners.includes(view.seat) ? "you won" : "you lost");
      turn.textContent = `The game is over: ${told}` +
        (view.result ? ` (${reasonNamed(view.result.reason)}).` : ".");
    } else if (view.due) {
      turn.textContent = `Your turn: ${VERBS[view.due] || view.due}.`;
    } else if (view.phase === "dealing") {  // the server deals, not a seat
      turn.textContent = view.turn === null ? "Waiting for the server to deal."
        : `The server deals: ${seatName(view, view.turn)} leads once the cards are out.`;
    } else if (view.phase === "over") {
      turn.textContent = `Deal ${view.deal} is over: the next deal follows.`;
    } else if (view.phase === "seeding") {
      turn.textContent = `Waiting for the seats' seeds for deal ${view.deal}.`;
    } else if (view.turn !== null && view.turn === view.seat) {
      turn.textContent = `Waiting (${VERBS[view.phase] || view.phase}: nothing is yours to do yet).`;
    } else if (view.turn !== null) {
      turn.textContent = `Waiting for ${seatName(view, view.turn)} to ${VERBS[view.phase] || view.phase}.`;
    } else {
      turn.textContent = "Waiting for the server.";
    }
    if (retell) tell(turn.textContent);  // the deadline that follows ticks: it is not news
    const due = view.turn !== null ? view.seats[view.turn] : null;
    // the seeds' deadline while the seats seed a deal, else the seat due's
    const deadline = view.phase === "seeding" ? view.shuffle && view.shuffle.deadline
      : due && due.deadline;
    if (deadline && view.status === "in_progress") {
      turn.append(" Deadline: ", el("time", left(deadline), { id: "deadline",
        "data-deadline": String(deadline) }));
    }
    if (view.clock && view.clock.paused && view.status === "in_progress") {
      turn.append(" The clock is paused: the table waits for the operator's ruling, or for the seat due to act.");
    }
    main.append(turn);

    // how the last deal ended (a deal lost to a false 31 moves straight on to the next)
    const past = view.deals && view.deals.length ? view.deals[view.deals.length - 1] : null;
    if (past) {
      // pay_pot: the pots of that deal explain a stake that nets to nothing
      const owed = past.pot || [];
      const pot = owed.map((n, s) => (n ? `${seatName(view, s)} owed ${n} to every other side` : null))
        .filter((p) => p);
      main.append(el("p", `Deal ${past.number}: ${outcome(view, past)}, stake ${past.stake}.` + (pot.length ? ` The pot for a false 31: ${pot.join("; ")}, ` +
        "counted in the scores." : ""), { id: "last-deal" }));
    }
    // pay_pot: what a false 31 of this deal owes, settled with the deal however it ends
    const owing = (view.pot || []).map((n, s) => (n ? `${seatName(view, s)} owes ${n} to every other side` : null))
      .filter((p) => p);
    if (owing.length) {
      main.append(el("p", `The pot for a false 31 in this deal: ${owing.join("; ")}, ` +
        "settled with the deal however it ends.", { id: "pot" }));
    }
    if (view.dave && view.dave.enabled && (view.dave.multiplier > 1 || view.dave.offered_by !== null)) {
      // an offer stays on a deal that ended without its answer being yes (declined, or timed
      // out): it is an offer only while the table waits for the answer
      const by = view.dave.offered_by !== null ? seatName(view, view.dave.offered_by) : null;
      const offered = by === null ? ""
        : (view.phase === "dave_answer" ? ` ${by} offers to double it.`
          : ` ${by} offered to double it; it was not accepted.`);
      main.append(el("p", `Dave: the deal counts ×${view.dave.multiplier}.${offered}`, { id: "dave" }));
    }

    const trump = el("p", "Trump: ", { id: "trump" });
    trump.append(view.trump ? cardOf(view.trump) : (view.trump_suit ? SUITS[view.trump_suit][0] : "none"));
    trump.append(` · stock: ${view.stock_count} card${view.stock_count === 1 ? "" : "s"}`);
    main.append(trump);

    const trick = el("div", null, { id: "trick", role: "region", "aria-label": "the trick on the table" });
    trick.append(el("h3", "On the table"));
    if (view.trick) {
      const combination = view.trick.combination ? `${COMBINATIONS[view.trick.combination]}: ` : "";
      const led = el("p", `${seatName(view, view.trick.leader)} led ${combination}`);
      led.append(...view.trick.led.map(cardOf));
      trick.append(led);
      for (const r of view.trick.responses) {
        const line = el("p", `${seatName(view, r.seat)} answered${r.beat ? " (beats)" : ""} `);
        line.append(...(r.cards ? r.cards.map(cardOf) : backs(r.count)));
        trick.append(line);
      }
    } else {
      trick.append(el("p", "nothing"));
    }
    main.append(trick);

    const hand = el("div", null, { id: "hand" });
    hand.append(el("h3", "Your hand"));
    const cards = el("p");
    cards.append(...(view.hand || []).map(cardOf));
    hand.append(cards);
    if (me && me.points !== null && me.points !== undefined) hand.append(el("p", `Your points: ${me.points}`));
    if (me) main.append(hand);

    const seats = el("ul", null, { id: "seats" });
    for (const s of view.seats) {
      const mine = s.seat === view.seat;
      const line = el("li", `${s.name}${mine ? " (you)" : ""}: ${s.cards} card(s), ${s.tricks} trick(s), ` +
        `score ${s.score}`, mine ? { class: "mine" } : {});
      const given = s.open && view.rules && view.rules.compensation
        ? ` (given ${view.rules.compensation} points of compensation toward ` +
          `${view.rules.target_points} each deal)` : "";
      if (s.open) {  // an open seat: its hand is on the table for everyone
        const open = el("span", ` · plays open${given}${mine ? "" : ": "}`, { class: "open-hand" });
        if (!mine) open.append(...(s.hand || []).map(cardOf));
        line.append(open);
      } else if (!mine && s.hand) {  // the operator's key: every hand, none of them open
        const hand = el("span", " · hand: ", { class: "seen-hand" });
        hand.append(...s.hand.map(cardOf));
        line.append(hand);
      }
      seats.append(line);
    }
    main.append(seats);
    const teams = view.rules && view.rules.teams;
    if (teams) {  // a team's points are pooled toward its target, its stakes shared
      const sides = teams.map((team) => team.map((s) => seatName(view, s)).join(" and "));
      const ours = view.seat === null ? -1 : teams.findIndex((team) => team.includes(view.seat));
      main.append(el("p", `Teams: ${sides.join(" against ")}.` +
        (ours >= 0 ? ` You play with ${teams[ours].filter((s) => s !== view.seat)
          .map((s) => seatName(view, s)).join(" and ")}.` : "") +
        ` A team's points count together toward ${view.rules.target_points}.`, { id: "teams" }));
    }

    const moves = el("div", null, { id: "moves", role: "group", "aria-label": "your moves",
      tabindex: "-1" });
    const offered = view.moves && view.status === "in_progress" ? commands(view.moves, view.hand || []) : [];
    // a button's spoken name begins with the words it shows (WCAG 2.5.3: say what you see),
    // then names its cards: "Lead A♠ K♠: ace of spades and king of spades"
    const buttons = offered.map((m) => el("button", m.text, { type: "button",
      "data-command": JSON.stringify(m.command), ...(m.spoken ? { "aria-label": `${m.text}: ${m.spoken}` } : {}) }));
    buttons.forEach((b, i) => b.addEventListener("click", () => send(offered[i].command, buttons)));
    moves.append(...buttons);
    main.append(moves);
    refocus = false;
    if (held) moves.focus();
  }

  function reconnect() {
    if (ended) return;
    say("The connection dropped: reconnecting…");
    const mine = sitting;
    setTimeout(() => { if (mine === sitting) connect(); }, retry);
    retry = Math.min(retry * 2, 5000);
  }

  async function connect() {
    const mine = sitting;
    let answer;
    try {
      answer = await fetch(`/games/${encodeURIComponent(game)}/stream-tickets`, {
        method: "POST", headers: { Authorization: `Bearer ${token}` },
        signal: AbortSignal.timeout(WAIT) });
    } catch (error) {
      if (mine === sitting) reconnect();
      return;
    }
    if (mine !== sitting) return;
    if (answer.status === 401 || answer.status === 403) {
      sessionStorage.removeItem(store);
      ask();
      say("That token does not open a seat at this game.");
      return;
    }
    if (!answer.ok) { reconnect(); return; }
    const ticket = await answer.json().catch(() => null);
    if (mine !== sitting) return;
    if (!ticket) { reconnect(); return; }
    // a ticket opens one stream once: a reconnect buys a new one and resumes after `last`
    const opened = new EventSource(ticket.stream + (last ? `&after=${last}` : ""));
    source = opened;
    heardAt = Date.now();
    // a stream of a sitting given up (or left for a newer one) is closed at its first word
    const ours = (handle) => (message) => {
      if (source === opened) handle(message);
      else opened.close();
    };
    opened.addEventListener("open", ours(() => { retry = 500; heardAt = Date.now(); say("Connected."); }));
    opened.addEventListener("view", ours((message) => {
      heardAt = Date.now();
      const data = JSON.parse(message.data);
      last = Number(message.lastEventId) || data.version;
      hear(data.view, data.event);
      // a version the server had already moved on from: the next message follows at once
      if (data.latest !== false) render(data.view);
    }));
    opened.addEventListener("presence", ours(() => { heardAt = Date.now(); }));
    opened.addEventListener("end", ours(() => { ended = true; opened.close(); say("The game is over."); }));
    opened.addEventListener("shutdown", ours(() => { opened.close(); reconnect(); }));
    opened.addEventListener("error", ours(() => { opened.close(); reconnect(); }));
  }

  // A connection that goes silent without closing (a proxy or a network that holds it)
  // says nothing to EventSource: a stream quiet for QUIET is asked after with a read of the
  // view, and left for a new one when the read is newer than the page, or gets no answer.
  async function checkQuiet() {
    const asked = source;
    if (!asked || ended || Date.now() - heardAt < QUIET) return;
    heardAt = Date.now();
    let fresh = null;
    try {
      const answer = await fetch(`/games/${encodeURIComponent(game)}`, {
        headers: { Authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(WAIT) });
      fresh = answer.ok ? await answer.json() : null;
    } catch (error) {
      fresh = null;
    }
    if (source !== asked || ended) return;
    if (fresh && fresh.version <= last) return; // a quiet table, and the stream is right
    asked.close();
    reconnect();
  }
  setInterval(checkQuiet, Math.min(5000, QUIET / 2));

  // a token is printable ASCII (what an Authorization header carries): anything else, a
  // word typed in another keyboard layout say, is refused here, not sent and retried for ever
  const TOKEN = /^[\x21-\x7e]+$/;

  // the token's form again, with the focus in it (where the token is typed again)
  function ask() {
    const form = document.getElementById("token-form");
    form.hidden = false;
    form.elements.token.focus();
  }

  function sit(given) {
    if (!TOKEN.test(given)) {
      sessionStorage.removeItem(store);
      ask();
      say("That is not a seat's token: a token is letters, digits and signs of the Latin alphabet, no spaces.");
      return;
    }
    sitting += 1; // whatever the seat before was still opening is dropped
    token = given;
    sessionStorage.setItem(store, token);
    document.getElementById("token-form").hidden = true;
    connect();
  }

  document.getElementById("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = event.target.elements.token;
    const given = input.value.trim();
    input.value = "";
    if (given) sit(given);
  });
  setInterval(() => {
    const deadline = document.getElementById("deadline");
    if (deadline) deadline.textContent = left(Number(deadline.dataset.deadline));
  }, 1000);

  // A link may carry the token in its fragment, which no browser sends to a server: it is
  // moved into this tab's storage and off the address bar at once.
  // Another seat's link opened in this tab changes the fragment only, and loads nothing:
  // that seat is taken up (the table drawn afresh for it) and its token leaves the bar too.
  function fromLink() {
    const fragment = new URLSearchParams(location.hash.slice(1));
    if (!fragment.get("seat")) return false;
    history.replaceState(null, "", location.pathname + location.search);
    if (source) source.close();
    source = null;
    last = 0;
    shown = null;
    heard = null;
    told = [];
    ended = false;
    main.replaceChildren();
    news.textContent = "";
    sit(fragment.get("seat"));
    return true;
  }
  window.addEventListener("hashchange", fromLink);
  if (!fromLink() && sessionStorage.getItem(store)) sit(sessionStorage.getItem(store));
})();
