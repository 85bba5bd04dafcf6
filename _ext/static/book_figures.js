/* The book's Plotly figures follow the page (loaded by _ext/book_offline.py on pages
 * that have figures).
 *
 * Theme: the committed notebooks carry each figure's layout as it was drawn, so the
 * colours that depend on the page's theme are set here, on load and whenever
 * pydata-sphinx-theme switches <html data-theme="light|dark">: transparent paper and
 * plot backgrounds, text, grid and axis-line colours, and the colours of sliders and
 * buttons.
 *
 * Width: on a narrow screen a title, a subplot title or an axis title that does not fit
 * is wrapped at a space (a <br>), and the margin grows to hold it; a title that a
 * slider sets is wrapped when the slider sets it. Reference lines drawn in a dark ink
 * take the theme's colour.
 *
 * Fit (measured once the figure is drawn, at any width, a few rounds at most): numeric
 * tick labels that overlap are thinned, names on an axis (categories) are turned, set
 * smaller or given room but never left out, a legend or a slider under the plot moves below the
 * x tick labels and axis titles, text past an edge gets margin, overlapping notes move
 * apart, heatmap numbers too big for their cells are set smaller or left to the hover, a legend
 * entry wider than the figure is set in a smaller font. Every change is
 * to the layout as the page draws it; the committed figure data stay as they are.
 */
