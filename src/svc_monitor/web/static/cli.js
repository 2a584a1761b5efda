// The CLI page: a terminal over the /api/cli/ws socket (protocol in console/cli/api.py).
// Output is written with textContent only: replies are server data, never markup.
(() => {
  "use strict";

  const MAX_HISTORY = 200;
  const MAX_ENTRIES = 1000; // output blocks kept on screen; older ones scroll away
  const HISTORY_KEY = "svc-cli-history";

  function start(root) {
    const output = root.querySelector("[data-cli-output]");
    const form = root.querySelector("[data-cli-form]");
    const input = root.querySelector("[data-cli-input]");
    const status = root.querySelector("[data-cli-status]");
    const prompt = root.querySelector(".cli-prompt-label").textContent;
    const connectionId = root.dataset.connectionId || "";

    let socket = null;
    let waiting = []; // commands sent or queued, answered in order
    let queued = []; // typed while the socket was opening
    let history = loadHistory();
    let cursor = history.length;
    let draft = "";

    function socketUrl() {
      const scheme = location.protocol === "https:" ? "wss:" : "ws:";
      const query = connectionId ? `?connectionId=${encodeURIComponent(connectionId)}` : "";
      return `${scheme}//${location.host}/api/cli/ws${query}`;
    }

    function setStatus(text, state) {
      status.textContent = text;
      root.dataset.state = state;
    }

    function append(text, kind) {
      const block = document.createElement("pre");
      block.className = `cli-line cli-${kind}`;
      block.dataset.kind = kind;
      block.textContent = text;
      output.append(block);
      while (output.childElementCount > MAX_ENTRIES) output.firstElementChild.remove();
      output.scrollTop = output.scrollHeight;
      return block;
    }

    function connect() {
      setStatus("Connecting…", "connecting");
      socket = new WebSocket(socketUrl());
      socket.addEventListener("open", () => {
        setStatus("Connected.", "open");
        const pending = queued;
        queued = [];
        pending.forEach(send);
      });
      socket.addEventListener("message", (event) => onMessage(event.data));
      socket.addEventListener("close", (event) => onClose(event));
    }

    function onMessage(data) {
      let frame;
      try {
        frame = JSON.parse(data);
      } catch {
        append("(the server sent something that is not JSON)", "error");
        return;
      }
      waiting.shift();
      if (frame.type === "result") {
        const block = append(frame.result, frame.resultType === "error" ? "error" : "result");
        block.dataset.resultType = frame.resultType;
        block.title = `${frame.durationMs} ms`;
      } else {
        append(frame.error || "(unknown error)", "refused");
      }
    }

    function onClose(event) {
      socket = null;
      for (const _ of waiting) append("(no reply: the connection to svc-monitor closed)", "refused");
      waiting = [];
      const reason = event.reason ? `: ${event.reason}` : "";
      if (event.code === 1000 || event.code === 1001) {
        setStatus("Disconnected; the next command reconnects.", "closed");
      } else {
        setStatus(`Disconnected (${event.code})${reason}. The next command reconnects.`, "closed");
      }
    }

    function send(command) {
      waiting.push(command);
      socket.send(JSON.stringify({ type: "execute", command }));
    }

    function run(command) {
      append(`${prompt} ${command}`, "command");
      remember(command);
      if (socket && socket.readyState === WebSocket.OPEN) {
        send(command);
      } else {
        queued.push(command);
        if (!socket) connect();
      }
    }

    function remember(command) {
      if (history[history.length - 1] !== command) history.push(command);
      history = history.slice(-MAX_HISTORY);
      cursor = history.length;
      draft = "";
      try {
        sessionStorage.setItem(HISTORY_KEY, JSON.stringify(history));
      } catch {
        // storage full or off: history lasts as long as the page
      }
    }

    function walk(step) {
      if (!history.length) return;
      if (cursor === history.length) draft = input.value;
      cursor = Math.min(history.length, Math.max(0, cursor + step));
      input.value = cursor === history.length ? draft : history[cursor];
      input.setSelectionRange(input.value.length, input.value.length);
    }

    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const command = input.value;
      input.value = "";
      if (command.trim() === "") return;
      run(command);
    });

    input.addEventListener("keydown", (event) => {
      if (event.key === "ArrowUp") {
        event.preventDefault();
        walk(-1);
      } else if (event.key === "ArrowDown") {
        event.preventDefault();
        walk(1);
      } else if (event.key.toLowerCase() === "l" && event.ctrlKey) {
        event.preventDefault();
        output.replaceChildren();
      }
    });

    output.addEventListener("click", () => {
      if (!window.getSelection().toString()) input.focus();
    });

    connect();
    input.focus();
  }

  function loadHistory() {
    try {
      const stored = JSON.parse(sessionStorage.getItem(HISTORY_KEY) || "[]");
      return Array.isArray(stored) ? stored.filter((c) => typeof c === "string") : [];
    } catch {
      return [];
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    const root = document.querySelector("[data-cli]");
    if (root) start(root);
  });
})();
