"""The roofline figure and the ceilings table (chapters 0-7).

The model: Williams, Waterman and Patterson, "Roofline: an insightful visual
performance model for multicore architectures", CACM 52(4), 2009. Ceilings
are measured (or read) by helpers/runtime/roofline.py.
"""
from __future__ import annotations

import plotly.graph_objects as go

from helpers.runtime import bench
from helpers.runtime.roofline import intensity_kernel, intensity_min

from . import show, style


def show_ceilings(ceil: dict) -> None:
    """Display the ceilings as a table (with where they were measured)."""
    spec = ceil.get("spec", {})
    rows = [{"ceiling": "copy bandwidth (cudaMemcpy D2D, read + write)", "value": ceil.get("copy_GBps"), "unit": "GB/s"}]
    if spec.get("dram_peak_GBps"):
        rows.append({"ceiling": "DRAM bandwidth, spec (2 x memory clock x bus width)",
                     "value": round(spec["dram_peak_GBps"], 1), "unit": "GB/s"})
    for dt, v in ceil.get("cublas_TFLOPs", {}).items():
        rows.append({"ceiling": f"cuBLAS GEMM {dt}, 4096^3", "value": v, "unit": "TFLOP/s"})
    if spec.get("fp32_peak_TFLOPs"):
        lanes = round(spec["fp32_peak_TFLOPs"] * 1e6 / (spec["sms"] * 2 * spec["clock_MHz"]))
        rows.append({"ceiling": f"FP32 CUDA cores, spec ({spec['sms']} SMs x {lanes} FP32 lanes x 2 x {spec['clock_MHz']:.0f} MHz)",
                     "value": round(spec["fp32_peak_TFLOPs"], 1), "unit": "TFLOP/s"})
    if ceil.get("copy_GBps") and ceil.get("cublas_TFLOPs", {}).get("float32"):
        rows.append({"ceiling": "machine balance FP32 (cuBLAS / copy)",
                     "value": round(ceil["cublas_TFLOPs"]["float32"] * 1e3 / ceil["copy_GBps"], 1), "unit": "FLOP/byte"})
    show.table(rows, ["ceiling", "value", "unit"], f"Ceilings of this GPU, {ceil.get('where', '')}.")


