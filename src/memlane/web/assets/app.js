// memlane dashboard: the live stream and two small conveniences. No inline script anywhere (the pages'
// Content-Security-Policy allows only this file and htmx). Rows arrive as HTML rendered (and escaped) by the
// server, the same template as the page's own rows.

for (const el of document.querySelectorAll("[data-autosubmit]")) {
  el.addEventListener("change", () => el.form.submit());
}

document.addEventListener("click", (ev) => {
  const el = ev.target.closest("[data-confirm]");
  if (el && !window.confirm(el.dataset.confirm)) ev.preventDefault();
});

function rowsFrom(html) {
  const tpl = document.createElement("template");
  tpl.innerHTML = html;
  return [...tpl.content.children];
}

function live(section) {
  const list = section.querySelector("[data-live-list]");
  const state = section.querySelector("[data-live-state]");
  const pending = section.querySelector("[data-pending]");
  const pauseButton = section.querySelector("[data-pause]");
  const params = new URLSearchParams({ after: section.dataset.after });
  for (const t of (section.dataset.types || "").split(",").filter(Boolean)) params.append("type", t);
  let paused = false;
  const held = [];

  const show = (rows) => {
    for (const row of rows) {
      if (document.getElementById(row.id)) continue; // already shown (a reconnect never repeats, but be sure)
      list.prepend(row);
      row.classList.add("new");
    }
    section.querySelector(".empty")?.remove();
  };
  const showHeld = () => {
    pending.hidden = held.length === 0;
    pending.textContent = `${held.length} new event(s) while paused`;
  };

  const source = new EventSource(`/stream?${params}`);
  source.addEventListener("open", () => { state.className = "dot on"; state.title = "live"; });
  source.addEventListener("error", () => { state.className = "dot off"; state.title = "reconnecting…"; });
  source.addEventListener("memlane", (msg) => {
    const rows = rowsFrom(msg.data);
    if (paused) { held.push(...rows); showHeld(); } else show(rows);
  });
  pauseButton.addEventListener("click", () => {
    paused = !paused;
    pauseButton.textContent = paused ? "Resume" : "Pause";
    pauseButton.setAttribute("aria-pressed", String(paused));
    if (!paused) { show(held.splice(0)); showHeld(); }
  });
  window.addEventListener("pagehide", () => source.close());
}

for (const section of document.querySelectorAll("[data-live]")) live(section);
