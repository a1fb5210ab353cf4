// The arbiter's page: the operator key is asked once and kept in sessionStorage (this tab
// only); every version is fetched as the server renders it, with the key in a header, so
// the page never holds more than the server chose to show (and never the key in a URL).
"use strict";
(() => {
  const game = document.body.dataset.game;
  const store = `bura-operator-key`;
  const page = `/arbiter/games/${encodeURIComponent(game)}`;

  const say = (text) => {
    let box = document.getElementById("problem");
    if (!box) {
      box = document.createElement("p");
      box.id = "problem";
      box.className = "problem";
      box.setAttribute("role", "alert");
      document.querySelector("header").after(box);
    }
    box.textContent = text;
  };

  // The key: this tab's, or the one a page rendered without this script carries on in its
  // form (the script came late, after the key's form had posted): kept in the tab from then.
  function keyOf() {
    const carried = document.querySelector("#steps input[name=key]");
    if (!sessionStorage.getItem(store) && carried && carried.value) {
      sessionStorage.setItem(store, carried.value);
    }
    if (carried) carried.remove();
    return sessionStorage.getItem(store);
  }

  async function show(version, viewer) {
    const key = keyOf();
    if (!key) return;
    const query = new URLSearchParams();
    if (version) query.set("version", String(version));
    if (viewer !== undefined && viewer !== null) query.set("as", String(viewer));
    let answer;
    try {
      answer = await fetch(`${page}?${query}`, { headers: { Authorization: `Bearer ${key}` } });
    } catch (error) {
      if (!/^[\x20-\x7e]*$/.test(key)) {  // no header can carry it: ask for the key again
        sessionStorage.removeItem(store);
        say("That key cannot be right: a key is letters, digits and signs of the Latin alphabet. Reload and type it again.");
      } else {
        say("The server could not be reached; try again.");
      }
      return;
    }
    const html = await answer.text();
    const fresh = new DOMParser().parseFromString(html, "text/html");
    if (answer.ok && !fresh.getElementById("steps")) { // the key was refused: its form again
      sessionStorage.removeItem(store);
      const form = fresh.getElementById("key-form");
      document.getElementById("key-form")?.replaceWith(form);
      if (!document.getElementById("key-form")) document.querySelector("header").after(form);
      bindKeyForm();
      form.elements.key.focus();  // typed again where it was typed, not hunted for
      return;
    }
    if (!answer.ok) { say(`The server answered ${answer.status}.`); return; }
    // the key just typed opens the record: the focus goes to its first control, not lost
    const typed = document.getElementById("key-form")?.contains(document.activeElement);
    document.getElementById("key-form")?.remove();
    document.getElementById("problem")?.remove();
    const focus = focused();
    document.getElementById("arbiter").replaceWith(fresh.getElementById("arbiter"));
    bindRecord();
    focus();
    if (typed) document.getElementById("previous")?.focus();
  }

  // A game that goes on is followed: a ticket bought with the key opens the game's stream
  // (the arbiter's view) after the record's last version. Each version the game reaches is
  // said in the header; an arbiter at the last version is moved on to it, one stepping
  // through the past stays where they are. A dropped stream is bought again after the last
  // version heard; the game's end (or a record that has it) closes it.
  let following = null;
  let heard = 0;

  function latest(version) {
    heard = Math.max(heard, version);
    const main = document.getElementById("arbiter");
    if (!main || heard <= Number(main.dataset.last)) return;
    if (main.dataset.version === main.dataset.last) {
      show(heard, main.dataset.viewer);
      return;
    }
    let note = document.getElementById("live");
    if (!note) {
      note = document.createElement("p");
      note.id = "live";
      note.setAttribute("role", "status");
      note.setAttribute("aria-live", "polite");
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = "Show the latest";
      button.addEventListener("click", () => {
        const now = document.getElementById("arbiter");
        show(heard, now ? now.dataset.viewer : undefined);
      });
      note.append(document.createElement("span"), " ", button);
      document.querySelector("header").append(note);
    }
    note.firstChild.textContent = `The game has gone on: version ${heard} is its latest.`;
  }

  async function follow() {
    const main = document.getElementById("arbiter");
    if (following || !main || main.dataset.over === "true") return;
    const key = keyOf();
    if (!key) return;
    following = "buying";
    heard = Math.max(heard, Number(main.dataset.last));
    let ticket;
    try {
      const answer = await fetch(`/games/${encodeURIComponent(game)}/stream-tickets`, {
        method: "POST", headers: { Authorization: `Bearer ${key}` },
      });
      if (!answer.ok) { following = null; return; }  // the record itself says what is wrong
      ticket = await answer.json();
    } catch (error) {
      following = null;
      setTimeout(follow, 3000);
      return;
    }
    const stream = new EventSource(`${ticket.stream}&after=${heard}`);
    following = stream;
    stream.addEventListener("view", (message) => {
      const data = JSON.parse(message.data);
      heard = Math.max(heard, data.version);
      if (data.latest) latest(data.version);  // the last of what one command recorded
    });
    stream.addEventListener("end", () => { stream.close(); following = null; });
    const again = () => { stream.close(); following = null; setTimeout(follow, 2000); };
    stream.addEventListener("shutdown", again);
    stream.onerror = again;  // a ticket opens one stream once: a new one, after `heard`
  }

  // Where the keyboard was in the record (the step button, the slider, the perspective):
  // the record is replaced whole at every step, and the focus goes back to the same control
  // of the new one, so that Enter steps on and on.
  function focused() {
    const now = document.activeElement;
    const main = document.getElementById("arbiter");
    if (!now || !main || !main.contains(now)) return () => {};
    if (now.id) return () => document.getElementById(now.id)?.focus();
    const name = now.getAttribute("name");
    if (!name) return () => {};
    const at = [...main.querySelectorAll(`[name="${CSS.escape(name)}"]`)].indexOf(now);
    return () => {
      const same = document.getElementById("arbiter")?.querySelectorAll(`[name="${CSS.escape(name)}"]`);
      same?.[at]?.focus();
    };
  }

  function bindKeyForm() {
    const form = document.getElementById("key-form");
    if (!form) return;
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      sessionStorage.setItem(store, form.elements.key.value);
      form.elements.key.value = "";
      show();
    });
  }

  // The API's audit and bundle take the key in a header, never in the link: fetched here
  // with it, then handed to the browser as a file.
  async function download(link) {
    const key = keyOf();
    if (!key) return;
    let answer;
    try {
      answer = await fetch(link.getAttribute("href"), { headers: { Authorization: `Bearer ${key}` } });
    } catch (error) {
      say("The server could not be reached; try again.");
      return;
    }
    if (!answer.ok) { say(`The server answered ${answer.status}.`); return; }
    const file = URL.createObjectURL(await answer.blob());
    const save = document.createElement("a");
    save.href = file;
    save.download = link.dataset.download;
    document.body.append(save);
    save.click();
    save.remove();
    setTimeout(() => URL.revokeObjectURL(file), 1000);
  }

  function bindRecord() {
    const main = document.getElementById("arbiter");
    const form = document.getElementById("steps");
    if (!main || !form) return;
    if (Number(main.dataset.last) >= heard) document.getElementById("live")?.remove();
    if (main.dataset.over === "true" && following) {
      if (following !== "buying") following.close();
      following = null;
    }
    follow();
    for (const link of main.querySelectorAll("a[data-download]")) {
      link.addEventListener("click", (event) => { event.preventDefault(); download(link); });
    }
    const viewer = () => form.elements.perspective.value;
    // the version shown, in view within the timeline's own scroll; where the timeline has
    // none (a phone's narrow layout), the window is not scrolled away from the table
    const timeline = document.querySelector("#timeline ol");
    const current = document.querySelector("#timeline li.current");
    if (timeline && current && timeline.scrollHeight > timeline.clientHeight) {
      timeline.scrollTop = current.offsetTop - timeline.offsetTop - timeline.clientHeight / 2;
    }
    const slider = document.getElementById("slider");
    slider.addEventListener("input", () => {
      document.getElementById("shown-version").textContent = slider.value;
    });
    slider.addEventListener("change", () => show(Number(slider.value), viewer()));
    form.elements.perspective.addEventListener("change", () => show(Number(main.dataset.version), viewer()));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const button = event.submitter;
      if (!button) return;
      if (button.name === "print") {
        const chosen = document.getElementById(`finding-${button.value}`);
        document.body.classList.add("printing");
        chosen.classList.add("printing");
        window.print();
        document.body.classList.remove("printing");
        chosen.classList.remove("printing");
        return;
      }
      const version = button.name === "show" ? Number(slider.value) : Number(button.value);
      show(version, viewer());
    });
  }

  keyOf();
  bindKeyForm();
  bindRecord();
  if (!document.getElementById("steps") && sessionStorage.getItem(store)) show();
})();
