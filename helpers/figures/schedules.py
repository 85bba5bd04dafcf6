"""Two schedules as pictures: the cp.async stage ring over the main loop (chapters 5 and 7),
and how data-parallel, split-K and stream-K share out the work of a GEMM (chapter 9).

* :func:`pipeline_timeline_figure`: which k-tile each shared-memory stage holds at each
  iteration of the main loop of ``sgemm_cp_async`` or ``gemm_mma_sync``, the copies in
  flight, the tile the math reads, and the wait_group + barrier points
  (:func:`helpers.models.pipeline.kernel_stage_schedule`). It speaks the visual language
  of chapter 10's mbarrier timeline (:func:`helpers.figures.hopper.pipeline_figure`): one
  row per stage and one for the math, bars numbered by k-tile and coloured by stage
  (:func:`stage_bar`, which both use).
* :func:`partition_figure`: the output tiles x k-tiles of one problem, coloured by the
  block that computes each piece, with the fix-up and reduction points, for each schedule
  (:func:`helpers.models.anyshape.work_partition`).

Both are models, not measurements, and their titles say so.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from helpers.models import anyshape, pipeline
from helpers.models.words import counted
from helpers.runtime import catalog

from .style import GROUP_COLORS, SELECTED

SCHEDULE_NOTE = "a model of the kernel's order of copies, waits and barriers, not a timing"
ZERO_FILL = "#9a9a9a"
HATCH_INK = "#1a1a1a"       # the k-tile number on a hatched bar


def stage_color(stage: int) -> str:
    """The colour of shared-memory stage ``stage`` in every timeline of the book."""
    return GROUP_COLORS[stage % len(GROUP_COLORS)]


def ink_on(color: str) -> str:
    """Dark or white text, whichever contrasts more with the hex colour ``color`` (WCAG 2.x
    relative luminance and contrast ratio; the two contrasts are equal near luminance 0.2)."""
    r, g, b = (int(color[i:i + 2], 16) / 255 for i in (1, 3, 5))
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return HATCH_INK if 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2] > 0.2 else "white"


def stage_bar(rows: list, start: list, end: list, text: list, color, custom: list, hover: str,
              name: str, pattern: list | None = None) -> go.Bar:
    """Horizontal bars of one stage on a timeline: row labels ``rows``, from ``start`` to
    ``end``, numbered ``text`` (the k-tile) inside, in ``color`` (one, or one per bar) with a
    white edge; ``pattern``: a fill pattern per bar ("/" for copies in flight, "" for solid)."""
    marker = dict(color=color, line=dict(width=1, color="white"))
    # a hatched bar reads as a pale one whatever its colour: its k-tile number in dark ink
    # (Plotly's automatic contrast goes by the bar's colour and writes white on the pale hatch)
    colors = color if isinstance(color, list) else [color] * len(rows)
    hatched = pattern if pattern is not None else [""] * len(rows)
    font = dict(color=[HATCH_INK if h else ink_on(c) for h, c in zip(hatched, colors)], size=12)
    if pattern is not None:
        # "replace": each bar's colour is the pattern's background (Plotly's default
        # "overlay" takes a list of bar colours for one colour and warns)
        marker["pattern"] = dict(shape=pattern, fgcolor="white", fgopacity=0.55, size=6, solidity=0.35,
                                 fillmode="replace")
    return go.Bar(y=rows, x=[e - s for s, e in zip(start, end)], base=start, orientation="h", name=name,
                  marker=marker, text=text, textposition="inside", insidetextanchor="middle", insidetextfont=font,
                  customdata=custom, hovertemplate=hover + "<extra></extra>")


def _rows(stages: int, math: str) -> list:
    return [f"stage {s}" for s in range(stages)] + [math, "wait + barrier"]


def pipeline_timeline_figure(key: str, p: dict | None = None, k_tiles: int | None = None):
    """The cp.async ring of kernel ``key`` (``cp_async``: kernels/05; ``mma_sync_f16`` /
    ``mma_sync_bf16``: kernels/07) with parameters ``p`` over ``k_tiles`` k-tiles (default
    STAGES + 4): one row per shared-memory stage, hatched while the copies of a k-tile are in
    flight (issued, not yet retired by a wait), solid while the math reads it (grey: copies
    past the last k-tile, zero-filled, that nobody reads: kernels/07 with LOAD_SPREAD = 1); one
    row for the math, bar j = the k-tile multiplied in iteration j; diamonds where the loop
    waits (``cp.async.wait_group STAGES-2``) and synchronizes (``__syncthreads``), dotted
    lines through every row. Time unit: one iteration of the main loop. From
    :func:`helpers.models.pipeline.kernel_stage_schedule`. Raises ValueError for a kernel
    without a cp.async ring or k_tiles < 1.
    """
    spec = catalog.get(key)
    q = spec.full(spec.params(**(p or {})))
    S = int(q.get("STAGES", 0))
    KT = S + 4 if k_tiles is None else k_tiles
    ev = pipeline.kernel_stage_schedule(spec.entry, q, KT)
    fp32 = spec.entry == "sgemm_cp_async"
    math = "FFMA" if fp32 else "mma.sync"
    rows = _rows(S, math)
    fig = go.Figure()
    for s in range(S):
        cp = [e for e in ev if e["kind"] == "copy" and e["stage"] == s]
        rd = [e for e in ev if e["kind"] == "read" and e["stage"] == s]
        fig.add_trace(stage_bar(
            [rows[s]] * (len(cp) + len(rd)), [e["issue"] for e in cp] + [e["start"] for e in rd],
            [e["landed"] for e in cp] + [e["end"] for e in rd], [str(e["tile"]) for e in cp + rd],
            [ZERO_FILL if e["zero_fill"] else stage_color(s) for e in cp] + [stage_color(s)] * len(rd),
            [[e["tile"], "zero-filled copies (past the last k-tile, nobody reads them)" if e["zero_fill"]
              else "copies in flight", e["issue"], e["landed"]] for e in cp]
            + [[e["tile"], "read by the math", e["start"], e["end"]] for e in rd],
            f"stage {s}, k-tile %{{customdata[0]}}: %{{customdata[1]}}<br>from %{{customdata[2]:.2f}} to "
            "%{customdata[3]:.2f}", f"stage {s}", pattern=["/"] * len(cp) + [""] * len(rd)))
    mt = [e for e in ev if e["kind"] == "math"]
    fig.add_trace(stage_bar([math] * len(mt), [e["start"] for e in mt], [e["end"] for e in mt],
                            [str(e["tile"]) for e in mt], [stage_color(e["stage"]) for e in mt],
                            [[e["tile"], e["stage"]] for e in mt],
                            f"iteration %{{customdata[0]}}: {math} on k-tile %{{customdata[0]}} from stage "
                            "%{customdata[1]}", math))
    waits = [e for e in ev if e["kind"] == "wait"]
    hover = [(f"cp.async.wait_group {w['pending']}: k-tiles 0..{max(w['landed'])} complete" if w["landed"]
              else f"cp.async.wait_group {w['pending']}")
             + ("<br>__syncthreads(): every warp sees them, and has finished reading the stage refilled next"
                if w["pending"] else "<br>after the loop: nothing may land after the block exits") for w in waits]
    fig.add_trace(go.Scatter(x=[w["time"] for w in waits], y=[rows[-1]] * len(waits), mode="markers",
                             marker=dict(symbol=["diamond" if w["pending"] else "x" for w in waits], size=10,
                                         color=SELECTED), text=hover, hovertemplate="%{text}<extra></extra>",
                             name="wait + barrier"))
    lines = [dict(type="line", xref="x", yref="paper", x0=w["time"], x1=w["time"], y0=0, y1=1,
                  line=dict(color="rgba(128,128,128,0.7)", width=1, dash="dot")) for w in waits if w["pending"]]
    lines.append(dict(type="rect", xref="x", yref="paper", x0=-1, x1=0, y0=0, y1=1, layer="below",
                      line=dict(width=0), fillcolor="rgba(128,128,128,0.12)"))
    steps = f"BK = {q['BK']} k steps" if fp32 else f"{q['BK'] // 16} k16 steps"
    how = "copies at the first" if fp32 or not q.get("LOAD_SPREAD", 1) else "copies spread over them"
    fig.update_layout(
        barmode="overlay", height=170 + 38 * len(rows), margin=dict(l=110, r=20, t=110, b=50), showlegend=False,
        shapes=lines,
        annotations=[dict(x=-0.5, y=1, xref="x", yref="paper", yanchor="bottom", text="prologue", showarrow=False,
                          font=dict(size=11))],
        title=dict(text=(f"{key}, STAGES = {S}: which k-tile each shared-memory stage holds, {counted(KT, 'k-tile')}"
                         f"<br><sup>hatched: copies in flight; solid: read by the math; ◆ cp.async.wait_group "
                         f"{S - 2} + __syncthreads(); one unit: one iteration ({steps}, {how}); "
                         f"{SCHEDULE_NOTE}</sup>"),
                   x=0.01),
        xaxis=dict(title="main-loop iteration", range=[-1.05, KT + 0.15],
                   dtick=1, zeroline=False),
        yaxis=dict(categoryorder="array", categoryarray=rows[::-1]))
    return fig


# ------------------------------------------------------------------ split-K and stream-K
SCHEDULES = (("dp", "data-parallel"), ("splitk", "split-K"), ("streamk", "stream-K"))
CTA_COLORS = GROUP_COLORS + ["#9c755f", "#bab0ac"]


def _partition_traces(w: dict, sms: int, visible: bool) -> list:
    segs, KT = w["segments"], w["k_tiles"]
    rc = w["tile_rc"]
    per_row = np.bincount([s["tile"] for s in segs], minlength=w["tiles"])     # numbers only where they fit
    cd = [[s["cta"], s["kernel"], s["block"], s["k0"], s["k1"] - 1, int(rc[s["tile"], 0]), int(rc[s["tile"], 1]),
           s["tile"], (s["cta"] // sms) if s["kernel"] == "gemm_any" else 0] for s in segs]
    bars = go.Bar(
        y=[s["tile"] for s in segs], x=[s["k1"] - s["k0"] for s in segs], base=[s["k0"] for s in segs],
        orientation="h", width=0.9, marker=dict(color=[CTA_COLORS[s["cta"] % len(CTA_COLORS)] for s in segs],
                                                line=dict(width=0)),
        text=[str(s["cta"]) if per_row[s["tile"]] <= 12 and w["tiles"] <= 48 else "" for s in segs],
        textposition="inside", insidetextanchor="middle", textangle=0, textfont=dict(size=10),
        customdata=cd, visible=visible, name="blocks",
        hovertemplate=("block %{customdata[0]} (%{customdata[1]}, block %{customdata[2]}): tile %{customdata[7]} "
                       "= (%{customdata[5]}, %{customdata[6]}),<br>k-tiles %{customdata[3]}..%{customdata[4]}"
                       "<extra></extra>"))
    fix = [s for s in segs if s["kernel"] == "gemm_streamk" and not s["owner"]]
    own = {s["tile"]: s["cta"] for s in segs if s["owner"]}
    fixups = go.Scatter(
        x=[s["k0"] for s in fix], y=[s["tile"] for s in fix], mode="markers", visible=visible, name="fix-ups",
        marker=dict(symbol="diamond", size=8, color=SELECTED, line=dict(width=1, color="white")),
        customdata=[[s["cta"], s["tile"], own.get(s["tile"], -1), s["k0"], s["k1"] - 1] for s in fix],
        hovertemplate=("fix-up: block %{customdata[0]} writes its partial of tile %{customdata[1]} (k-tiles "
                       "%{customdata[3]}..%{customdata[4]}) to the workspace and raises its flag;<br>the tile's "
                       "owner, block %{customdata[2]}, adds it<extra></extra>"))
    tiles = sorted({s["tile"] for s in segs})
    if w["schedule"] == "splitk":
        what = [f"splitk_reduce adds the {counted(w['splits'], 'partial tile')}, stores C" for _ in tiles]
    else:
        what = [f"block {own[t]} stores C" + (f" after adding {counted(n, 'partial')}" if n else "")
                for t in tiles for n in [len(next(s for s in segs if s["tile"] == t and s["owner"])["adds"])]]
    stores = go.Scatter(x=[KT] * len(tiles), y=tiles, mode="markers", visible=visible, name="C stored",
                        marker=dict(symbol="triangle-right", size=8, color=SELECTED), text=what,
                        hovertemplate="tile %{y}: %{text}<extra></extra>")
    return [bars, fixups, stores]


def _bands(w: dict, sms: int) -> dict:
    """Layout of one view: grey bands behind the waves of data-parallel blocks (and behind
    the data-parallel part of stream-K), y ticks where each starts."""
    n, dp = w["tiles"], w["dp_tiles"]
    if w["schedule"] == "dp" and n > sms:
        starts = list(range(0, n, sms))
        names = [f"wave {i + 1}" for i in range(len(starts))]
    elif w["schedule"] == "streamk" and dp:
        starts, names = [0, dp], ["data-parallel", "streamed"]
    else:
        return {"shapes": [], "yaxis.tickmode": "auto", "yaxis.tickvals": None, "yaxis.ticktext": None}
    ends = starts[1:] + [n]
    shapes = [dict(type="rect", xref="paper", yref="y", x0=0, x1=1, y0=a - 0.5, y1=b - 0.5, layer="below",
                   line=dict(width=0), fillcolor="rgba(128,128,128,0.16)") for i, (a, b) in enumerate(zip(starts, ends))
              if i % 2 == 0]
    return {"shapes": shapes, "yaxis.tickmode": "array", "yaxis.tickvals": starts,
            "yaxis.ticktext": [f"{a}: {t}" for a, t in zip(starts, names)]}


def _partition_title(w: dict, M, N, K, sms, cfg) -> str:
    n, KT, c = w["tiles"], w["k_tiles"], counted
    segs = w["segments"]
    head = f"{M} x {N} x {K}: {c(n, 'tile')} of {cfg['BM']} x {cfg['BN']} x {c(KT, 'k-tile')} of BK = {cfg['BK']}"
    if w["schedule"] == "dp":
        body = (f"data-parallel: {c(n, 'block')}, each walks the {c(KT, 'k-tile')} of its tile; "
                f"{n / sms:.2f} waves on {sms} SMs")
    elif w["schedule"] == "splitk":
        ks = segs[0]["k1"] - segs[0]["k0"]
        body = (f"split-K, s = {w['splits']}: {c(w['ctas'], 'block')} of up to {c(ks, 'k-tile')} ({w['ctas'] / sms:.2f} "
                f"waves); then splitk_reduce adds the fp32 partials (▶)")
    else:
        sk = [s for s in segs if s["kernel"] == "gemm_streamk"]
        per = [sum(s["k1"] - s["k0"] for s in sk if s["cta"] == c) for c in sorted({s["cta"] for s in sk})]
        share = f"{min(per)}" if min(per) == max(per) else f"{min(per)}-{max(per)}"
        ks = "k-tile" if share == "1" else "k-tiles"
        body = (f"stream-K: {c(w['dp_tiles'], 'tile')} data-parallel, then {sms} blocks of {share} {ks} each "
                f"across the other {n - w['dp_tiles']}; ◆ fix-ups, ▶ C stored")
    return f"{head}<br>{body}"


def partition_figure(M: int, N: int, K: int, sms: int = 132, splits: int | None = None,
                     policy: str | None = None, cfg: dict = anyshape.CFG):
    """Who computes which (output tile, k-tile) of an M x N x K GEMM on chapter 9's kernels,
    one view per schedule (a Plotly slider): data-parallel, split-K with ``splits`` splits
    (default: :func:`helpers.models.anyshape.choose_splits`) and stream-K (``policy`` as
    :func:`helpers.models.anyshape.dp_tiles`; default: what :func:`~helpers.models.anyshape.streamk_policy`
    picks, or "sk", everything streamed, where it would stay data-parallel). Rows: tiles in
    launch order; columns: k-tiles; colour and number: the block (10 colours in turn;
    stream-K's blocks are one per SM); ◆ a partial that the tile's owner adds (fix-up);
    ▶ where C is stored (split-K: by the reduction kernel). The subtitle names the plan the
    dispatcher would choose. From :func:`helpers.models.anyshape.work_partition`. Raises
    ValueError for sizes < 1 or a bad policy.
    """
    if policy is None:
        pol = anyshape.streamk_policy(M, N, sms, cfg)[0]
        policy = "sk" if pol == "dp" else pol
    ws = [anyshape.work_partition(M, N, K, s, sms, splits=splits, policy=policy, cfg=cfg) for s, _ in SCHEDULES]
    fig = go.Figure()
    for i, w in enumerate(ws):
        fig.add_traces(_partition_traces(w, sms, visible=i == 0))
    auto = anyshape.plan(M, N, K, aligned=True, sms=sms, cfg=cfg)
    sub = (f"<br><sup>colour and number: the block; the dispatcher's plan for this shape on {sms} SMs: "
           f"{auto.name}; a model of the launches of kernels/09_any_shape.cu, not a timing</sup>")
    titles = [_partition_title(w, M, N, K, sms, cfg) + sub for w in ws]
    steps = [dict(method="update", label=label,
                  args=[{"visible": [j // 3 == i for j in range(3 * len(ws))]},
                        {"title.text": titles[i], **_bands(ws[i], sms)}])
             for i, (s, label) in enumerate(SCHEDULES)]
    first = steps[0]["args"][1]
    n, KT = ws[0]["tiles"], ws[0]["k_tiles"]
    fig.update_layout(
        barmode="overlay", height=min(900, 300 + max(14 * n, 120)), margin=dict(l=60, r=20, t=120, b=50),
        showlegend=False,
        title=dict(text=titles[0], x=0.01),
        xaxis=dict(title=f"k-tile (BK = {cfg['BK']})", range=[-0.01 * KT, KT * 1.04], zeroline=False),
        shapes=first["shapes"],
        yaxis=dict(title="output tile (launch order)", autorange="reversed", zeroline=False,
                   tickmode=first["yaxis.tickmode"], tickvals=first["yaxis.tickvals"],
                   ticktext=first["yaxis.ticktext"]),
        sliders=[dict(active=0, steps=steps, currentvalue=dict(prefix="schedule: "), x=0.08, len=0.84,
                      pad=dict(t=30))])
    return fig
