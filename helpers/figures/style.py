"""The one shared look of the book's figures: colours, colour scales, compact data.

Every module of helpers/figures/ takes its palettes and helpers from here, so
the figures of all chapters look alike (#10).
"""
from __future__ import annotations

import re

import numpy as np

# Wavefront phases of one warp instruction (chapter 4): none, 1st, 2nd, 3rd.
PHASE_COLORS = ("#000000", "#d62728", "#1f77b4", "#2ca02c")
# Eight categorical colours (bank groups, warps; Tableau 10).
GROUP_COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#edc948", "#76b7b2", "#ff9da7"]


def discrete_scale(colors):
    """A Plotly colorscale that gives integer z = 0..len(colors)-1 one flat colour each."""
    n = len(colors)
    scale = []
    for i, c in enumerate(colors):
        scale += [[i / n, c], [(i + 1) / n, c]]
    return scale


def small(a) -> np.ndarray:
    """``a`` as the smallest of uint8 / int16 / int32 that holds it (compact figure data)."""
    a = np.asarray(a)
    lo, hi = int(a.min(initial=0)), int(a.max(initial=0))
    if lo >= 0 and hi < 256:
        return a.astype(np.uint8)
    if -32768 <= lo and hi < 32768:
        return a.astype(np.int16)
    return a.astype(np.int32)


def model_note() -> str:
    """What every model figure's title says about where its data come from."""
    return "model of the kernel's index arithmetic, no GPU involved"


def step_scale(steps: int):
    """A discrete colour scale for z = 0 .. steps-1 (Viridis)."""
    import plotly.colors as pc
    cols = pc.sample_colorscale("Viridis", [i / max(steps - 1, 1) for i in range(steps)])
    n = len(cols)
    out = []
    for i, c in enumerate(cols):
        out += [[i / n, c], [(i + 1) / n, c]]
    return out


# ------------------------------------------------------------ the template
# One Plotly template for every figure of the book (#14): fonts, palette, margins,
# legend placement, transparent backgrounds. The book's pages restyle the colours that
# depend on the theme (text, grid) when a reader switches to dark mode
# (_ext/static/book_theme.js); the template's own colours suit a light page, and the
# grid and axis-line colours are half-transparent greys that read on both.
TRANSPARENT = "rgba(0,0,0,0)"
TEXT = "#262626"
GRID = "rgba(128,128,128,0.28)"
AXIS_LINE = "rgba(128,128,128,0.75)"
FONT = ('-apple-system, BlinkMacSystemFont, "Segoe UI", "Helvetica Neue", Arial, '
        '"Noto Sans", "Liberation Sans", sans-serif')
# Bars: one colour for a measurement, one for the bar a slider selects (at first the
# best of a sweep), grey for a point that was not recorded; the default configuration
# gets its own marker (a star above its bar) with a legend entry.
BAR = GROUP_COLORS[0]
SELECTED = "#d62728"
# Outlines drawn over Turbo heatmaps and the bank-group grid (a lane's cells, an ldmatrix
# phase): magenta is in neither Turbo nor the categorical colours, and reads on the light
# and the dark page alike (black vanished on Turbo's dark end and on a dark page).
OUTLINE = "#e600e6"
NOT_RECORDED = "#cccccc"
DEFAULT_MARKER = dict(symbol="star", size=15, color="#f28e2b", line=dict(width=1, color="#7f4a10"))
SELECTED_NAME = "selected by the slider (at first: the best of the sweep)"
DEFAULT_NAME = "default configuration"

TITLE_WIDTH = 80        # visible characters per title line before it wraps
SUB_WIDTH = 110         # ... per <sup> line (smaller font)
LABEL_WIDTH = 24        # tick and slider labels longer than this are abbreviated (full text on hover)
SLIDER_CHARS = 90       # a slider whose labels add up to more than this is numbered 1..n instead

_AXIS = dict(gridcolor=GRID, zerolinecolor=GRID, linecolor=AXIS_LINE, tickcolor=AXIS_LINE,
             showline=True, ticks="outside", automargin=True, title=dict(standoff=8))


