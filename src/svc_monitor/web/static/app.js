// svc-monitor UI: dialogs, the quick-connect box, PEM files, local times and the history charts.
// Pages are rendered on the server; this script only adds what HTML cannot do alone.
"use strict";

(function () {
  const connectionId = () => document.body.dataset.connectionId || "";

  // --- dialogs: htmx swaps a <dialog> into #dialog-host; show it as a modal ---
  document.addEventListener("htmx:afterSwap", (event) => {
    const dialog = event.detail.target.querySelector(":scope > dialog");
    if (dialog && !dialog.open) {
      dialog.addEventListener("close", () => dialog.remove());
      dialog.showModal();
    }
    enhance(event.detail.target);
  });
  document.addEventListener("click", (event) => {
    const close = event.target.closest("[data-close-dialog]");
    if (close) close.closest("dialog").close();
  });

  // --- refusals: a 403 (a member asking for an admin's change) or a failure says so ---
  const toast = (message) => {
    const box = document.getElementById("toast");
    if (!box) return;
    box.replaceChildren();
    const text = document.createElement("span");
    text.textContent = message;
    const close = document.createElement("button");
    close.type = "button";
    close.className = "quiet toast-close";
    close.setAttribute("aria-label", "Dismiss");
    close.textContent = "✕";
    close.addEventListener("click", () => { box.hidden = true; });
    box.append(text, close);
    box.hidden = false;
  };
  document.addEventListener("htmx:responseError", (event) => {
    const xhr = event.detail.xhr;
    if (xhr.status === 401) {
      location.assign("/login?next=" + encodeURIComponent(location.pathname + location.search));
      return;
    }
    let message = xhr.statusText || "The request failed (" + xhr.status + ")";
    try {
      const body = JSON.parse(xhr.responseText);
      if (body && body.message) message = body.message;
    } catch (_) {
      // not JSON: keep the status text
    }
    toast(message);
  });
  document.addEventListener("htmx:sendError", () => {
    toast("svc-monitor did not answer; check that it is running.");
  });

  // --- a secret shown once (an invitation link, an API token): copy it ---
  document.addEventListener("click", async (event) => {
    const button = event.target.closest("[data-copy]");
    if (!button) return;
    const source = document.querySelector(button.dataset.copy);
    if (!source) return;
    const text = source.textContent.trim();
    try {
      await navigator.clipboard.writeText(text);
      button.textContent = "Copied";
    } catch (_) {
      // No clipboard on a plain-http origin other than localhost: select it for Ctrl+C.
      const range = document.createRange();
      range.selectNodeContents(source);
      const selection = getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      button.textContent = "Selected: press Ctrl+C";
    }
  });

  // --- quick connect: a URL or host:port fills the fields it names ---
  document.addEventListener("change", (event) => {
    const input = event.target;
    if (input.name !== "quick" || !input.form) return;
    const fields = parseQuickConnect(input.value.trim());
    if (!fields) return;
    const form = input.form;
    for (const [name, value] of Object.entries(fields)) {
      const field = form.elements.namedItem(name);
      if (!field) continue;
      if (field.type === "checkbox") field.checked = Boolean(value);
      else field.value = value;
    }
  });

  function parseQuickConnect(text) {
    if (!text) return null;
    const match = /^(redis|rediss|valkey|valkeys):\/\//i.exec(text);
    if (match) {
      let url;
      try {
        url = new URL(text);
      } catch (_) {
        return null; // the server names what is wrong when the form is sent
      }
      const scheme = match[1].toLowerCase();
      const tls = scheme === "rediss" || scheme === "valkeys";
      return {
        host: url.hostname.replace(/^\[|\]$/g, ""),
        port: url.port || "6379",
        username: decodeURIComponent(url.username || ""),
        password: decodeURIComponent(url.password || ""),
        tls: tls,
      };
    }
    const hostPort = /^(\[[^\]]+\]|[^:\s]+):(\d{1,5})$/.exec(text);
    if (hostPort) return { host: hostPort[1].replace(/^\[|\]$/g, ""), port: hostPort[2] };
    return { host: text };
  }

  // --- PEM files (connection dialog): the file's text goes into the text area it names,
  // so the form stays urlencoded and the server checks the text as if it were pasted ---
  const PEM_FILE_MAX_BYTES = 256 * 1024; // the API's largest PEM field (a CA bundle)
  document.addEventListener("change", async (event) => {
    const input = event.target;
    if (!(input instanceof HTMLInputElement) || !input.form || !input.dataset.pemInto) return;
    const file = input.files && input.files[0];
    const area = input.form.elements.namedItem(input.dataset.pemInto);
    if (!file || !area) return;
    if (file.size > PEM_FILE_MAX_BYTES) {
      input.value = "";
      toast(file.name + " is larger than 256 KiB: not a certificate or key.");
      return;
    }
    area.value = await file.text();
  });

  // --- times: the server writes UTC; show them in the browser's zone ---
  function localTimes(root) {
    for (const el of root.querySelectorAll("time[data-local]")) {
      const when = new Date(el.getAttribute("datetime"));
      if (!isNaN(when)) el.textContent = when.toLocaleString();
    }
  }

  // --- charts: every [data-charts] block fetches its source and draws [data-chart]s ---
  const css = (name) => getComputedStyle(document.body).getPropertyValue(name).trim();

  const formatters = {
    bytes: (v) => {
      if (v == null) return "–";
      const units = ["B", "KiB", "MiB", "GiB", "TiB"];
      let i = 0;
      while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
      return (i ? v.toFixed(1) : v.toFixed(0)) + " " + units[i];
    },
    percent: (v) => (v == null ? "–" : v.toFixed(1) + "%"),
    ratio: (v) => (v == null ? "–" : (100 * v).toFixed(1) + "%"),
    us: (v) => (v == null ? "–" : v < 1000 ? v.toFixed(0) + " µs" : (v / 1000).toFixed(1) + " ms"),
    number: (v) => (v == null ? "–" : Number(v.toFixed(2)).toLocaleString()),
  };

  class ChartBlock {
    constructor(root) {
      this.root = root;
      this.range = Number(root.dataset.range || 3600000);
      this.charts = new Map();
      this.timer = null;
      for (const button of root.querySelectorAll("button[data-range]")) {
        button.addEventListener("click", () => this.choose(button));
      }
      this.refresh();
    }

    choose(button) {
      for (const b of this.root.querySelectorAll("button[data-range]")) {
        b.setAttribute("aria-pressed", String(b === button));
      }
      this.range = Number(button.dataset.range);
      this.refresh();
    }

    async refresh() {
      clearTimeout(this.timer);
      if (!this.root.isConnected) return;
      const sources = new Map();
      for (const figure of this.root.querySelectorAll("[data-chart]")) {
        const source = figure.dataset.source || this.root.dataset.source;
        if (!sources.has(source)) sources.set(source, []);
        sources.get(source).push(figure);
      }
      const to = Date.now();
      const from = to - this.range;
      await Promise.all(
        [...sources].map(async ([source, figures]) => {
          const width = Math.max(...figures.map((f) => f.clientWidth || 600));
          const url = new URL(source, location.origin);
          url.searchParams.set("from", String(from));
          url.searchParams.set("to", String(to));
          if (!url.searchParams.has("maxPoints")) {
            url.searchParams.set("maxPoints", String(Math.min(1000, Math.max(60, Math.round(width / 2)))));
          }
          try {
            const response = await fetch(url, { headers: { "X-Connection-Id": connectionId() } });
            const body = await response.json();
            if (!response.ok) throw new Error(body.message || response.statusText);
            for (const figure of figures) this.draw(figure, body, from, to);
          } catch (error) {
            for (const figure of figures) this.fail(figure, error.message);
          }
        })
      );
      const every = Number(this.root.dataset.refresh || 0);
      if (every > 0) this.timer = setTimeout(() => this.refresh(), every);
    }

    draw(figure, body, from, to) {
      const pointsKey = figure.dataset.points || this.root.dataset.points || "points";
      const timeKey = figure.dataset.time || this.root.dataset.time || "t";
      const points = pointsKey === "." ? body : body[pointsKey] || [];
      const keys = figure.dataset.series.split(",");
      const labels = (figure.dataset.labels || figure.dataset.series).split(",");
      const data = [points.map((p) => p[timeKey] / 1000)];
      for (const key of keys) data.push(points.map((p) => (p[key] == null ? null : p[key])));
      const plot = figure.querySelector(".plot");
      figure.setAttribute("data-point-count", String(points.length));
      let empty = figure.querySelector(".chart-empty");
      if (!points.length) {
        if (!empty) {
          empty = document.createElement("p");
          empty.className = "chart-empty";
          figure.append(empty);
        }
        empty.textContent = "No samples in this range yet.";
      } else if (empty) {
        empty.remove();
      }
      const existing = this.charts.get(figure);
      if (existing && existing.keys === keys.length) {
        existing.plot.setScale("x", { min: from / 1000, max: to / 1000 });
        existing.plot.setData(data, false);
        existing.plot.setScale("x", { min: from / 1000, max: to / 1000 });
        return;
      }
      if (existing) existing.plot.destroy();
      const format = formatters[figure.dataset.unit] || formatters.number;
      const colors = [css("--chart-1"), css("--chart-2"), css("--chart-3")];
      const axis = { stroke: css("--muted"), grid: { stroke: css("--grid") }, ticks: { stroke: css("--grid") } };
      const plotter = new uPlot(
        {
          width: plot.clientWidth || 600,
          height: 180,
          scales: { x: { time: true, range: () => [from / 1000, to / 1000] } },
          axes: [axis, { ...axis, size: 70, values: (u, values) => values.map(format) }],
          series: [
            {},
            ...labels.map((label, i) => ({
              label,
              stroke: colors[i % colors.length],
              width: 1.5,
              spanGaps: false,
              value: (u, v) => format(v),
              points: { show: points.length < 60 },
            })),
          ],
          legend: { show: true },
        },
        data,
        plot
      );
      this.charts.set(figure, { plot: plotter, keys: keys.length });
      new ResizeObserver(() => plotter.setSize({ width: plot.clientWidth, height: 180 })).observe(plot);
    }

    fail(figure, message) {
      figure.setAttribute("data-error", message);
      let note = figure.querySelector(".chart-empty");
      if (!note) {
        note = document.createElement("p");
        note.className = "chart-empty";
        figure.append(note);
      }
      note.textContent = "Could not load: " + message;
    }
  }

  function enhance(root) {
    localTimes(root);
    if (typeof uPlot === "undefined") return;
    for (const block of root.querySelectorAll("[data-charts]")) {
      if (!block.chartBlock) block.chartBlock = new ChartBlock(block);
    }
  }

  document.addEventListener("DOMContentLoaded", () => enhance(document));
})();
