// MONITOR page: the live tail of one capture over /api/monitor/ws, with pause and a
// command filter. Everything else on the page is server-rendered (htmx).
"use strict";

(function () {
  const root = document.querySelector("[data-monitor-tail]");
  if (!root) return;

  // At most this many rows in the page; while paused, at most this many lines held back.
  const MAX_ROWS = 1000;
  const MAX_HELD = 2000;

  const rows = root.querySelector("[data-tail-lines]");
  const scroller = root.querySelector("[data-tail-scroll]");
  const status = root.querySelector("[data-tail-status]");
  const pauseButton = root.querySelector("[data-tail-pause]");
  const filterInput = root.querySelector("[data-tail-filter]");
  let paused = false;
  let held = [];
  let heldDropped = 0;
  let ended = false;
  let filter = "";

  const say = (text) => { status.textContent = text; };

  // --- one row per line; text only (textContent), never HTML ---
  const pad = (n, width) => String(n).padStart(width, "0");
  function clock(ms) {
    if (ms == null) return "";
    const t = new Date(ms);
    return pad(t.getHours(), 2) + ":" + pad(t.getMinutes(), 2) + ":" + pad(t.getSeconds(), 2) +
      "." + pad(t.getMilliseconds(), 3);
  }
  function quoted(arg) {
    return /^[^\s"'\\]+$/.test(arg) ? arg : JSON.stringify(arg);
  }
  function cell(text, className) {
    const td = document.createElement("td");
    if (className) td.className = className;
    td.textContent = text;
    return td;
  }
  function rowFor(line) {
    const tr = document.createElement("tr");
    tr.dataset.seq = String(line.seq);
    tr.dataset.command = line.command || "";
    tr.dataset.tailLine = "";
    if (line.command == null) {
      tr.append(cell(""), cell(""), cell(""), cell(line.raw || "", "tail-raw"));
    } else {
      const args = document.createElement("td");
      args.className = "tail-args";
      const name = document.createElement("span");
      name.className = "tail-command";
      name.textContent = line.command;
      const rest = line.args.map(quoted).join(" ") + (line.shortened ? " …" : "");
      args.append(name, document.createTextNode(rest ? " " + rest : ""));
      tr.append(cell(clock(line.tsMs)), cell(String(line.db), "num"), cell(line.client || ""), args);
    }
    tr.hidden = !matches(tr);
    return tr;
  }
  function gapRow(text) {
    const tr = document.createElement("tr");
    tr.className = "tail-gap";
    const td = cell(text);
    td.colSpan = 4;
    tr.append(td);
    return tr;
  }

  function show(lines) {
    const nearBottom = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 40;
    const fragment = document.createDocumentFragment();
    for (const line of lines) fragment.append(rowFor(line));
    rows.append(fragment);
    while (rows.children.length > MAX_ROWS) rows.firstElementChild.remove();
    if (nearBottom) scroller.scrollTop = scroller.scrollHeight;
  }
  function hold(lines) {
    for (const line of lines) {
      if (held.length >= MAX_HELD) { held.shift(); heldDropped += 1; }
      held.push(line);
    }
    say("Paused: " + held.length + " new line" + (held.length === 1 ? "" : "s") + " waiting.");
  }
  function missed(count, reason) {
    const why = reason === "backlog"
      ? " earlier lines not shown here (the export has them)"
      : " lines skipped: this page fell behind (the export has them)";
    rows.append(gapRow(count.toLocaleString() + why));
  }

  // --- filter by command: rows whose command starts with what is typed ---
  function matches(tr) {
    return !filter || (tr.dataset.command || "").startsWith(filter);
  }
  filterInput.addEventListener("input", () => {
    filter = filterInput.value.trim().toUpperCase();
    for (const tr of rows.querySelectorAll("tr[data-tail-line]")) tr.hidden = !matches(tr);
  });

  pauseButton.addEventListener("click", () => {
    paused = !paused;
    pauseButton.setAttribute("aria-pressed", String(paused));
    pauseButton.textContent = paused ? "Resume" : "Pause";
    if (paused) {
      hold([]);
      return;
    }
    if (heldDropped) missed(heldDropped, "paused");
    show(held);
    held = [];
    heldDropped = 0;
    say(ended ? "The capture has ended." : "Live.");
  });

  // --- the socket ---
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const socket = new WebSocket(scheme + "//" + location.host +
    "/api/monitor/ws?sessionId=" + encodeURIComponent(root.dataset.sessionId));
  socket.addEventListener("message", (event) => {
    let frame;
    try {
      frame = JSON.parse(event.data);
    } catch (_) {
      return;
    }
    if (frame.type === "session") {
      say(frame.session.status === "running" ? "Live." : "The capture has ended.");
    } else if (frame.type === "lines") {
      if (paused) hold(frame.lines);
      else show(frame.lines);
    } else if (frame.type === "missed") {
      missed(frame.count, frame.reason);
    } else if (frame.type === "status") {
      ended = true;
      const s = frame.session;
      say("The capture has ended (" + (s.endReason || s.status) + "): " +
        s.lineCount.toLocaleString() + " lines.");
      document.body.dispatchEvent(new CustomEvent("monitor:ended"));
    } else if (frame.type === "error") {
      say(frame.error);
    }
  });
  socket.addEventListener("close", (event) => {
    if (ended) return;
    say(event.code === 1008 ? "Disconnected: sign in again to follow this capture."
      : "Disconnected from svc-monitor; reload to follow the capture again.");
  });
})();