def _build_template():
    import plotly.graph_objects as go
    import plotly.io as pio

    base = pio.templates["plotly"]          # its trace defaults (colour scales, bar lines) stay
    layout = dict(
        font=dict(family=FONT, size=13, color=TEXT),
        colorway=GROUP_COLORS + ["#9c755f", "#bab0ac"],
        paper_bgcolor=TRANSPARENT, plot_bgcolor=TRANSPARENT,
        title=dict(x=0.01, xanchor="left", y=1, yanchor="top", yref="container",
                   pad=dict(t=12), font=dict(size=15)),
        margin=dict(l=60, r=20, t=80, b=50),
        legend=dict(orientation="h", x=0, xanchor="left", y=-0.22, yanchor="top",
                    bgcolor=TRANSPARENT, font=dict(size=11)),
        hovermode="closest", hoverlabel=dict(align="left"), autotypenumbers="strict",
        xaxis=_AXIS, yaxis=_AXIS,
        coloraxis=dict(colorbar=dict(outlinewidth=0, ticks="outside")),
    )
    return go.layout.Template(data=base.data, layout=layout)


def template():
    """The book's Plotly template (built once; also registered as ``"nine_heavens"``
    and made Plotly's default when this module is imported)."""
    global _TEMPLATE
    if _TEMPLATE is None:
        import plotly.io as pio
        _TEMPLATE = _build_template()
        pio.templates["nine_heavens"] = _TEMPLATE
        pio.templates.default = "nine_heavens"
    return _TEMPLATE


_TEMPLATE = None


# --------------------------------------------------------------- titles, labels
_TAG = re.compile(r"<[^>]*>")


def visible_len(text: str) -> int:
    """Characters a reader sees in a Plotly label (tags count for nothing, an entity for one)."""
    return len(re.sub(r"&[#\w]+;", "x", _TAG.sub("", text)))


def wrap(text: str, width: int = TITLE_WIDTH, sub_width: int = SUB_WIDTH) -> str:
    """``text`` (Plotly's HTML subset) with ``<br>`` put in place of spaces so that no
    line is wider than ``width`` visible characters (``sub_width`` inside ``<sup>``).
    Existing ``<br>``\\ s stay; tags are never split; a word longer than the width
    stays whole. Idempotent."""
    if not text:
        return text
    out, line_len, last_space, in_sup = [], 0, None, False
    i, n = 0, len(text)
    while i < n:
        if text[i] == "<":
            j = text.find(">", i)
            j = n - 1 if j < 0 else j
            tag = text[i:j + 1]
            low = tag.lower().replace(" ", "")
            if low in ("<br>", "<br/>"):
                line_len, last_space = 0, None
            elif low == "<sup>":
                in_sup = True
            elif low == "</sup>":
                in_sup = False
            out.append(tag)
            i = j + 1
            continue
        ch = text[i]
        if ch == "&":
            j = text.find(";", i)
            if 0 < j - i < 10:
                ch = text[i:j + 1]
        limit = sub_width if in_sup else width
        if ch == " ":
            if line_len >= limit and last_space is None:
                out.append("<br>")
                line_len = 0
                i += 1
                continue
            last_space = len(out)
        out.append(ch)
        line_len += 1
        if line_len > limit and last_space is not None:
            out[last_space] = "<br>"
            line_len = sum(1 for t in out[last_space + 1:] if not t.startswith("<"))
            last_space = None
        i += len(ch)
    return "".join(out)


def abbreviate(label, width: int = LABEL_WIDTH) -> str:
    """A label cut to ``width`` visible characters with an ellipsis (tags dropped when cut)."""
    s = str(label)
    if visible_len(s) <= width:
        return s
    plain = _TAG.sub("", s)
    return plain[:width - 1].rstrip() + "…"


def params_text(params) -> str:
    """A kernel's parameters as a reader reads them in a hover or a label:
    ``{"BM": 128, "BN": 64}`` -> ``"BM=128 BN=64"`` (the full names, never a dict);
    an empty dict or None -> ``"defaults"``."""
    if not params:
        return "defaults"
    if not isinstance(params, dict):
        return str(params)
    return " ".join(f"{k}={v}" for k, v in params.items())


