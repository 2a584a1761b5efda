// The Forecast page's charts: each card's samples and its fitted line drawn ahead
// (uPlot), from the JSON the server put in data-chart-data. Redrawn when htmx swaps a card.
"use strict";

(function () {
  const css = (name) => getComputedStyle(document.body).getPropertyValue(name).trim();
  function draw(figure) {
    if (figure.dataset.drawn || typeof uPlot === "undefined") return;
    figure.dataset.drawn = "1";
    const chart = JSON.parse(figure.dataset.chartData);
    const charts = window.svcCharts;
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
    const values = data.slice(1).flat().filter((v) => v != null);
    if (chart.ceiling != null) values.push(chart.ceiling);
    figure.setAttribute("data-point-count", String(chart.points.length));
    if (!times.length) {
      plot.hidden = true;
      charts.showEmpty(figure, "No data in this window");
      return;
    }
    const unit = charts.unitFor(chart.unit, Math.max(...values.map(Math.abs)));
    const value = (u, v) => charts.legendValue(v, unit);
    const series = [
      {},
      { label: charts.withUnit("History", unit), stroke: css("--chart-1"), width: 1.5, spanGaps: false, value },
      { label: charts.withUnit("Projection", unit), stroke: css("--chart-2"), width: 1.5, dash: [6, 4], spanGaps: true, value },
    ];
    if (chart.ceiling != null) {
      data.push(times.map(() => chart.ceiling));
      series.push({ label: charts.withUnit("Ceiling", unit), stroke: css("--chart-3"), width: 1, dash: [2, 3], value });
    }
    const plotter = new uPlot(
      {
        width: plot.clientWidth || 600,
        height: 180,
        scales: { x: { time: true }, y: { range: charts.yRange(chart.unit) } },
        axes: [charts.xAxis(), charts.yAxis(unit, chart.axis)],
        series,
        legend: { show: true },
      },
      data,
      plot
    );
    figure.uplot = plotter; // what the browser tests read the drawn axes from
    new ResizeObserver(() => plotter.setSize({ width: plot.clientWidth, height: 180 })).observe(plot);
  }

  const all = (root) => root.querySelectorAll("[data-forecast-chart]").forEach(draw);
  document.addEventListener("DOMContentLoaded", () => all(document));
  document.addEventListener("htmx:afterSwap", () => all(document));
})();