(function () {
  "use strict";
  var CLEAR = "rgba(0,0,0,0)";
  var COLORS = {
    light: {text: "#262626", ref: "#404040", grid: "rgba(128,128,128,0.28)", line: "rgba(128,128,128,0.75)",
            menu: "#f4f5f7", menuBorder: "#b8c0cc", menuActive: "#d7dbe0"},
    dark: {text: "#d9dde3", ref: "#c8ccd2", grid: "rgba(170,170,170,0.22)", line: "rgba(170,170,170,0.6)",
           menu: "#2c3037", menuBorder: "#5c6470", menuActive: "#4a515c"}
  };

  function mode() {
    return document.documentElement.getAttribute("data-theme") === "dark" ? "dark" : "light";
  }

  function graphs() {
    return Array.prototype.filter.call(document.querySelectorAll(".plotly-graph-div"),
      function (gd) { return gd._fullLayout && gd.layout && window.Plotly; });
  }

  function axisNames(gd) {
    return Object.keys(gd._fullLayout).filter(function (k) { return /^[xy]axis\d*$/.test(k); });
  }

  /* A colour dark enough to vanish on a dark page (black, #444, the template's slate). */
  function ink(col) {
    if (typeof col !== "string") return false;
    var m = col.replace(/\s/g, "").match(/^rgba?\((\d+),(\d+),(\d+)/i), rgb = null;
    if (m) rgb = [+m[1], +m[2], +m[3]];
    else if (/^#[0-9a-f]{6}$/i.test(col)) rgb = [1, 3, 5].map(function (k) { return parseInt(col.substr(k, 2), 16); });
    else if (/^#[0-9a-f]{3}$/i.test(col)) rgb = [1, 2, 3].map(function (k) { return 17 * parseInt(col[k], 16); });
    else if (col === "black") rgb = [0, 0, 0];
    if (!rgb) return false;
    return 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2] < 0.4 * 255;
  }

  function themeUpdate(gd) {
    var c = COLORS[mode()], fl = gd._fullLayout;
    var u = {paper_bgcolor: CLEAR, plot_bgcolor: CLEAR, "font.color": c.text,
             "legend.bgcolor": CLEAR,
             // the title hangs from the top, so that lines added below stay in the margin
             "title.yref": "container", "title.y": 1, "title.yanchor": "top",
             "title.pad.t": titlePad(titleText(gd.layout.title), titleSize(gd))};
    axisNames(gd).forEach(function (a) {
      u[a + ".gridcolor"] = c.grid;
      u[a + ".zerolinecolor"] = c.grid;
      u[a + ".linecolor"] = c.line;
      u[a + ".tickcolor"] = c.line;
    });
    // reference lines (add_hline / add_vline: "cuBLAS = 1") drawn in a dark ink, or in
    // the template's default, take the page's text colour, so that they stay visible on
    // a dark page
    (gd.layout.shapes || []).forEach(function (sh, i) {
      var fsh = (fl.shapes || [])[i] || {};
      var col = (sh.line && sh.line.color) || (fsh.line && fsh.line.color);
      if (sh.type === "line" && (!(sh.line && sh.line.color) || ink(col))) {
        u["shapes[" + i + "].line.color"] = c.ref;
      }
    });
    (gd.layout.sliders || []).forEach(function (s, i) {
      var p = "sliders[" + i + "].";
      u[p + "bgcolor"] = c.menu;
      u[p + "bordercolor"] = c.menuBorder;
      u[p + "activebgcolor"] = c.menuActive;
      u[p + "tickcolor"] = c.line;
      u[p + "font.color"] = c.text;
      u[p + "currentvalue.font.color"] = c.text;
    });
    (gd.layout.updatemenus || []).forEach(function (m, i) {
      var p = "updatemenus[" + i + "].";
      u[p + "bgcolor"] = c.menu;
      u[p + "bordercolor"] = c.menuBorder;
      u[p + "font.color"] = c.text;
    });
    return u;
  }

  /* ------------------------------------------------------------ wrapping */
  function visibleLength(s) {
    return s.replace(/<[^>]*>/g, "").replace(/&[#\w]+;/g, "x").length;
  }

  /* Put <br> in place of spaces so that no line is longer than `width` visible
   * characters (inside <sup>, whose font is smaller, 1.4 times as many); tags are never
   * split, existing <br> stay. */
  function wrap(text, width) {
    if (!text || width < 8) return text;
    var out = [], len = 0, lastSpace = -1, i = 0, sup = false;
    while (i < text.length) {
      var ch = text[i];
      if (ch === "<") {
        var j = text.indexOf(">", i);
        if (j < 0) j = text.length - 1;
        var tag = text.slice(i, j + 1);
        if (/^<br\s*\/?>$/i.test(tag)) { len = 0; lastSpace = -1; }
        if (/^<sup>$/i.test(tag)) sup = true;
        if (/^<\/sup>$/i.test(tag)) sup = false;
        out.push(tag);
        i = j + 1;
        continue;
      }
      if (ch === " ") lastSpace = out.length;
      out.push(ch);
      len += 1;
      if (len > (sup ? 1.4 * width : width) && lastSpace >= 0) {
        out[lastSpace] = "<br>";
        len = 0;
        for (var k = lastSpace + 1; k < out.length; k++) if (out[k][0] !== "<") len += 1;
        lastSpace = -1;
      }
      i += 1;
    }
    return out.join("");
  }

  function lines(text) { return (text.match(/<br\s*\/?>/gi) || []).length + 1; }

  function titleText(t) { return typeof t === "string" ? t : (t && t.text) || ""; }

  function titleSize(gd) {
    var fl = gd._fullLayout;
    return (fl.title && fl.title.font && fl.title.font.size) || 15;
  }

  /* Plotly draws a title of several lines anchored at its top about 0.9 font sizes
   * higher than one of a single line: the pad makes up for it (style.title_pad). */
  function titlePad(text, size) {
    return 12 + (lines(text) > 1 ? Math.ceil(0.95 * size) : 0);
  }

  function wrapUpdate(gd) {
    var fl = gd._fullLayout, u = {};
    var width = gd.clientWidth || fl.width;
    if (!width) return u;
    var size = titleSize(gd);
    var text = titleText(gd.layout.title), need = 0;
    if (text) {
      // <sup> lines are smaller: wrapping at the title's font size is the safe side
      var wrapped = wrap(text, Math.floor((width - 16) / (0.56 * size)));
      if (wrapped !== text) u["title.text"] = wrapped;
      var pad = titlePad(wrapped, size);
      if (!(fl.title && fl.title.pad && fl.title.pad.t === pad)) u["title.pad.t"] = pad;
      // every line, <sup> ones too, takes the line height of the title's font
      need = 26 + lines(wrapped) * size * 1.35;
    }
    // subplot titles (annotations above a plot): wrapped at the width of their plot,
    // and the top margin holds them under the title
    var subLines = 0, subSize = 0;
    (gd.layout.annotations || []).forEach(function (a, i) {
      if (a.showarrow !== false || a.xref !== "paper" || !a.text || a.yanchor !== "bottom") return;
      var plotW = fl._size ? fl._size.w : width;
      var dom = 1;
      axisNames(gd).forEach(function (n) {
        var ax = fl[n];
        if (n[0] === "x" && ax.domain && a.x >= ax.domain[0] && a.x <= ax.domain[1]) {
          dom = Math.min(dom, ax.domain[1] - ax.domain[0]);
        }
      });
      // ... or, where it is wider, the room up to halfway to the next title of its row
      var left = -(fl.margin.l || 0) / plotW, right = 1 + (fl.margin.r || 0) / plotW;
      (gd.layout.annotations || []).forEach(function (b) {
        if (b === a || b.showarrow !== false || b.xref !== "paper" || b.yanchor !== "bottom"
            || Math.abs((b.y || 0) - (a.y || 0)) > 0.02) return;
        if (b.x < a.x) left = Math.max(left, (a.x + b.x) / 2);
        else if (b.x > a.x) right = Math.min(right, (a.x + b.x) / 2);
      });
      var room = a.xanchor === "left" ? right - a.x : a.xanchor === "right" ? a.x - left
        : 2 * Math.min(a.x - left, right - a.x);
      dom = Math.max(dom, Math.min(room, 1));
      var fs = fontSize(a.font, fl, 13);
      var w = wrap(a.text, Math.floor(dom * plotW / (0.56 * fs)));
      if (w !== a.text) u["annotations[" + i + "].text"] = w;
      if (a.y >= 0.999) {            // above the topmost plots: it sits in the top margin
        subLines = Math.max(subLines, lines(w));
        subSize = Math.max(subSize, fs);
      }
    });
    if (subLines) need += subLines * subSize * 1.35 + 6;
    if (need && (fl.margin.t || 0) < need) grow(gd, u, "margin.t", fl.margin.t || 0, Math.ceil(need));
    // axis titles longer than their axis: wrapped at a space, and the margin beside
    // them grows by the lines added (x titles below, y titles to the left)
    var extraB = 0, extraL = 0;
    axisNames(gd).forEach(function (n) {
      var ax = fl[n], t = gd.layout[n] && gd.layout[n].title;
      var text = titleText(t);
      if (!text || !fl._size || !ax.domain) return;
      var fs = fontSize(ax.title && ax.title.font, fl, 12);
      var span = (ax.domain[1] - ax.domain[0]) * (n[0] === "x" ? fl._size.w : fl._size.h);
      var w = wrap(text, Math.floor(span / (0.56 * fs)));
      if (w === text) return;
      u[n + ".title.text"] = w;
      var added = Math.ceil((lines(w) - lines(text)) * fs * 1.3);
      if (n[0] === "x") extraB = Math.max(extraB, added); else extraL = Math.max(extraL, added);
    });
    if (extraB) {
      grow(gd, u, "margin.b", fl.margin.b || 0, (fl.margin.b || 0) + extraB);
      // a legend under the plot moves down with the taller axis title
      if (fl.showlegend && fl.legend && fl.legend.y < 0 && fl._size.h)
        u["legend.y"] = fl.legend.y - extraB / fl._size.h;
    }
    if (extraL) u["margin.l"] = (fl.margin.l || 0) + extraL;
    // slider labels that would overlap on this width: the steps are numbered instead
    // (the title each step sets says what it is)
    (gd.layout.sliders || []).forEach(function (sl, i) {
      var steps = sl.steps || [], longest = 0;
      steps.forEach(function (st) { longest = Math.max(longest, visibleLength(String(st.label || ""))); });
      if (steps.length && steps.length * longest * 6.5 > width - 80 && longest > String(steps.length).length) {
        steps.forEach(function (st, k) { u["sliders[" + i + "].steps[" + k + "].label"] = String(k + 1); });
      }
    });
    return u;
  }

  /* Panels side by side (one row of 2 or 3 subplots) on a screen narrower than 600 px:
   * stacked, one panel per row, the figure taller by the same plot height per panel;
   * each subplot title (an annotation just above its panel) moves with its panel.
   * Figures with a colour bar, a slider or panels in several rows are left as drawn. */
  function stackUpdate(gd) {
    var fl = gd._fullLayout, u = {};
    var width = gd.clientWidth || fl.width;
    if (!width || width >= 600 || gd.__bookStacked || !fl._size) return u;
    if ((gd.layout.sliders || []).length) return u;
    if ((gd.data || []).some(function (t) { return t.showscale === true || (t.marker && t.marker.showscale); })) return u;
    var xs = axisNames(gd).filter(function (n) { return n[0] === "x"; }).map(function (n) {
      var ax = fl[n];
      return {name: n, dom: ax.domain.slice(), y: "yaxis" + n.slice(5)};
    });
    if (xs.length < 2 || xs.length > 3) return u;
    var y0 = null, row = true;
    xs.forEach(function (x) {
      var ya = fl[x.y];
      if (!ya || !ya.domain) { row = false; return; }
      var d = ya.domain;
      if (y0 === null) y0 = d;
      else if (Math.abs(d[0] - y0[0]) > 0.02 || Math.abs(d[1] - y0[1]) > 0.02) row = false;
    });
    if (!row) return u;
    xs.sort(function (a, b) { return a.dom[0] - b.dom[0]; });
    for (var k = 1; k < xs.length; k++) if (xs[k].dom[0] < xs[k - 1].dom[1]) return u;
    var n = xs.length, dom = fl[xs[0].y].domain, yTop = dom[1], H = fl._size.h;
    var plotH = H * (dom[1] - dom[0]), gapPx = 170;   // x ticks, x title (wrapped), next subplot title (wrapped)
    var above = H * (1 - dom[1]), below = H * dom[0];
    var H2 = above + n * plotH + (n - 1) * gapPx + below;
    xs.forEach(function (x, i) {
      var top = above + i * (plotH + gapPx);
      u[x.name + ".domain"] = [0, 1];
      u[x.y + ".domain"] = [1 - (top + plotH) / H2, 1 - top / H2];
      x.top = 1 - top / H2;
    });
    (gd.layout.annotations || []).forEach(function (a, i) {
      if (a.xref !== "paper" || a.yref !== "paper" || a.showarrow !== false) return;
      if (!(a.y >= yTop - 0.01)) return;
      var col = xs.filter(function (x) { return a.x >= x.dom[0] - 0.01 && a.x <= x.dom[1] + 0.01; })[0];
      if (!col) return;
      u["annotations[" + i + "].x"] = 0.5;
      u["annotations[" + i + "].xanchor"] = "center";
      u["annotations[" + i + "].y"] = col.top;
      u["annotations[" + i + "].yanchor"] = "bottom";
    });
    u.height = Math.ceil(fl.height + H2 - H);
    gd.__bookStacked = true;
    return u;
  }

  /* A slider under the plot: far enough below the x tick labels and axis title (which
   * a narrow screen makes taller) not to cover them. Needs the figure drawn. */
  function sliderUpdate(gd) {
    var fl = gd._fullLayout, u = {};
    if (!gd.layout.sliders || !fl._size) return u;
    var box = gd.getBoundingClientRect();
    var plotBottom = box.top + fl._size.t + fl._size.h, low = plotBottom;
    gd.querySelectorAll(".xaxislayer-above text, .infolayer [class^='g-x'] text, .xtitle").forEach(function (t) {
      low = Math.max(low, t.getBoundingClientRect().bottom);
    });
    (gd.layout.sliders || []).forEach(function (sl, i) {
      var y = sl.y === undefined ? 0 : sl.y, pad = (sl.pad && sl.pad.t) || 0;
      if (y > 0.01) return;
      var need = Math.ceil(low - plotBottom + 12);
      if (pad < need) grow(gd, u, "sliders[" + i + "].pad.t", pad, need);
    });
    return u;
  }

  /* ------------------------------------------------------------- apply */
  function apply(gd, force) {
    if (gd.__bookBusy) return;
    var u = {}, key = mode() + ":" + (gd.clientWidth || 0);
    if (force || gd.__bookTheme !== mode()) {
      Object.assign(u, themeUpdate(gd));
      gd.__bookTheme = mode();
    }
    if (gd.__bookWidth !== key) {
      var st = stackUpdate(gd), wr = wrapUpdate(gd);
      if (st.height && wr.height) wr.height = st.height + wr.height - gd._fullLayout.height;
      Object.assign(u, st, wr);
    }
    gd.__bookWidth = key;
    if (Object.keys(u).length) {
      gd.__bookBusy = true;
      var done = function () { gd.__bookBusy = false; };
      try {
        var p = relayout(gd, u);
        if (p && p.then) {
          p.then(function () { done(); fitSliders(gd); }, done);
        } else { done(); fitSliders(gd); }
      } catch (e) { done(); }
    } else {
      fitSliders(gd);
    }
  }

  /* What sits above the plots (a legend, a note, subplot titles; more rows of them on a
   * narrow screen) must stay under the title: measured, the top margin grows by the
   * overlap. */
  function clearTitleUpdate(gd) {
    var fl = gd._fullLayout, t = gd.querySelector(".gtitle");
    if (!t || !fl._size) return {};
    var tb = t.getBoundingClientRect();
    if (!tb.height) return {};
    var box = gd.getBoundingClientRect(), plotTop = box.top + fl._size.t, top = plotTop;
    // (and the tick labels of an x axis along the top, turned upwards)
    var above = ".legend, .infolayer .annotation, .updatemenu-header-group, .xaxislayer-above text";
    gd.querySelectorAll(above).forEach(function (e) {
      var r = e.getBoundingClientRect();
      if (r.height && r.top < plotTop) top = Math.min(top, r.top);
    });
    if (tb.bottom + 4 <= top) return {};
    var u = {};
    grow(gd, u, "margin.t", fl.margin.t, Math.ceil(fl.margin.t + tb.bottom + 6 - top));
    return u;
  }

  /* Set `key` from `from` to `to` in the update `u`, and make the figure that much
   * taller, so that the plots keep their height. */
  function grow(gd, u, key, from, to) {
    u[key] = to;
    var h = u.height || gd._fullLayout.height;
    if (h && to > from) u.height = Math.ceil(h + to - from);
  }

  /* Tick labels of one axis that overlap (dense ticks on a short equal-aspect panel, a
   * narrow screen), measured, one step per measuring round:
   * - numbers on a scale (auto ticks of a linear, log or date axis; listed ticks whose
   *   labels are all numbers): fewer ticks (auto ticks: nticks halved; listed ticks: every
   *   other one kept), the scale still reads;
   * - names (categories: a bar's rung, a heatmap's column or row; listed ticks with words):
   *   none is ever left out, a bar without its name is anonymous. Along x they turn to
   *   read upwards (tickangle -90), set smaller to fit the room per label (not below
   *   MIN_FONT px), then their lines are joined into one; along y they are set smaller,
   *   then the figure grows until each row has room for its label. Rotated labels reach
   *   lower: Plotly's automargin (or edgeUpdate) widens the bottom margin, and
   *   plotHeightLost gives the plot back its height. */
  var MIN_FONT = 9;           // the smallest type a name on an axis is set in, px
  var NUMBER = /^[\s\u2212+-]*(\d[\d,]*\.?\d*|\.\d+)(e[\u2212+-]?\d+)?\s*[kMGTP%\u00d7x]?\s*$/i;

  /* The size (px) a piece of text is set in: its own font's, else the figure's, else `dflt`. */
  function fontSize(font, fl, dflt) {
    return (font && font.size) || (fl.font && fl.font.size) || dflt;
  }

  function boxesOverlap(a, b) {
    var w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
    var h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
    return w > 1 && h > 1;
  }

  function plainText(s) { return String(s).replace(/<[^>]*>/g, " ").replace(/&[#\w]+;/g, "x").trim(); }

  function namesAxis(gd, n, ax) {
    if (ax.type === "category" || ax.type === "multicategory") return true;
    var lay = gd.layout[n] || {};
    return lay.tickmode === "array" && Array.isArray(lay.ticktext) &&
      lay.ticktext.some(function (t) { return t !== "" && !NUMBER.test(plainText(t)); });
  }


  /* The axis's labels written on one line each: listed ticks keep their values, a
   * category axis lists its categories. */
  function oneLine(gd, n, ax, u) {
    var lay = gd.layout[n] || {}, join = function (t) { return String(t).replace(/<br\s*\/?>/gi, " "); };
    if (lay.tickmode === "array" && Array.isArray(lay.tickvals)) {
      u[n + ".ticktext"] = (Array.isArray(lay.ticktext) ? lay.ticktext : lay.tickvals).map(join);
    } else if (ax._categories && ax._categories.length) {
      u[n + ".tickmode"] = "array";
      u[n + ".tickvals"] = ax._categories.slice();
      u[n + ".ticktext"] = ax._categories.map(join);
    }
  }

  function tickUpdate(gd) {
    var fl = gd._fullLayout, u = {};
    axisNames(gd).forEach(function (n) {
      var ax = fl[n];
      if (!ax || !ax._id || ax.showticklabels === false) return;
      var labels = [];
      gd.querySelectorAll("." + ax._id + "tick text").forEach(function (t) {
        var r = t.getBoundingClientRect();
        if (r.width && r.height && t.textContent.trim())
          labels.push({r: r, lines: t.querySelectorAll("tspan.line").length || 1});
      });
      var boxes = labels.map(function (l) { return l.r; });
      var lay = gd.layout[n] || {};
      // Plotly itself writes every other category (or fewer) where it judges them crowded:
      // a names axis asks for one tick per category, then the steps below make them fit
      if ((ax.type === "category" || ax.type === "multicategory") && lay.tickmode !== "array" &&
          !(lay.tickmode === "linear" && lay.dtick === 1)) {
        var r = (ax.range || [0, 0]).slice().sort(function (a, b) { return a - b; });
        var inRange = (ax._categories || []).filter(function (c, k) { return k >= r[0] && k <= r[1]; }).length;
        if (labels.length < inRange) {
          u[n + ".tickmode"] = "linear";
          u[n + ".tick0"] = 0;
          u[n + ".dtick"] = 1;
          return;
        }
      }
      var hit = false;
      for (var i = 0; i < boxes.length && !hit; i++)
        for (var j = i + 1; j < boxes.length && !hit; j++) if (boxesOverlap(boxes[i], boxes[j])) hit = true;
      if (!hit || boxes.length < 2) return;
      if (!namesAxis(gd, n, ax)) {
        if (lay.tickmode === "array" && Array.isArray(lay.tickvals)) {
          var keep = function (v, k) { return k % 2 === 0; };
          u[n + ".tickvals"] = lay.tickvals.filter(keep);
          if (Array.isArray(lay.ticktext)) u[n + ".ticktext"] = lay.ticktext.filter(keep);
        } else {
          u[n + ".nticks"] = Math.max(1, Math.floor(boxes.length / 2));
        }
        return;
      }
      // names: the room per label is the distance between neighbouring label centres
      var along = n.charAt(0) === "x";
      var centres = boxes.map(function (r) { return along ? (r.left + r.right) / 2 : (r.top + r.bottom) / 2; })
        .sort(function (a, b) { return a - b; });
      var step = Infinity;
      for (var k = 1; k < centres.length; k++) if (centres[k] - centres[k - 1] > 0.5) step = Math.min(step, centres[k] - centres[k - 1]);
      if (!isFinite(step)) return;
      var fs = fontSize(ax.tickfont, fl, 12), lines = Math.max.apply(null, labels.map(function (l) { return l.lines; }));
      var fit = function (extent) {      // the font size at which labels `extent` px across fit the room
        var s = Math.max(MIN_FONT, Math.floor(fs * (step - 2) / extent * 10) / 10);
        return s < fs ? s : null;
      };
      if (along) {
        var turned = typeof lay.tickangle === "number" && Math.abs(Math.abs(lay.tickangle) - 90) < 1;
        if (!turned) {
          u[n + ".tickangle"] = -90;
          var s0 = fit(lines * fs * 1.3);
          if (s0) u[n + ".tickfont.size"] = s0;
          return;
        }
        var across = Math.max.apply(null, boxes.map(function (r) { return r.width; }));
        var s1 = fit(across);
        if (s1) { u[n + ".tickfont.size"] = s1; return; }
        if (lines > 1) {
          oneLine(gd, n, ax, u);
        }
        return;                          // 9 px on one line and still no room: all are kept
      }
      var tall = Math.max.apply(null, boxes.map(function (r) { return r.height; }));
      var s3 = fit(tall);
      if (s3) { u[n + ".tickfont.size"] = s3; return; }
      // the smallest type does not fit the rows: the figure grows (at most threefold per
      // round), unless the rows keep their aspect (a heatmap's square cells, as wide as the
      // screen allows: a taller figure gives them no room); then their lines are joined
      var tied = ax.scaleanchor || axisNames(gd).some(function (m) { return fl[m].scaleanchor === ax._id; });
      if (!tied && fl._size && fl._size.h && fl.height) {
        var grown = Math.min(3, (tall + 3) / step);
        if (grown > 1.01) u.height = Math.ceil((u.height || fl.height) + fl._size.h * (grown - 1));
      } else if (lines > 1) {
        oneLine(gd, n, ax, u);
      }
    });
    return u;
  }

  /* Tick labels of an x axis along the top of a lower panel, turned upwards, reach into
   * the panel above (the second heatmap of chapter 9's end-to-end figure): the gap between
   * the panels opens by the overlap, the figure taller by as much, every panel, note and
   * legend above the gap moved up with it and each panel as tall as it was. */
  function gapUpdate(gd) {
    var fl = gd._fullLayout, u = {}, H = fl._size && fl._size.h;
    if (!H || !fl.height) return u;
    var box = gd.getBoundingClientRect(), need = 0, cut = null;
    var panels = axisNames(gd).filter(function (n) { return n[0] === "x"; }).map(function (n) {
      var xa = fl[n], ya = xa && xa.anchor && fl["yaxis" + xa.anchor.slice(1)];
      if (!ya || !ya._id || ya._length === undefined) return null;
      return {x: xa, y: ya, name: n, top: box.top + ya._offset, bottom: box.top + ya._offset + ya._length,
              left: box.left + xa._offset, right: box.left + xa._offset + xa._length};
    }).filter(Boolean);
    panels.forEach(function (p) {
      if (p.x.side !== "top" || p.x.showticklabels === false) return;
      var top = Infinity;
      gd.querySelectorAll("." + p.x._id + "tick text").forEach(function (t) {
        var r = t.getBoundingClientRect();
        if (r.height && t.textContent.trim()) top = Math.min(top, r.top);
      });
      if (!isFinite(top)) return;
      panels.forEach(function (q) {
        if (q === p || q.bottom > p.top + 1 || q.right <= p.left || q.left >= p.right) return;
        var d = q.bottom + 4 - top;
        if (d > 1 && d > need) {
          need = d;
          var dom = (gd.layout[p.y._name] || {}).domain || p.y.domain;
          cut = dom[1];
        }
      });
    });
    if (!need || cut === null) return u;
    need = Math.ceil(need);
    var H2 = H + need;
    var move = function (v) { return v > cut + 1e-6 ? (v * H + need) / H2 : v * H / H2; };
    axisNames(gd).forEach(function (n) {
      if (n[0] !== "y") return;
      var dom = (gd.layout[n] || {}).domain || fl[n].domain;
      if (dom) u[n + ".domain"] = [move(dom[0]), move(dom[1])];
    });
    (gd.layout.annotations || []).forEach(function (a, i) {
      if (a.yref === "paper" && typeof a.y === "number") u["annotations[" + i + "].y"] = move(a.y);
    });
    (gd.layout.shapes || []).forEach(function (sh, i) {
      if (sh.yref !== "paper") return;
      ["y0", "y1"].forEach(function (k) { if (typeof sh[k] === "number") u["shapes[" + i + "]." + k] = move(sh[k]); });
    });
    if (fl.showlegend && fl.legend && typeof fl.legend.y === "number") u["legend.y"] = move(fl.legend.y);
    u.height = Math.ceil(fl.height + need);
    return u;
  }

  /* A legend under the plot: below the x tick labels and axis titles (rotated or wrapped
   * ones reach lower than the legend's place), the figure taller by as much. */
  function legendUpdate(gd) {
    var fl = gd._fullLayout, u = {};
    var lg = gd.querySelector(".legend");
    if (!lg || !fl.showlegend || !fl.legend || !(fl.legend.y < 0) || !fl._size || !fl._size.h) return u;
    var lb = lg.getBoundingClientRect();
    if (!lb.height) return u;
    var low = -Infinity;
    gd.querySelectorAll(".xaxislayer-above text, .infolayer [class^='g-x'] text, .xtitle").forEach(function (t) {
      var r = t.getBoundingClientRect();
      if (r.height && r.left < lb.right && r.right > lb.left) low = Math.max(low, r.bottom);
    });
    if (!(low + 4 > lb.top)) return u;
    var d = Math.ceil(low + 6 - lb.top);
    u["legend.y"] = fl.legend.y - d / fl._size.h;
    u["legend.yanchor"] = "top";
    grow(gd, u, "margin.b", fl.margin.b || 0, (fl.margin.b || 0) + d);
    return u;
  }

  /* Text past the figure's left or right edge (a rotated tick label of the last bar, a
   * long legend entry): the margin on that side grows by the overshoot; past the bottom:
   * the figure grows. Notes that overlap one another: the later one moves away from the
   * earlier (up when it is the higher of the two, else down); a y axis title over the
   * panel to its left moves its panel right. */
  function edgeUpdate(gd) {
    var fl = gd._fullLayout, u = {}, svg = gd.querySelector(".main-svg");
    if (!svg || !fl.margin) return u;
    var box = svg.getBoundingClientRect(), l = 0, r = 0, b = 0;
    gd.querySelectorAll("svg text").forEach(function (t) {
      if (t.closest(".hoverlayer") || !t.textContent.trim()) return;
      var q = t.getBoundingClientRect();
      if (!q.width) return;
      l = Math.max(l, box.left - q.left); r = Math.max(r, q.right - box.right); b = Math.max(b, q.bottom - box.bottom);
    });
    if (l > 1) u["margin.l"] = Math.ceil((fl.margin.l || 0) + l + 4);
    if (r > 1) u["margin.r"] = Math.ceil((fl.margin.r || 0) + r + 4);
    if (b > 1) grow(gd, u, "margin.b", fl.margin.b || 0, Math.ceil((fl.margin.b || 0) + b + 4));
    // a y axis title over the panel to its left (side-by-side panels on a narrow screen):
    // its panel moves right by the overlap
    var all = [];
    gd.querySelectorAll("svg text").forEach(function (t) {
      if (!t.closest(".hoverlayer") && t.textContent.trim()) all.push(t);
    });
    axisNames(gd).forEach(function (n) {
      if (n[0] !== "y") return;
      var ax = fl[n], tt = gd.querySelector(".g-" + ax._id + "title text");
      if (!tt || !ax.anchor || ax.anchor === "free") return;
      var tr = tt.getBoundingClientRect(), over = 0;
      all.forEach(function (t) {
        if (tt.contains(t) || t.contains(tt)) return;
        var q = t.getBoundingClientRect();
        if (boxesOverlap(tr, q)) over = Math.max(over, q.right - tr.left);
      });
      var xn = "xaxis" + ax.anchor.slice(1), xl = gd.layout[xn] || {}, dom = xl.domain || (fl[xn] && fl[xn].domain);
      if (!over || !dom || !fl._size.w || dom[0] < 0.02) return;
      var dx = Math.min((over + 4) / fl._size.w, 1 - dom[1] + (dom[1] - dom[0]) * 0.5);
      u[xn + ".domain"] = [Math.min(dom[0] + dx, dom[1] - 0.05), Math.min(1, dom[1] + dx)];
    });
    var notes = [];
    gd.querySelectorAll(".infolayer .annotation").forEach(function (e) {
      var i = +e.getAttribute("data-index"), q = e.getBoundingClientRect();
      if (q.height && !isNaN(i)) notes.push({i: i, r: q});
    });
    for (var i = 0; i < notes.length; i++) for (var j = i + 1; j < notes.length; j++) {
      var A = notes[i], B = notes[j];
      if (!boxesOverlap(A.r, B.r)) continue;
      var lay = (gd.layout.annotations || [])[B.i] || {};
      var d = Math.ceil(Math.min(A.r.bottom, B.r.bottom) - Math.max(A.r.top, B.r.top) + 3);
      u["annotations[" + B.i + "].yshift"] = (lay.yshift || 0) + (B.r.top <= A.r.top ? d : -d);
    }
    return u;
  }

  /* Heatmap cells too small for the numbers written in them (a narrow screen, a large
   * grid): the drawn labels are measured, and where any two overlap the cell text is set
   * smaller, to fit the closest pair of label centres; below 7 px, or where cells are under
   * 13 px wide, the numbers are left out (the hover still gives each cell's value). */
  function cellTextUpdate(gd) {
    var fl = gd._fullLayout, idx = [], hide = false;
    if (!gd.data) return;
    gd.data.forEach(function (tr, k) {
      if (tr.type !== "heatmap" || !tr.texttemplate) return;      // z may still be a binary spec
      idx.push(k);
      var xa = fl["xaxis" + ((tr.xaxis || "x").slice(1))];
      var cols = (tr.x && tr.x.length) || (tr.z && tr.z[0] && tr.z[0].length) || 1;
      if (xa && xa._length && xa._length / cols < 13) hide = true;
    });
    if (!idx.length) return;
    var boxes = Array.prototype.slice.call(gd.querySelectorAll("g.heatmap-label text"))
      .filter(function (t) { return t.textContent.trim(); })
      .map(function (t) { return t.getBoundingClientRect(); });
    var scale = 1;
    for (var i = 0; i < boxes.length && !hide; i++) {
      for (var j = i + 1; j < boxes.length; j++) {
        var a = boxes[i], b = boxes[j];
        if (!boxesOverlap(a, b)) continue;
        // shrink until the pair's boxes, scaled about their centres, no longer meet
        var dx = Math.abs((a.left + a.right) - (b.left + b.right)) / 2;
        var dy = Math.abs((a.top + a.bottom) - (b.top + b.bottom)) / 2;
        var sx = dx > 0 ? 0.92 * dx / ((a.width + b.width) / 2) : 0;
        var sy = dy > 0 ? 0.92 * dy / ((a.height + b.height) / 2) : 0;
        scale = Math.min(scale, Math.max(sx, sy));
      }
    }
    if (scale >= 1 && !hide) return;
    var size = fontSize(gd.data[idx[0]].textfont, fl, 12);
    if (hide || size * scale < 7) window.Plotly.restyle(gd, {texttemplate: ""}, idx);
    else window.Plotly.restyle(gd, {"textfont.size": Math.floor(size * scale * 10) / 10}, idx);
  }

  /* A legend entry wider than the figure (a long kernel title on a narrow screen): more
   * margin cannot help, so the legend's text is set smaller, in proportion, down to 7 px. */
  function legendFontUpdate(gd) {
    var fl = gd._fullLayout, u = {}, svg = gd.querySelector(".main-svg");
    if (!svg || !fl.showlegend || !fl.legend) return u;
    var box = svg.getBoundingClientRect(), worst = 1;
    gd.querySelectorAll(".legend text").forEach(function (t) {
      var q = t.getBoundingClientRect();
      if (!q.width || q.right <= box.right - 1) return;
      worst = Math.min(worst, Math.max(0, box.right - 4 - q.left) / q.width);
    });
    var size = fontSize(fl.legend.font, fl, 12);
    if (worst < 1) u["legend.font.size"] = Math.max(7, Math.floor(size * worst * 10) / 10);
    return u;
  }

  /* Plotly widens a margin to make room for what does not fit in it (a legend of many
   * entries under the plot wraps into rows on a narrow column) and takes that room from the
   * plot itself, down to a sliver. The plot's height as the figure first asked for it is
   * kept: the figure grows by what the widened margins took. Returns the pixels to add. */
  function plotHeightLost(gd) {
    var fl = gd._fullLayout;
    if (!fl._size || !fl.height || !fl.margin) return 0;
    if (gd.__bookPlotH === undefined)
      gd.__bookPlotH = fl.height - (fl.margin.t || 0) - (fl.margin.b || 0);
    var lost = Math.ceil(gd.__bookPlotH - fl._size.h);
    return lost > 4 ? lost : 0;
  }

  /* Adds update `x` to the round's update `u`; a height both ask for adds up (each is the
   * figure's height plus what that step needs). */
  function merge(gd, u, x) {
    if (u.height && x.height) x.height += u.height - gd._fullLayout.height;
    return Object.assign(u, x);
  }

  function fitSliders(gd) {
    gd.__bookFits = (gd.__bookFits || 0) + 1;
    var u = merge(gd, sliderUpdate(gd), clearTitleUpdate(gd));
    if (gd.__bookFits <= 6) {
      var t = tickUpdate(gd);
      // (the gap between panels opens once the other heights of this round are settled)
      merge(gd, u, !Object.keys(t).length && !u.height ? gapUpdate(gd) : t);
      merge(gd, u, edgeUpdate(gd));
      cellTextUpdate(gd);
      merge(gd, u, legendFontUpdate(gd));
      merge(gd, u, legendUpdate(gd));
      var lost = plotHeightLost(gd);
      if (lost) u.height = (u.height || gd._fullLayout.height) + lost;
    }
    var p = relayout(gd, u);
    // what the relayout moved is measured again (a few rounds at most)
    if (p && p.then && gd.__bookFits <= 6) p.then(function () { fitSliders(gd); });
  }

  /* Plotly.relayout; a div whose height plotly.io wrote in its style (the figure's, or
   * the wrapper's around it) grows with the figure. */
  function relayout(gd, u) {
    if (!Object.keys(u).length) return null;
    if (u.height) {
      [gd, gd.parentElement].forEach(function (e) {
        if (e && /px$/.test(e.style.height)) e.style.height = u.height + "px";
      });
    }
    return window.Plotly.relayout(gd, u);
  }

  function applyAll(force) { graphs().forEach(function (gd) { apply(gd, force); }); }

  function hook(gd) {
    if (gd.__bookHooked || typeof gd.on !== "function") return;
    gd.__bookHooked = true;
    // a slider or a button that sets the title: wrap what it set
    var rewrap = function () {
      if (gd.__bookBusy) return;
      gd.__bookWidth = null;
      apply(gd, false);
    };
    gd.on("plotly_update", rewrap);
    gd.on("plotly_relayout", rewrap);
  }

  function start() {
    graphs().forEach(hook);
    applyAll(true);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
  window.addEventListener("load", function () { graphs().forEach(hook); applyAll(false); });
  new MutationObserver(function () { applyAll(true); })
    .observe(document.documentElement, {attributes: true, attributeFilter: ["data-theme"]});
  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () {
      graphs().forEach(function (gd) { gd.__bookFits = 0; });
      applyAll(false);
    }, 200);
  });
})();
