/* Draw the page's Plotly figures once its text has painted (loaded, deferred, by
 * _ext/book_offline.py on pages that have a figure).
 *
 * plotly.min.js is 4.8 MB: loaded as a plain <script> in <head> it holds back the first
 * paint of every figure page by seconds. Instead, the figure outputs' inline
 * `Plotly.newPlot(id, data, layout, config)` calls are written as
 * `window.__bookPlot(...)` in the built page, and a one-line script in <head> queues
 * them. This script, after the first frame is painted, adds plotly.min.js (from the
 * folder it was loaded from) to the page, draws the queued figures in order, and then
 * loads book_figures.js, which fits every figure to the page's theme and width.
 *
 * Before drawing, each figure's traces and config get the book's fixes that do not
 * depend on the page (the same as helpers.figures.style.polish, for outputs drawn
 * before it had them): a bar fill pattern whose shapes are all empty is dropped, and a
 * pattern over an array of bar colours is drawn in "replace" mode, where each bar's
 * colour is the pattern's background (in the default "overlay" mode Plotly warns
 * "Invalid color specifier: Array(N)" for each bar); on a screen without hover the
 * Plotly toolbar is not shown (it covers the title and cannot be reached by touch), and
 * dragging does not zoom (dragmode false), so a swipe over a figure scrolls the page.
 *
 * RequireJS: plotly.min.js registers itself as an anonymous AMD module when it sees
 * `window.define.amd`; `define` is hidden while it runs and put back after.
 */
(function () {
  "use strict";
  var me = document.currentScript;
  var base = me && me.src ? me.src.replace(/[^\/]*(\?.*)?$/, "") : "_static/";
  var started = false;

  function noHover() {
    return window.matchMedia && window.matchMedia("(hover: none)").matches;
  }

  function fixTrace(t) {
    var m = t && t.marker;
    if (!m || !m.pattern) return;
    var shape = m.pattern.shape;
    var shapes = Array.isArray(shape) ? shape : [shape];
    if (shapes.every(function (s) { return !s; })) {
      delete m.pattern;
    } else if (Array.isArray(m.color)) {
      m.pattern.fillmode = "replace";
    }
  }

  function fixArgs(args) {
    args = Array.prototype.slice.call(args);
    (args[1] || []).forEach(fixTrace);
    var cfg = Object.assign({}, args[3] || {});
    if (noHover()) {
      cfg.displayModeBar = false;
      // a swipe that starts on a figure scrolls the page instead of zooming the axes
      // (Plotly's dragmode false; sliders and taps on the figure still work)
      args[2] = Object.assign({}, args[2] || {}, {dragmode: false});
    }
    args[3] = cfg;
    return args;
  }

  function newPlot(args) {
    return window.Plotly.newPlot.apply(window.Plotly, fixArgs(args));
  }

  function loadScript(src, done) {
    var s = document.createElement("script");
    s.src = src;
    s.onload = function () { done(true); };
    s.onerror = function () { done(false); };
    document.head.appendChild(s);
  }

  function drawAll() {
    var queued = window.__bookPlots || [];
    window.__bookPlots = [];
    window.__bookPlot = function () { return newPlot(arguments); };
    var drawn = queued.map(function (q) {
      var p;
      try { p = newPlot(q[0]); } catch (e) { p = Promise.reject(e); }
      q[1](p);
      return Promise.resolve(p).catch(function (e) { console.error(e); });
    });
    Promise.all(drawn).then(function () {
      loadScript(base + "book_figures.js", function () {});
    });
  }

  function load() {
    if (started) return;
    started = true;
    var saved = window.define;
    window.define = undefined;
    loadScript(base + "plotly.min.js", function (ok) {
      if (saved !== undefined) window.define = saved;
      if (ok) drawAll();
    });
  }

  // after the first frame: the page's text paints before 4.8 MB of script is parsed
  function afterPaint() {
    if (window.requestAnimationFrame) {
      window.requestAnimationFrame(function () { setTimeout(load, 0); });
    }
    setTimeout(load, 250);      // rAF does not run in a hidden tab
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", afterPaint);
  } else {
    afterPaint();
  }
})();