def count(value):
    """A counter as the book prints it: a whole number read back as a float (Nsight
    Compute's ``1572864.0``) becomes the int it is, so a table shows ``1572864``
    beside the model's ``1572864``, not ``1.573e+06``; anything else unchanged."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def ratio_text(value) -> str:
    """A ratio (to cuBLAS, to a copy) as the book prints it everywhere: three significant
    figures, trailing zeros kept (``0.170``, ``0.0970``, ``1.01``, ``12.0``); None or NaN
    as an empty string. Raises ValueError for a value that is not a number."""
    if value is None:
        return ""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"value: {value!r} is not a number (a ratio is printed from a number)") from None
    if v != v:
        return ""
    s = f"{v:#.3g}"
    return s[:-1] if s.endswith(".") else s


def tick_label(label, width: int = LABEL_WIDTH) -> str:
    """A category tick label of more than ``width`` visible characters, wrapped onto
    lines of at most ``width`` at its spaces (:func:`wrap`), never cut: a bar must say
    all of which configuration it is (``"STAGES=4 SWIZZLE=1 GROUP_M=8"``, three lines)."""
    return wrap(str(label), width, width)


def title_lines(text: str) -> tuple:
    """(lines in the title's own font, lines inside ``<sup>``) of a Plotly title."""
    main = sub = 0
    in_sup = False
    for line in re.split(r"<br\s*/?>", text or "", flags=re.I):
        low = line.lower()
        if in_sup or low.lstrip().startswith("<sup>"):
            sub += 1
        elif _TAG.sub("", line).strip() or not (main or sub):
            main += 1
        opens, closes = low.count("<sup>"), low.count("</sup>")
        if opens != closes:
            in_sup = opens > closes
    return main, sub


def title_pad(text: str, font_size: float = 15) -> int:
    """The top pad of a title hung from the top of the figure. Plotly (2.x, 3.x) draws a
    title of several lines anchored at its top about 0.9 font sizes higher than one of
    a single line (measured in Chromium: its first line is cut at the top otherwise)."""
    main, sub = title_lines(text)
    return 12 + (int(np.ceil(0.95 * font_size)) if main + sub > 1 else 0)


def title_margin(text: str, font_size: float = 15) -> int:
    """Top margin (px) that holds a title of this text under its :func:`title_pad`.
    Plotly gives every line, ``<sup>`` ones too, the line height of the title's font."""
    main, sub = title_lines(text)
    return int(round(title_pad(text, font_size) - 0.95 * font_size * (main + sub > 1)
                     + (main + sub) * font_size * 1.35 + 14))


# ------------------------------------------------------------------- polish
def _values(arr) -> list:
    """The numbers of a trace array as a flat list: a list, a NumPy array, or Plotly's
    typed-array JSON (``{"dtype": ..., "bdata": base64}``); strings and None dropped."""
    if arr is None:
        return []
    if isinstance(arr, dict) and "bdata" in arr:
        import base64
        a = np.frombuffer(base64.b64decode(arr["bdata"]), dtype=np.dtype(arr["dtype"]))
        return a.astype(float).ravel().tolist()
    if isinstance(arr, np.ndarray):
        return arr.astype(float, copy=False).ravel().tolist() if arr.dtype.kind in "biuf" else []
    out = []
    for v in (arr if isinstance(arr, (list, tuple)) else [arr]):
        if isinstance(v, (list, tuple)):
            out += _values(list(v))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(float(v))
    return out


def _strings(arr) -> list:
    if isinstance(arr, (list, tuple)):
        return [v for v in arr if isinstance(v, str)]
    if isinstance(arr, np.ndarray) and arr.dtype.kind in "OU":
        return [v for v in arr.tolist() if isinstance(v, str)]
    return []


def _axis_key(ref: str | None, letter: str) -> str:
    ref = ref or letter
    return f"{letter}axis{ref[1:]}"


def log_ticks(lo: float, hi: float) -> dict:
    """Tick settings for a log axis over [lo, hi]: whole decades when it spans two or
    more, else 1-2-5 values (1-2-3-5 if that gives too few), each labelled with its full
    value, so that no label reads like a value it is not (Plotly's minor labels "2", "5")."""
    if not (lo > 0 and hi > 0):
        return {}
    if hi / lo >= 100:
        return dict(dtick=1)
    for mant in ((1, 2, 5), (1, 2, 3, 5), (1, 1.5, 2, 3, 4, 5, 7)):
        vals = [m * 10.0 ** e for e in range(int(np.floor(np.log10(lo))) - 1, int(np.ceil(np.log10(hi))) + 1)
                for m in mant]
        vals = [v for v in vals if lo / 1.15 <= v <= hi * 1.15]
        if len(vals) >= 3:
            break
    return dict(tickmode="array", tickvals=vals, ticktext=[f"{v:g}" for v in vals])


def _title_text(t) -> str:
    if isinstance(t, dict):
        return t.get("text") or ""
    return t or ""


def _worded_cells(tr: dict) -> bool:
    """A heatmap whose cell text has words besides its values: in its template
    (``"lane %{z}"``), or in the ``text`` its template shows (``"%{text}"`` with cells like
    ``"dir+sK2<br>1.69 ★"``, a plan's name and its ratio)."""
    tt = tr.get("texttemplate")
    if not isinstance(tt, str):
        return False
    if re.search(r"[A-Za-z]{2,}", re.sub(r"%\{[^}]*\}", "", tt)):
        return True
    text = tr.get("text")
    if "%{text}" not in tt or not isinstance(text, (list, tuple)):
        return False
    cells = (c for row in text for c in (row if isinstance(row, (list, tuple)) else [row]))
    return any(isinstance(c, str) and re.search(r"[A-Za-z]{2,}", re.sub(r"<[^>]*>", "", c)) for c in cells)


def polish(fig: dict) -> dict:
    """Put a figure (a dict with ``data`` and ``layout``, as ``fig.to_plotly_json()``) in
    the book's style; changes ``fig["layout"]`` only (in place, and returns it):

    - the template (:func:`template`);
    - titles, and the titles a slider or button sets, wrapped (:func:`wrap`), with a
      top margin that holds the longest of them;
    - slider labels abbreviated (:func:`abbreviate`; the data keep the full text, which
      the hover shows), long category tick labels wrapped at their spaces (:func:`tick_label`);
    - heatmaps at equal aspect (unless an axis of theirs already has a ``scaleanchor``),
      except those whose cells carry words (``"lane %{z}"``), which fill their panel's
      width (an equal aspect an earlier style gave them is taken off);
    - the roofline's key ("diamond: measured DRAM traffic ...") above the plot, where
      figures drawn before it moved had it under the x axis title;
    - log axes labelled by :func:`log_ticks` (unless they set ``dtick`` or ``tickvals``);
    - a bar chart whose bars a slider recolours gets a key for its red bar when the
      figure has no legend entry for it (committed outputs drawn before that entry).
    """
    data = fig.get("data") or []
    lay = fig.setdefault("layout", {})
    lay["template"] = template().to_plotly_json()

    # titles, and what sliders and buttons set the title to
    tfont = ((lay.get("title") or {}).get("font") or {}).get("size", 15) if isinstance(lay.get("title"), dict) else 15
    need = 0
    t = lay.get("title")
    if t:
        t = {"text": t} if isinstance(t, str) else t
        t["text"] = wrap(_title_text(t))
        lay["title"] = t
        need = title_margin(t["text"], tfont)
        # hung from the top (the template), with the pad its number of lines needs
        t.setdefault("pad", {})["t"] = title_pad(t["text"], tfont)
        t.update(yref="container", y=1, yanchor="top")
    for menu in (lay.get("sliders") or []) + (lay.get("updatemenus") or []):
        for st in menu.get("steps") or menu.get("buttons") or []:
            for arg in st.get("args") or []:
                if isinstance(arg, dict) and isinstance(arg.get("title.text"), str):
                    arg["title.text"] = wrap(arg["title.text"])
                    need = max(need, title_margin(arg["title.text"], tfont))
                    if t and title_pad(arg["title.text"], tfont) != t["pad"]["t"]:
                        arg["title.pad.t"] = title_pad(arg["title.text"], tfont)
            if "label" in st and visible_len(str(st["label"])) > LABEL_WIDTH:
                st["label"] = abbreviate(st["label"])
    for sl in lay.get("sliders") or []:
        steps = sl.get("steps") or []
        # labels that would overlap under the slider even on a wide page: number the
        # steps instead (the title a step sets says what it is)
        if steps and len(steps) * max(visible_len(str(st.get("label", ""))) for st in steps) > SLIDER_CHARS:
            for k, st in enumerate(steps):
                st["label"] = str(k + 1)
    # the roofline's key, which figures drawn before it moved put under the x axis title
    # (where it ran past the figure's edge): above the plot, where it wraps
    for a in lay.get("annotations") or []:
        if (isinstance(a.get("text"), str) and a["text"].startswith("diamond: measured DRAM traffic")
                and a.get("yref") == "paper" and (a.get("y") or 0) < 0):
            a.update(x=0, y=1, xanchor="left", yanchor="bottom", align="left")
            m = lay.get("margin") or {}
            if m.get("b") == 80:
                m["b"] = 50
    # notes and subplot titles just above the top plots sit in the top margin too
    top = 0
    for a in lay.get("annotations") or []:
        if (a.get("showarrow") is False and a.get("yref") == "paper" and (a.get("y") or 0) >= 0.999
                and a.get("yanchor") == "bottom" and isinstance(a.get("text"), str)):
            a["text"] = wrap(a["text"], SUB_WIDTH)
            fs = (a.get("font") or {}).get("size") or 13
            top = max(top, int(sum(title_lines(a["text"])) * fs * 1.35) + 6)
    need = (need or (40 if top else 0)) + top
    if need:
        margin = lay.setdefault("margin", {})
        if margin.get("t", 80) < need:
            margin["t"] = need

    # axes: what each trace puts on them
    on = {}
    for tr in data:
        xa, ya = _axis_key(tr.get("xaxis"), "x"), _axis_key(tr.get("yaxis"), "y")
        on.setdefault(xa, []).append((tr, "x"))
        on.setdefault(ya, []).append((tr, "y"))
        if tr.get("type") == "heatmap":
            xl, yl = lay.setdefault(xa, {}), lay.setdefault(ya, {})
            if _worded_cells(tr):
                # cells that carry words ("lane 17"): as wide as the panel allows, not square
                if yl.get("scaleanchor") == "x" + xa[5:]:
                    yl.pop("scaleanchor")
                    yl.pop("constrain", None)
                    xl.pop("constrain", None)
                continue
            if not xl.get("scaleanchor") and not yl.get("scaleanchor"):
                yl["scaleanchor"] = "x" + xa[5:]
                yl.setdefault("constrain", "domain")
                xl.setdefault("constrain", "domain")
    for key, uses in on.items():
        ax = lay.setdefault(key, {})
        if ax.get("type") == "log" and not ax.get("dtick") and ax.get("tickvals") is None:
            vals = [v for tr, c in uses for v in _values(tr.get(c)) if v > 0]
            rng = ax.get("range")
            if rng and len(rng) == 2 and None not in rng:
                vals = [10.0 ** rng[0], 10.0 ** rng[1]]
            if vals:
                ax.update(log_ticks(min(vals), max(vals)))
        tv, tt = ax.get("tickvals"), ax.get("ticktext")
        if (isinstance(tv, list) and isinstance(tt, list) and len(tv) == len(tt)
                and any(isinstance(b, str) and b.endswith("…") and b != str(a) for a, b in zip(tv, tt))):
            # labels an earlier style cut with an ellipsis: wrapped whole instead
            ax["ticktext"] = [tick_label(a) if isinstance(b, str) and b.endswith("…") else b
                              for a, b in zip(tv, tt)]
        if ax.get("tickvals") is None and ax.get("type") in (None, "category"):
            cats = list(dict.fromkeys(s for tr, c in uses if tr.get("type") in ("bar", "scatter", "box")
                                      for s in _strings(tr.get(c))))
            if cats and any(visible_len(s) > LABEL_WIDTH for s in cats):
                ax.update(tickmode="array", tickvals=cats, ticktext=[tick_label(s) for s in cats])

    # the red bar of a sweep drawn before the sweep figure had a legend entry for it: a bar
    # trace with one colour per bar, one of them red, that a slider step recolours
    recolour = any(isinstance(arg, dict) and "marker.color" in arg
                   for sl in lay.get("sliders") or [] for st in sl.get("steps") or []
                   for arg in st.get("args") or [])
    slid = [tr for tr in data if tr.get("type") == "bar"
            and isinstance((tr.get("marker") or {}).get("color"), list)
            and SELECTED in tr["marker"]["color"]]
    key = bool(slid and recolour and not any(tr.get("name") == SELECTED_NAME for tr in data))
    anns = lay.get("annotations") or []
    has = [a for a in anns if SELECTED_NAME in (a.get("text") or "")]
    if key and not has:
        lay["annotations"] = anns + [dict(
            xref="paper", yref="paper", x=1, y=1.0, xanchor="right", yanchor="bottom", showarrow=False,
            font=dict(size=11), text=f"<span style='color:{SELECTED}'>■</span> {SELECTED_NAME}")]
    elif has and not key:           # (an earlier version of this function put one on other figures)
        lay["annotations"] = [a for a in anns if a not in has]
    return lay


template()      # every figure made after `import helpers.figures.style` starts from it
