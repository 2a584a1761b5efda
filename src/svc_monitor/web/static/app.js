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

  // A chart's unit, picked from the largest value drawn so the axis reads "12.5" under
  // "Used memory (MiB)" rather than 13107200. `div` turns a raw value into that unit.
  const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];
  function unitFor(kind, max, named) {
    if (kind === "bytes") {
      let i = 0;
      while (max >= 1024 ** (i + 1) && i < BYTE_UNITS.length - 1) i++;
      return { name: BYTE_UNITS[i], div: 1024 ** i };
    }
    if (kind === "percent") return { name: "%", div: 1 };
    if (kind === "ratio") return { name: "%", div: 0.01 };
    if (kind === "us") return max >= 1000 ? { name: "ms", div: 1000 } : { name: "µs", div: 1 };
    return { name: named || "", div: 1 };
  }

  const withUnit = (words, unit) => (unit.name ? words + " (" + unit.name + ")" : words);

  // A value in the legend: three significant digits at most, grouped like the page's numbers.
  function legendValue(v, unit) {
    if (v == null) return "–";
    const x = v / unit.div;
    const digits = Math.abs(x) >= 100 ? 0 : Math.abs(x) >= 10 ? 1 : 2;
    return Number(x.toFixed(digits)).toLocaleString(undefined, { maximumFractionDigits: digits });
  }

  // Steps between ticks: 1, 2 or 5 times a power of ten in the chart's unit (0.5 MiB, not
  // 524288 B), so each label needs only the decimals of its step ("7.5" is never shown
  // as "8" beside a "5").
  function tickSteps(unit) {
    const steps = [];
    for (let e = -4; e <= 15; e++) for (const m of [1, 2, 5]) steps.push(m * 10 ** e * unit.div);
    return steps;
  }

  // Tick labels: the decimals the step needs, and more while two ticks would still read
  // the same (a CPU axis of 0.10, 0.12, 0.14 must not say 0.1 thrice).
  function tickLabels(splits, incr, unit) {
    const step = Math.abs(incr / unit.div) || 1;
    let digits = 0;
    while (digits < 6 && Math.abs(step * 10 ** digits - Math.round(step * 10 ** digits)) > 1e-6) digits++;
    const render = (d) =>
      splits.map((v) => (v / unit.div).toLocaleString(undefined, { minimumFractionDigits: d, maximumFractionDigits: d }));
    let labels = render(digits);
    while (new Set(labels).size < labels.length && digits < 6) labels = render(++digits);
    return labels;
  }

  // The y scale: ratios run 0 to 100 % and no further; a series that never goes below
  // zero gets no negative axis.
  function yRange(kind) {
    return (u, min, max) => {
      if (kind === "ratio") return [0, 1];
      if (min == null || max == null) return [0, 1];
      const [lo, hi] = uPlot.rangeNum(min, max, 0.1, true);
      return [min >= 0 ? Math.max(0, lo) : lo, hi];
    };
  }

  // Axis text in the page's font at 13 px (uPlot's own is 12 px) and in the text colour,
  // which is past 7:1 (WCAG AAA) on the chart's panel in both themes; the muted grey was
  // 6:1 at 12 px on a canvas a phone shrinks.
  const AXIS_PX = 13;
  const axisFont = (weight) => weight + " " + AXIS_PX + "px " + getComputedStyle(document.body).fontFamily;
  const measure = document.createElement("canvas").getContext("2d");
  // A y axis as wide as its widest tick label ("120,000" needs more than "40"), so none
  // is clipped at the left edge.
  const labelsWidth = (values) => {
    measure.font = axisFont("400");
    return Math.max(0, ...(values || []).map((v) => measure.measureText(String(v)).width));
  };

  // The time axis: ticks at least 90 px apart, so two-line labels ("10:30pm" over
  // "12/1/26") never touch, even on a phone's narrow chart.
  function xAxis() {
    return {
      stroke: css("--text"),
      font: axisFont("400"),
      grid: { stroke: css("--grid") },
      ticks: { stroke: css("--grid") },
      space: 90,
      size: 54,
    };
  }

  function yAxis(unit, words) {
    return {
      stroke: css("--text"),
      font: axisFont("400"),
      labelFont: axisFont("600"),
      grid: { stroke: css("--grid") },
      ticks: { stroke: css("--grid") },
      label: withUnit(words, unit),
      labelSize: 22,
      size: (u, values) => Math.max(48, Math.ceil(labelsWidth(values)) + 18),
      space: 28,
      incrs: tickSteps(unit),
      values: (u, splits, axisIdx, space, incr) => tickLabels(splits, incr, unit),
    };
  }

  function showEmpty(figure, text) {
    let note = figure.querySelector(".chart-empty");
    if (!note) {
      note = document.createElement("p");
      note.className = "chart-empty";
      figure.append(note);
    }
    note.textContent = text;
  }

  // For forecast.js: the same units, axes and empty state.
  window.svcCharts = { unitFor, withUnit, legendValue, xAxis, yAxis, yRange, showEmpty };

  // --- the window the charts show: a preset or a custom from/to, kept in the URL so a
  // reload or a shared link shows the same window ---
  const pad = (n) => String(n).padStart(2, "0");
  // <input type="datetime-local"> speaks the browser's local time without a zone.
  const localInput = (ms) => {
    const d = new Date(ms);
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + "T" + pad(d.getHours()) + ":" + pad(d.getMinutes());
  };
  const isoMinute = (ms) => new Date(ms).toISOString().replace(/:\d\d\.\d{3}Z$/, "Z");

  function rangeFromUrl() {
    const params = new URLSearchParams(location.search);
    const from = Date.parse(params.get("from") || "");
    const to = Date.parse(params.get("to") || "");
    if (!isNaN(from) && !isNaN(to) && from < to) return { from, to };
    const preset = params.get("range");
    return preset ? { preset } : null;
  }

  function rangeToUrl(range) {
    const url = new URL(location.href);
    for (const name of ["range", "from", "to"]) url.searchParams.delete(name);
    if (range.preset) url.searchParams.set("range", range.preset);
    else {
      url.searchParams.set("from", isoMinute(range.from));
      url.searchParams.set("to", isoMinute(range.to));
    }
    history.replaceState(history.state, "", url);
  }

  // Every chart block on the page follows one window (a block without that preset keeps its own).
  const applyEverywhere = (range) => {
    rangeToUrl(range);
    for (const block of document.querySelectorAll("[data-charts]")) {
      if (block.chartBlock) block.chartBlock.apply(range);
    }
  };

  class ChartBlock {
    constructor(root) {
      this.root = root;
      this.range = Number(root.dataset.range || 3600000);
      this.fixed = null; // {from, to} of a custom window
      this.charts = new Map();
      this.timer = null;
      for (const button of root.querySelectorAll("button[data-range]")) {
        button.addEventListener("click", () => applyEverywhere({ preset: button.dataset.rangeKey }));
      }
      const form = root.querySelector("form[data-range-custom]");
      if (form) form.addEventListener("submit", (event) => this.submitCustom(event, form));
      const chosen = rangeFromUrl();
      if (chosen) this.apply(chosen, { draw: false });
      this.refresh();
    }

    apply(range, { draw = true } = {}) {
      const buttons = [...this.root.querySelectorAll("button[data-range]")];
      if (range.preset) {
        const button = buttons.find((b) => b.dataset.rangeKey === range.preset);
        if (!button) return;
        this.range = Number(button.dataset.range);
        this.fixed = null;
      } else {
        this.fixed = { from: range.from, to: range.to };
        const form = this.root.querySelector("form[data-range-custom]");
        if (form) {
          form.elements.namedItem("from").value = localInput(range.from);
          form.elements.namedItem("to").value = localInput(range.to);
        }
      }
      for (const b of buttons) {
        b.setAttribute("aria-pressed", String(!this.fixed && Number(b.dataset.range) === this.range));
      }
      this.root.dataset.window = this.fixed ? "custom" : "preset";
      if (draw) this.refresh();
    }

    submitCustom(event, form) {
      event.preventDefault();
      const from = new Date(form.elements.namedItem("from").value).getTime();
      const to = new Date(form.elements.namedItem("to").value).getTime();
      const error = form.querySelector(".range-error");
      if (isNaN(from) || isNaN(to)) {
        error.textContent = "Enter both From and To.";
        return;
      }
      if (from >= to) {
        error.textContent = "From must be before To.";
        return;
      }
      error.textContent = "";
      applyEverywhere({ from, to });
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
      const to = this.fixed ? this.fixed.to : Date.now();
      const from = this.fixed ? this.fixed.from : to - this.range;
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
      // A custom window that has ended does not change: nothing to poll for.
      const every = Number(this.root.dataset.refresh || 0);
      if (every > 0 && !(this.fixed && this.fixed.to < Date.now())) {
        this.timer = setTimeout(() => this.refresh(), every);
      }
    }

    draw(figure, body, from, to) {
      const pointsKey = figure.dataset.points || this.root.dataset.points || "points";
      const timeKey = figure.dataset.time || this.root.dataset.time || "t";
      const points = pointsKey === "." ? body : body[pointsKey] || [];
      const keys = figure.dataset.series.split(",");
      const caption = figure.querySelector("figcaption").textContent.trim();
      // Legends say what a line is in words; the caption stands in for a lone unnamed series.
      const labels = figure.dataset.labels ? figure.dataset.labels.split(",") : keys.length === 1 ? [caption] : keys;
      const data = [points.map((p) => p[timeKey] / 1000)];
      for (const key of keys) data.push(points.map((p) => (p[key] == null ? null : p[key])));
      const plot = figure.querySelector(".plot");
      const values = data.slice(1).flat().filter((v) => v != null);
      figure.setAttribute("data-point-count", String(values.length ? points.length : 0));
      const existing = this.charts.get(figure);
      if (!values.length) {
        if (existing) existing.plot.destroy();
        this.charts.delete(figure);
        plot.hidden = true;
        figure.removeAttribute("data-error");
        showEmpty(figure, "No data in this window");
        return;
      }
      plot.hidden = false;
      const empty = figure.querySelector(".chart-empty");
      if (empty) empty.remove();
      const kind = figure.dataset.unit;
      const unit = unitFor(kind, Math.max(...values.map(Math.abs)), figure.dataset.unitName);
      if (existing && existing.keys === keys.length && existing.unit === unit.name) {
        existing.window.from = from;
        existing.window.to = to;
        existing.plot.setScale("x", { min: from / 1000, max: to / 1000 });
        existing.plot.setData(data, false);
        existing.plot.setScale("x", { min: from / 1000, max: to / 1000 });
        return;
      }
      if (existing) existing.plot.destroy();
      const window_ = { from, to };
      const colors = [css("--chart-1"), css("--chart-2"), css("--chart-3")];
      const plotter = new uPlot(
        {
          width: plot.clientWidth || 600,
          height: 180,
          scales: {
            x: { time: true, range: () => [window_.from / 1000, window_.to / 1000] },
            y: { range: yRange(kind) },
          },
          axes: [xAxis(), yAxis(unit, figure.dataset.axis || caption)],
          series: [
            {},
            ...labels.map((label, i) => ({
              label: withUnit(label, unit),
              stroke: colors[i % colors.length],
              width: 1.5,
              spanGaps: false,
              value: (u, v) => legendValue(v, unit),
              points: { show: points.length < 60 },
            })),
          ],
          legend: { show: true },
        },
        data,
        plot
      );
      figure.uplot = plotter; // what the browser tests read the drawn axes from
      this.charts.set(figure, { plot: plotter, keys: keys.length, unit: unit.name, window: window_ });
      new ResizeObserver(() => plotter.setSize({ width: plot.clientWidth, height: 180 })).observe(plot);
    }

    fail(figure, message) {
      figure.setAttribute("data-error", message);
      showEmpty(figure, "Could not load: " + message);
    }
  }

  // --- navigation on a narrow screen: the Menu button opens and closes it ---
  document.addEventListener("click", (event) => {
    const toggle = event.target.closest("[data-nav-toggle]");
    if (!toggle) return;
    const nav = document.getElementById(toggle.getAttribute("aria-controls"));
    const open = toggle.getAttribute("aria-expanded") !== "true";
    toggle.setAttribute("aria-expanded", String(open));
    nav.classList.toggle("open", open);
    if (open) nav.querySelector("a").focus();
  });
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    const nav = event.target.closest && event.target.closest("#nav.open");
    const toggle = document.querySelector("[data-nav-toggle]");
    if (!nav || !toggle) return;
    toggle.setAttribute("aria-expanded", "false");
    nav.classList.remove("open");
    toggle.focus();
  });

  // --- wide tables scroll in their own box: a keyboard user tabs to the box and scrolls it
  // with the arrow keys, and a screen reader hears which table the box holds ---
  function tableBoxes(root) {
    const boxes = [...root.querySelectorAll(".table-wrap")];
    if (root.matches && root.matches(".table-wrap")) boxes.push(root); // an htmx swap of the box itself
    for (const box of boxes) {
      if (box.hasAttribute("tabindex")) continue;
      const table = box.querySelector("table");
      box.tabIndex = 0;
      box.setAttribute("role", "region");
      const caption = table && table.querySelector("caption");
      const heading = box.closest("section, dialog, main")?.querySelector("h1, h2, h3");
      const name = (table && table.getAttribute("aria-label")) || (caption && caption.textContent) || (heading && heading.textContent) || "Table";
      box.setAttribute("aria-label", name.trim());
    }
  }

  // --- a list's custom window (the slow log's filters): the form sends epoch ms, which
  // the browser alone can read its local From/To as; a preset window clears it ---
  function epochFields(root) {
    for (const input of root.querySelectorAll("input[data-epoch-into]")) {
      const hidden = input.form && input.form.elements.namedItem(input.dataset.epochInto);
      if (hidden && hidden.value) input.value = localInput(Number(hidden.value));
    }
  }
  document.addEventListener("change", (event) => {
    const input = event.target;
    const form = input.form;
    if (!form) return;
    if (input.dataset && input.dataset.epochInto) {
      const ms = new Date(input.value).getTime();
      form.elements.namedItem(input.dataset.epochInto).value = isNaN(ms) ? "" : String(ms);
      const preset = form.elements.namedItem("window");
      if (preset && !isNaN(ms)) preset.value = "";
    } else if (input.name === "window") {
      for (const field of form.querySelectorAll("input[data-epoch-into]")) {
        field.value = "";
        form.elements.namedItem(field.dataset.epochInto).value = "";
      }
    }
  });

  function enhance(root) {
    localTimes(root);
    tableBoxes(root);
    epochFields(root);
    if (typeof uPlot === "undefined") return;
    for (const block of root.querySelectorAll("[data-charts]")) {
      if (!block.chartBlock) block.chartBlock = new ChartBlock(block);
    }
  }

  document.addEventListener("DOMContentLoaded", () => enhance(document));
})();
