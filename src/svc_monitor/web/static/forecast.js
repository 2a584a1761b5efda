// The Forecast page's charts: each card's samples and its fitted line drawn ahead
// (uPlot), from the JSON the server put in data-chart-data. Redrawn when htmx swaps a card.
"use strict";

(function () {
  const css = (name) => getComputedStyle(document.body).getPropertyValue(name).trim();
  const units = {
    bytes: (v) => {
      if (v == null) return "–";
      const names = ["B", "KiB", "MiB", "GiB", "TiB"];
      let i = 0;
      while (Math.abs(v) >= 1024 && i < names.length - 1) { v /= 1024; i++; }
      return (i ? v.toFixed(1) : v.toFixed(0)) + " " + names[i];
    },
    percent: (v) => (v == null ? "–" : v.toFixed(1) + "%"),
    number: (v) => (v == null ? "–" : Number(v.toFixed(2)).toLocaleString()),
  };

  function draw(figure) {
    if (figure.dataset.drawn || typeof uPlot === "undefined") return;
    figure.dataset.drawn = "1";
    const chart = JSON.parse(figure.dataset.chartData);
    const format = units[chart.unit] || units.number;
    const plot = figure.querySelector(".plot");
    // One x axis for both series: every sample time and the line's two ends, in order.
    const times = [...new Set([...chart.points, ...chart.projection].map((p) => p[0]))].sort((a, b) => a - b);
    const actual = new Map(chart.points.map((p) => [p[0], p[1]]));
    const [a, b] = chart.projection.length === 2 ? chart.projection : [null, null];
    const fitted = (t) => (a && b && b[0] !== a[0] ? a[1] + ((b[1] - a[1]) * (t - a[0])) / (b[0] - a[0]) : null);
    const data = [
      times.map((t) => t / 1000),
      times.map((t) => (actual.has(t) ? actual.get(t) : null)),
      times.map((t) => (a && t >= a[0] && t <= b[0] ? fitted(t) : null)),
    ];
    const series = [
      {},
      { label: "history", stroke: css("--chart-1"), width: 1.5, spanGaps: false, value: (u, v) => format(v) },
      { label: "projection", stroke: css("--chart-2"), width: 1.5, dash: [6, 4], spanGaps: true, value: (u, v) => format(v) },
    ];
    if (chart.ceiling != null) {
      data.push(times.map(() => chart.ceiling));
      series.push({ label: "ceiling", stroke: css("--chart-3"), width: 1, dash: [2, 3], value: (u, v) => format(v) });
    }
    const axis = { stroke: css("--muted"), grid: { stroke: css("--grid") }, ticks: { stroke: css("--grid") } };
    figure.setAttribute("data-point-count", String(chart.points.length));
    if (!times.length) {
      const empty = document.createElement("p");
      empty.className = "chart-empty";
      empty.textContent = "No samples in the window yet.";
      figure.append(empty);
      return;
    }
    const plotter = new uPlot(
      {
        width: plot.clientWidth || 600,
        height: 180,
        scales: { x: { time: true } },
        axes: [axis, { ...axis, size: 84, values: (u, values) => values.map(format) }],
        series,
        legend: { show: true },
      },
      data,
      plot
    );
    new ResizeObserver(() => plotter.setSize({ width: plot.clientWidth, height: 180 })).observe(plot);
  }

  const all = (root) => root.querySelectorAll("[data-forecast-chart]").forEach(draw);
  document.addEventListener("DOMContentLoaded", () => all(document));
  document.addEventListener("htmx:afterSwap", () => all(document));
})();
