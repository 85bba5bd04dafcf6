"""Index mapping of the one-output-per-thread kernels (heavens 1 and 2).

Which block, warp and thread computes each element of C, and which elements
of A and B one warp loads at a given step of its k loop. The model is the
kernel's index arithmetic written in Python (see kernels/01_naive.cu and
kernels/02_vectorized.cu); on a GPU the tests compare :func:`owner` with what
the instrumented build (``-DRECORD_OWNER=1``) records, element by element.

Owner code convention: ``blockLinear * 1024 + threadLinear`` with
``blockLinear = blockIdx.y * gridDim.x + blockIdx.x`` and
``threadLinear = threadIdx.y * blockDim.x + threadIdx.x``; warp = threadLinear // 32.
"""
from __future__ import annotations

import numpy as np

from . import gpu
from .catalog import cdiv

SECTOR = 32  # bytes: the unit in which L1/L2 move global memory (a warp's
             # request costs one transaction per distinct 32-byte sector)


def _threads_of(key: str, p: dict, shape):
    """For every output element (i, j): (bx, by, tx, ty, gridDim.x)."""
    M, N, K = shape
    BX, BY = p["BLOCK_X"], p["BLOCK_Y"]
    i, j = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    if key == "naive_xfirst":
        gx = cdiv(M, BX)
        return i // BX, j // BY, i % BX, j % BY, gx
    if key in ("naive_yfirst", "kmajor"):
        gx = cdiv(N, BX)
        return j // BX, i // BY, j % BX, i % BY, gx
    if key == "vec4":
        q = j // 4
        gx = cdiv(N, 4 * BX)
        return q // BX, i // BY, q % BX, i % BY, gx
    raise KeyError(f"kernel={key!r}: no index model in helpers/mapping.py")


def owner(key: str, p: dict, shape) -> np.ndarray:
    """int32 (M, N): blockLinear * 1024 + threadLinear of the thread writing C[i, j]."""
    bx, by, tx, ty, gx = _threads_of(key, p, shape)
    return ((by * gx + bx) * 1024 + ty * p["BLOCK_X"] + tx).astype(np.int32)


