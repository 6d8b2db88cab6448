// Stado Desktop: the table refreshes itself (a fixed interval, and as soon
// as the store changes), rows open the inspector, and the operations run
// on the server over the host channel. No framework, nothing from outside.
(function () {
  "use strict";
  const $ = (sel, root) => (root || document).querySelector(sel);
  const csrf = $('meta[name="csrf"]').content;
  const body = document.body;
  // the filters start as the address set them (a summary link), so every
  // refresh keeps them
  const start = new URLSearchParams(location.search);
  const state = { q: start.get("q") || "", mark: start.get("mark") || "", host: start.get("host") || "", service: start.get("service") || "",
    page: Number(start.get("page")) || 1, gen: Number(body.dataset.gen) || 0, seq: 0, lastRefresh: 0 };
  let inflight = null;

  function params() {
    const p = new URLSearchParams();
    if (state.q) p.set("q", state.q);
    if (state.mark) p.set("mark", state.mark);
    if (state.host) p.set("host", state.host);
    if (state.service) p.set("service", state.service);
    if (state.page > 1) p.set("page", String(state.page));
    return p.toString();
  }

  // refresh replaces the table with the server's rendering of the current
  // filter; window.stadoRender records how long it took, for the figures.
  async function refresh(reason) {
    const t0 = performance.now();
    state.lastRefresh = t0;
    if (inflight) inflight.abort();
    const ctl = new AbortController();
    inflight = ctl;
    const seq = ++state.seq;
    try {
      const res = await fetch("/rows?" + params(), { signal: ctl.signal, credentials: "same-origin" });
      const html = await res.text();
      if (seq !== state.seq) return;
      $("#table").innerHTML = html;
      const t1 = performance.now();
      window.stadoRender = { reason: reason, ms: t1 - t0, seq: seq, q: state.q, mark: state.mark };
      body.dataset.renders = String(seq);
      const box = $("#inspector");
      if (!box.hidden && box.dataset.host) inspect(box.dataset.host, box.dataset.service, true);
      $("#live").textContent = "live · " + new Date().toLocaleTimeString();
      $("#live").className = "live";
    } catch (e) {
      if (e.name !== "AbortError") {
        $("#live").textContent = "offline: " + e.message;
        $("#live").className = "live offline";
      }
    } finally {
      if (inflight === ctl) inflight = null;
    }
  }

  // watch waits for the store to change and refreshes at once.
  async function watch() {
    for (;;) {
      try {
        const res = await fetch("/changes?gen=" + state.gen, { credentials: "same-origin" });
        const doc = await res.json();
        if (doc.gen !== state.gen) {
          state.gen = doc.gen;
          // a busy store changes every moment: at most one refresh a second
          const wait = 1000 - (performance.now() - state.lastRefresh);
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          refresh("change");
        }
      } catch (e) {
        await new Promise((r) => setTimeout(r, 2000));
      }
    }
  }

  // inspect shows a row's evidence; the open inspector is read again with
  // every refresh of the table (live), without moving the page.
  async function inspect(host, service, live) {
    const box = $("#inspector");
    const res = await fetch("/inspect?" + new URLSearchParams({ host: host, service: service }), { credentials: "same-origin" });
    const html = await res.text();
    if (live && (box.hidden || box.dataset.host !== host || box.dataset.service !== service)) return;
    const open = Array.from(box.querySelectorAll("details")).map((d) => d.open);
    box.innerHTML = html;
    box.querySelectorAll("details").forEach((d, i) => { if (i < open.length) d.open = open[i]; });
    box.dataset.host = host;
    box.dataset.service = service;
    box.dataset.reads = String(Number(box.dataset.reads || 0) + 1);
    if (!live) {
      box.hidden = false;
      box.scrollIntoView({ block: "start" });
    }
  }

  async function operate(op, host, service, confirm) {
    const out = $("#op-output");
    out.innerHTML = '<p class="running">running ' + op + " on " + host.replace(/[<>&"]/g, "") + "…</p>";
    out.scrollIntoView({ block: "start" });
    let res;
    if (op === "restart" || op === "ensure" || op === "converge" || op === "retire") {
      const form = new URLSearchParams({ host: host, service: service });
      if (confirm) form.set("confirm", confirm);
      res = await fetch("/op/" + op, {
        method: "POST", credentials: "same-origin",
        headers: { "X-Stado-CSRF": csrf, "Content-Type": "application/x-www-form-urlencoded" },
        body: form.toString(),
      });
    } else {
      const q = new URLSearchParams({ host: host });
      if (service && op === "logs") q.set("service", service);
      res = await fetch("/op/" + op + "?" + q.toString(), { credentials: "same-origin" });
    }
    out.innerHTML = await res.text();
    out.dataset.done = String(Number(out.dataset.done || 0) + 1);
  }

  document.addEventListener("submit", (ev) => ev.preventDefault());
  document.addEventListener("input", (ev) => {
    if (ev.target.id === "q") {
      state.q = ev.target.value;
      state.page = 1;
      refresh("filter");
    }
  });
  document.addEventListener("change", (ev) => {
    if (ev.target.id === "mark" || ev.target.id === "host" || ev.target.id === "service") {
      state[ev.target.id] = ev.target.value;
      state.page = 1;
      refresh("filter");
    }
  });
  document.addEventListener("click", (ev) => {
    const t = ev.target;
    const page = t.closest("button.page");
    if (page) {
      state.page = Number(page.dataset.page) || 1;
      refresh("page");
      return;
    }
    if (t.closest("[data-close]")) {
      $("#inspector").hidden = true;
      return;
    }
    const confirmBtn = t.closest("[data-confirm-op]");
    if (confirmBtn) {
      const f = confirmBtn.closest("form");
      operate(f.elements.op.value, f.elements.host.value, f.elements.service.value, f.elements.confirm.value);
      return;
    }
    if (t.closest("[data-cancel]")) {
      $("#op-output").innerHTML = "";
      return;
    }
    const opBtn = t.closest("button[data-op]");
    if (opBtn) {
      const scope = opBtn.closest(".row-ops");
      const host = scope ? scope.dataset.host : $("#op-host").value;
      const service = scope ? scope.dataset.service : $("#op-service").value;
      operate(opBtn.dataset.op, host, service, "");
      return;
    }
    const row = t.closest("tr.row");
    if (row) inspect(row.dataset.host, row.dataset.service);
  });

  setInterval(() => refresh("interval"), Number(body.dataset.refreshMs) || 5000);
  watch();
})();
