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

  async function show(version, viewer) {
    const key = sessionStorage.getItem(store);
    if (!key) return;
    const query = new URLSearchParams();
    if (version) query.set("version", String(version));
    if (viewer !== undefined && viewer !== null) query.set("as", String(viewer));
    const answer = await fetch(`${page}?${query}`, { headers: { Authorization: `Bearer ${key}` } });
    const html = await answer.text();
    const fresh = new DOMParser().parseFromString(html, "text/html");
    if (answer.ok && !fresh.getElementById("steps")) { // the key was refused: its form again
      sessionStorage.removeItem(store);
      const form = fresh.getElementById("key-form");
      document.getElementById("key-form")?.replaceWith(form);
      if (!document.getElementById("key-form")) document.querySelector("header").after(form);
      bindKeyForm();
      return;
    }
    if (!answer.ok) { say(`The server answered ${answer.status}.`); return; }
    document.getElementById("key-form")?.remove();
    document.getElementById("problem")?.remove();
    document.getElementById("arbiter").replaceWith(fresh.getElementById("arbiter"));
    bindRecord();
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

  function bindRecord() {
    const main = document.getElementById("arbiter");
    const form = document.getElementById("steps");
    if (!main || !form) return;
    const viewer = () => form.elements.perspective.value;
    // the version shown, in view within the timeline's own scroll
    document.querySelector("#timeline li.current")?.scrollIntoView({ block: "nearest" });
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

  bindKeyForm();
  bindRecord();
  if (!document.getElementById("steps") && sessionStorage.getItem(store)) show();
})();