def warp_loads(key: str, p: dict, shape, block=(0, 0), warp: int = 0, step: int = 0) -> list:
    """The global loads one warp issues at k-loop iteration ``step``.

    Returns a list of load instructions, each {"operand": "A"|"B", "elements":
    [(row, col), ...] of the logical matrix A (M x K) or B (K x N), "bytes":
    per lane, "sectors": number of distinct 32-byte sectors the warp touches}.
    For the K-major kernel, B elements are reported in B's logical (k, n)
    coordinates but sectors are computed on Bt's real addresses.
    """
    M, N, K = shape
    BX, BY = p["BLOCK_X"], p["BLOCK_Y"]
    lanes = [(t % BX, t // BX) for t in range(32 * warp, 32 * warp + 32) if t < BX * BY]
    bx, by = block
    loads = []

    def add(operand, elems, addrs, nbytes):
        ok = [(e, a) for e, a in zip(elems, addrs) if e is not None]
        if not ok:
            return
        sectors = {a * 4 // SECTOR for _, a in ok for a in range(a, a + nbytes // 4)}
        loads.append({"operand": operand, "elements": sorted({x for e, _ in ok for x in e}),
                      "bytes": nbytes, "sectors": len({s for s in sectors})})

    if key in ("naive_xfirst", "naive_yfirst"):
        k = step
        rc = []
        for tx, ty in lanes:
            if key == "naive_xfirst":
                i, j = bx * BX + tx, by * BY + ty
            else:
                i, j = by * BY + ty, bx * BX + tx
            rc.append((i, j) if i < M and j < N and k < K else None)
        add("A", [[(i, k)] if x else None for x in rc for (i, j) in [x or (0, 0)]],
            [(x[0] * K + k) if x else 0 for x in rc], 4)
        add("B", [[(k, j)] if x else None for x in rc for (i, j) in [x or (0, 0)]],
            [(k * N + x[1]) if x else 0 for x in rc], 4)
    elif key == "vec4":
        k0 = 4 * step
        rc = []
        for tx, ty in lanes:
            i, j = by * BY + ty, 4 * (bx * BX + tx)
            rc.append((i, j) if i < M and j < N and k0 < K else None)
        add("A", [[(x[0], k0 + d) for d in range(4)] if x else None for x in rc],
            [(x[0] * K + k0) if x else 0 for x in rc], 16)
        for kk in range(4):
            add("B", [[(k0 + kk, x[1] + d) for d in range(4)] if x else None for x in rc],
                [((k0 + kk) * N + x[1]) if x else 0 for x in rc], 16)
    elif key == "kmajor":
        k0 = 4 * step
        rc = []
        for tx, ty in lanes:
            i, j = by * BY + ty, bx * BX + tx
            rc.append((i, j) if i < M and j < N and k0 < K else None)
        add("A", [[(x[0], k0 + d) for d in range(4)] if x else None for x in rc],
            [(x[0] * K + k0) if x else 0 for x in rc], 16)
        add("B", [[(k0 + d, x[1]) for d in range(4)] if x else None for x in rc],
            [(x[1] * K + k0) if x else 0 for x in rc], 16)
    else:
        raise KeyError(f"kernel={key!r}: no index model in helpers/mapping.py")
    return loads


def sectors_per_fma(key: str, p: dict, shape=(4096, 4096, 4096)) -> float:
    """32-byte sectors one warp requests per FMA it performs (warp 0, block 0, step 0):
    the number behind the coalescing argument of chapter 1."""
    loads = warp_loads(key, p, shape)
    fmas = 32 * (16 if key == "vec4" else 4 if key == "kmajor" else 1)
    return sum(l["sectors"] for l in loads) / fmas


def figure(key: str, p: dict, shape=(32, 32, 8), block=(0, 0), warp: int = 0, steps: int = 4):
    """Three heatmaps: C colored by warp (hover: block, warp, lane, thread),
    and A and B with the elements that warp ``warp`` of ``block`` loads at
    k-step t highlighted; a Plotly slider moves t (works in the static book)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    M, N, K = shape
    own = owner(key, p, shape)
    blk, thr = own // 1024, own % 1024
    wid = blk * ((p["BLOCK_X"] * p["BLOCK_Y"] + 31) // 32) + thr // 32
    gx = _threads_of(key, p, shape)[4]
    target_blk = block[1] * gx + block[0]
    sel = (blk == target_blk) & (thr // 32 == warp)
    tpb = p["BLOCK_X"]
    custom = np.stack([blk % gx, blk // gx, thr // 32, thr % 32, thr % tpb, thr // tpb], -1)
    custom = custom.astype(np.uint8 if custom.max() < 256 else np.uint16)   # compact in the notebook
    zc = (wid % 12).astype(np.uint8)
    zc[sel] = 13
    fig = make_subplots(rows=1, cols=3, column_widths=[0.22, 0.39, 0.39], horizontal_spacing=0.06,
                        subplot_titles=(f"A ({M}x{K})", f"B ({K}x{N})", f"C ({M}x{N}): one color per warp"))

    def z_for(step):
        zA, zB = np.zeros((M, K), np.uint8), np.zeros((K, N), np.uint8)
        notes = []
        for ld in warp_loads(key, p, shape, block, warp, step):
            z = zA if ld["operand"] == "A" else zB
            for (r, c) in ld["elements"]:
                if r < z.shape[0] and c < z.shape[1]:
                    z[r, c] = 1
            notes.append(f"{ld['operand']}: {len(ld['elements'])} floats in {ld['sectors']} sectors")
        return zA, zB, notes

    zA, zB, notes0 = z_for(0)
    scale = [[0, "#eeeeee"], [1, "#d62728"]]
    fig.add_trace(go.Heatmap(z=zA, colorscale=scale, showscale=False, zmin=0, zmax=1,
                             hovertemplate="A[%{y}][%{x}]<extra></extra>"), 1, 1)
    fig.add_trace(go.Heatmap(z=zB, colorscale=scale, showscale=False, zmin=0, zmax=1,
                             hovertemplate="B[%{y}][%{x}]<extra></extra>"), 1, 2)
    fig.add_trace(go.Heatmap(z=zc, colorscale="Turbo", zmin=0, zmax=13, showscale=False, customdata=custom,
                             hovertemplate="C[%{y}][%{x}]<br>block (%{customdata[0]}, %{customdata[1]})"
                                           "<br>warp %{customdata[2]}, lane %{customdata[3]}"
                                           "<br>thread (%{customdata[4]}, %{customdata[5]})<extra></extra>"), 1, 3)
    steps_ui = []
    for s in range(steps):
        a, b, notes = z_for(s)
        kk = f"k = {s}" if key.startswith("naive") else f"k = {4 * s}..{4 * s + 3}"
        steps_ui.append(dict(method="update", label=str(s),
                             args=[{"z": [a.tolist(), b.tolist()]}, {"title.text": _title(key, warp, block, kk, notes)}, [0, 1]]))
    for c in (1, 2, 3):
        fig.update_yaxes(autorange="reversed", row=1, col=c)
    fig.update_layout(title=dict(text=_title(key, warp, block, "k = 0" if key.startswith("naive") else "k = 0..3",
                                             notes0), x=0.01),
                      height=430, margin=dict(l=40, r=20, t=90, b=70),
                      sliders=[dict(active=0, steps=steps_ui, currentvalue=dict(prefix="k-loop step "),
                                    pad=dict(t=30))])
    return fig


def _title(key, warp, block, kk, notes):
    return (f"{key}: warp {warp} of block {block} (outlined dark red in C), loads at {kk}"
            f"<br><sup>{'; '.join(notes)} (a 32-byte sector is the unit of a memory transaction)</sup>")


def check_against_kernel(key: str, shape=(70, 100, 20)) -> str:
    """Compare :func:`owner` with the instrumented kernel (-DRECORD_OWNER=1),
    element by element. Live: AssertionError on any difference, else a
    one-line report. Recorded: says where the check runs instead."""
    from . import catalog, launch
    if not gpu.live():
        return (f"{key}: no GPU here; the GPU suite checks this model against the kernel\n"
                "  (tests/gpu/test_kernels.py::test_owner_model_matches_kernel).")
    spec = catalog.get(key)
    got = launch.record_owner(key, shape)
    want = owner(key, spec.params(), shape)
    bad = int((got != want).sum())
    assert bad == 0, f"{key}: the index model and the kernel disagree on {bad} of {got.size} elements"
    return (f"{key} at M, N, K = {shape}: the kernel's recorded (block, thread) for all {got.size} "
            "elements of C equals the model.")