def figure(recs: list, ceil: dict, title: str = "Roofline", measured: dict | None = None, dtypes=()):
    """A log-log roofline (plotly Figure) with the measured roofs and each kernel.

    ``measured``: {(kernel key, (M, N, K)): FLOP per byte of the DRAM traffic Nsight
    Compute counted} plus the key "where" (where those bytes were counted): a record
    found there is also drawn at that intensity (a diamond), and a note under the
    plot says what the three markers mean (chapter 8, the roofline at measured traffic).

    Each GEMM record is drawn at the intensity its loads request (filled
    marker, when the catalog has a traffic model) and at the minimal intensity
    of the problem (hollow marker), joined by a dotted line: the distance
    between the two is the re-reading the kernel does. The Tensor Core roofs (cuBLAS
    fp16 / bf16) are drawn only for a dtype that a record has, or that ``dtypes`` names:
    an FP32 chapter shows no Tensor Core roof. Records with no value
    (not recorded) are skipped. The title says where the numbers come from.
    """
    import numpy as np

    bw = ceil.get("copy_GBps")
    cub = ceil.get("cublas_TFLOPs", {})
    spec = ceil.get("spec", {})
    xs = np.logspace(-2, 4, 200)
    fig = go.Figure()
    roofs = []
    if spec.get("fp32_peak_TFLOPs"):
        roofs.append(("FP32 CUDA cores, spec", spec["fp32_peak_TFLOPs"], "dash"))
    if cub.get("float32"):
        roofs.append(("FP32 cuBLAS, measured", cub["float32"], "solid"))
    for dt in ("float16", "bfloat16"):           # Tensor Core roofs only where a record is fp16/bf16
        if cub.get(dt) and (dt in dtypes or any(r.get("dtype") == dt for r in recs)):
            roofs.append((f"Tensor Cores {dt} cuBLAS, measured", cub[dt], "dot"))
    if bw:
        for name, peak, dash in roofs:
            ys = np.minimum(xs * bw / 1e3, peak)
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=f"{name}: {peak:.1f} TFLOP/s",
                                     line=dict(dash=dash, width=1.5),
                                     hovertemplate="%{x:.2f} FLOP/B -> %{y:.2f} TFLOP/s<extra>" + name + "</extra>"))
        fig.add_annotation(x=np.log10(0.05), y=np.log10(0.05 * bw / 1e3), text=f"copy {bw / 1e3:.2f} TB/s",
                           showarrow=False, textangle=-38, yshift=12, font=dict(size=11))
    for dt, v in cub.items():
        isz = 2 if dt in ("float16", "bfloat16") else 4
        if dt == "float32" or any(r.get("dtype") == dt for r in recs):
            fig.add_trace(go.Scatter(x=[intensity_min(4096, 4096, 4096, isz, isz)], y=[v], mode="markers",
                                     name=f"cuBLAS {dt}, 4096^3", marker=dict(symbol="star", size=13),
                                     hovertemplate=f"cuBLAS {dt} 4096^3: {v} TFLOP/s<extra></extra>"))
    # Live roofs are this GPU's: a number recorded on another GPU (a kernel this one cannot
    # run) does not belong under them, so it is left out and the title says so.
    away = [r for r in recs if r.get("unable") and ceil.get("source") == "live"]
    drawn_measured = False
    for r in recs:
        if r.get("value") is None or r.get("metric") != "TFLOP/s" or r in away:
            continue
        shape = r["shape"]
        isz = 2 if r["dtype"] in ("float16", "bfloat16") else 4
        i_min = intensity_min(*shape, in_bytes=isz, out_bytes=isz)
        i_k = intensity_kernel(r["kernel"], r["params"], shape)
        label = r.get("title", r["kernel"])
        hover = (f"{label}<br>{r['value']:.2f} TFLOP/s, {style.ratio_text(r['ratio'])} of cuBLAS"
                 f"<br>{style.params_text(r['params'])}<br>shape {shape}")
        i_m = (measured or {}).get((r["kernel"], tuple(shape)))
        pts = ([(i_m, "diamond", 12, f"<br>measured intensity (DRAM bytes counted by ncu): {i_m:.1f} FLOP/B")]
               if i_m else [])
        pts += [(i_k, "circle", 11, f"<br>intensity requested by its loads: {i_k:.2f} FLOP/B")] if i_k else []
        pts += [(i_min, "circle-open", 9, f"<br>minimal intensity: {i_min:.1f} FLOP/B")]
        pts.sort(key=lambda t: t[0])
        fig.add_trace(go.Scatter(
            x=[x for x, *_ in pts], y=[r["value"]] * len(pts), mode="lines+markers", name=label,
            line=dict(dash="dot", width=1),
            marker=dict(size=[z for _, _, z, _ in pts], symbol=[m for _, m, _, _ in pts]),
            hovertext=[hover + h for *_, h in pts], hoverinfo="text"))
        drawn_measured = drawn_measured or bool(i_m)
    where = ceil.get("where", "")
    pts_where = bench.where(recs) if recs else ""
    if pts_where and pts_where != where:         # e.g. live roofs under the record's running table
        where = f"roofs: {where}; points: {pts_where}"
    if away:
        where += ("; left out, recorded on another GPU (this one cannot run them): "
                  + ", ".join(r["kernel"] for r in away))
    fig.update_layout(
        title=dict(text=f"{title}<br><sup>{where}</sup>", x=0.01),
        xaxis=dict(type="log", title="arithmetic intensity (FLOP/byte)"),
        yaxis=dict(type="log", title="TFLOP/s"),
        height=480, legend=dict(font=dict(size=10)), margin=dict(l=60, r=20, t=70, b=50))
    if drawn_measured:
        # a key above the plot (under the title), where a narrow page can wrap it
        fig.add_annotation(xref="paper", yref="paper", x=0, y=1, yanchor="bottom", showarrow=False,
                           xanchor="left", align="left", font=dict(size=10),
                           text="diamond: measured DRAM traffic (" + measured.get("where", "?")
                           + "); filled circle: what the loads request; hollow: minimal traffic")
        fig.update_layout(height=510)
    return fig
