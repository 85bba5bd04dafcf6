"""Chapter 4, bank conflicts: padding, swizzle, transposed tiles (kernels/04_bank_conflicts.cu).

The catalog entries of the four A-tile layouts; :func:`bank_explorer` (the
live twin of :func:`helpers.figures.banks.bank_figure`); :func:`ncu_plan` and
:func:`ncu_predict`, the launches ``scripts/ncu_banks.py`` profiles and what
the model predicts for them; :func:`bank_counter_rows` /
:func:`show_bank_counters`, the model next to the recorded Nsight Compute
counters (``results.artifact("banks")``); :func:`show_store_tables` (the model's
store and read costs per tile width) and :func:`show_timings` (the layouts against
heaven 3 and cuBLAS).
"""
from __future__ import annotations

import ipywidgets as w
from IPython.display import display

from helpers.figures import banks as banks_fig, show, style
from helpers.figures.banks import DIRECTIONS, LAYOUTS, bank_figure
from helpers.models import banks, tiles
from helpers.models.raster import cdiv
from helpers.runtime import bench, catalog
from helpers.runtime.catalog import Kernel, register

from . import common
from .common import NEEDS_NOTEBOOK, artifact_note, control_note, staged, threads_rules


# chapter 4: 1-D thread tile (TN outputs along a row of C), the A tile read
# down a column by the warp; four layouts of the A tile (kernels/04).
def _tile1d_threads(p):
    return p["BM"] * p["BN"] // p["TN"]


def _tile1d_rules(p, s):
    BM, BN, BK, TN = p["BM"], p["BN"], p["BK"], p["TN"]
    t = _tile1d_threads(p)
    return staged(lambda: [
        (TN % 4 == 0, "TN", TN, "must be a multiple of 4 (B is read as float4)"),
        (BM % 16 == 0, "BM", BM, "must be a multiple of 16 (a warp covers 16 rows of the tile)"),
        (BN % (2 * TN) == 0, "BN", BN, f"must be a multiple of 2*TN={2 * TN} (a warp covers 2*TN columns)"),
    ] + threads_rules(t), lambda: [
        (t % BK == 0, "BK", BK, f"must divide the {t} threads (BM*BN/TN): each thread loads one column of the A tile"),
        (t % BN == 0, "BN", BN, f"must divide the {t} threads (BM*BN/TN): each thread loads one column of the B tile"),
        ((BM * BK) % t == 0, "BM*BK", BM * BK, f"must be a multiple of the {t} threads (A tile split evenly)"),
        ((BK * BN) % t == 0, "BK*BN", BK * BN, f"must be a multiple of the {t} threads (B tile split evenly)"),
    ])


_T1 = dict(chapter=4, file="04_bank_conflicts.cu", entry="sgemm_tile1d", op="gemm",
           choices={"BM": (32, 64, 128), "BN": (32, 64, 128), "BK": (16, 32), "TN": (4, 8, 16),
                    "PAD": (0, 1, 2, 4)},
           block=lambda p: (_tile1d_threads(p), 1, 1),
           grid=lambda p, s: (cdiv(s[1], p["BN"]), cdiv(s[0], p["BM"]), 1),
           rules=_tile1d_rules, owner=tiles.owner_tile1d)
_T1_BASE = {"BM": 64, "BN": 64, "BK": 32, "TN": 8}
register(Kernel(key="tile1d_conflict", title="1-D tile, A row-major (column reads conflict)",
                defaults=dict(_T1_BASE), fixed={"LAYOUT": 0, "PAD": 0},
                sweep=({"BK": 16}, {"BK": 32}, {"BK": 32, "TN": 16}), **_T1))
register(Kernel(key="tile1d_padded", title="1-D tile, A rows padded (+PAD)",
                defaults={**_T1_BASE, "PAD": 1}, fixed={"LAYOUT": 0},
                sweep=tuple({"BK": bk, "PAD": pad} for bk in (16, 32) for pad in (0, 1, 2, 4)), **_T1))
register(Kernel(key="tile1d_swizzle", title="1-D tile, A XOR-swizzled",
                defaults=dict(_T1_BASE), fixed={"LAYOUT": 1, "PAD": 0},
                sweep=({"BK": 16}, {"BK": 32}, {"BK": 16, "TN": 16}, {"BK": 32, "TN": 16}), **_T1))
register(Kernel(key="tile1d_transposed", title="1-D tile, A stored transposed (+PAD)",
                defaults={**_T1_BASE, "PAD": 1}, fixed={"LAYOUT": 2},
                sweep=tuple({"BK": bk, "PAD": pad} for bk in (16, 32) for pad in (0, 1, 2, 4)), **_T1))
for _key in ("tile1d_conflict", "tile1d_padded", "tile1d_swizzle", "tile1d_transposed"):
    banks.name_model(_key, "tile1d")         # every layout of sgemm_tile1d, in the bank model


# ------------------------------------------------------------------ notebook calls
def bank_explorer():
    """ipywidgets controls (tile width, access direction, layout) redrawing
    :func:`bank_figure` for one state. It draws the bank model and measures nothing, so it
    needs no GPU: in any running notebook it returns the ``ipywidgets.VBox``. In batch execution
    (:func:`helpers.figures.show.interactive`) it returns None after a one-line note; the
    Plotly controls of the static figure cover the same states."""
    if not show.interactive():
        return control_note("Buttons for the tile width and access direction and a slider for the layout redraw "
                            "this figure (its own menu and slider cover the same states)", needs=NEEDS_NOTEBOOK)
    ctl = {"width": w.ToggleButtons(options=[16, 32], value=32, description="BK"),
           "direction": w.ToggleButtons(options=list(DIRECTIONS), value="column", description="access"),
           "layout": w.SelectionSlider(options=list(LAYOUTS), value="PAD=0", description="layout",
                                       continuous_update=False)}
    out = w.Output()

    def redraw(_=None):
        out.clear_output(wait=True)
        with out:
            show.figure(bank_figure(ctl["width"].value, ctl["direction"].value, ctl["layout"].value))

    for c in ctl.values():
        c.observe(redraw, names="value")
    box = w.VBox([*ctl.values(), out])
    display(box)
    redraw()
    return box


TRANSPOSE_SHAPE = (1024, 1024)


PROBE_REPS = 1   # ncu counted one LDS per probe launch on the H200 whatever reps was (2026-11-29 run)


def ncu_plan(shape) -> list[dict]:
    """The launches, in order: {"name", "key", "params", "shape", "entry"}."""
    out = []

    def gemm(key, **p):
        tag = "_".join(f"{k}{v}" for k, v in p.items())
        out.append({"name": f"{key}/{tag}", "key": key, "params": p, "shape": list(shape),
                    "entry": "sgemm_tile1d"})

    for bk in (16, 32):
        gemm("tile1d_conflict", BK=bk)
        for pad in (1, 2, 4):
            gemm("tile1d_padded", BK=bk, PAD=pad)
        gemm("tile1d_swizzle", BK=bk)
        for pad in (0, 1, 2):
            gemm("tile1d_transposed", BK=bk, PAD=pad)
    gemm("tile1d_swizzle", BK=32, TN=16)
    for key, pad in (("transpose_shared", 0), ("transpose_padded", 1)):
        out.append({"name": f"transpose_shared/PAD{pad}", "key": key, "params": {"TILE": 32, "BLOCK_ROWS": 8},
                    "shape": list(TRANSPOSE_SHAPE), "entry": "transpose_shared"})
    for name in banks.PROBES:
        out.append({"name": f"probe/{name}", "key": "probe", "params": {"pattern": name, "reps": PROBE_REPS},
                    "shape": [], "entry": "bank_probe"})
    return out


def ncu_predict(item) -> dict:
    """The model's counters (:data:`helpers.models.banks.METRICS`) for one launch of :func:`ncu_plan`."""
    if item["key"] == "probe":
        return banks.predict_probe(item["params"]["pattern"], item["params"]["reps"])
    return banks.predict(item["key"], catalog.get(item["key"]).full(item["params"]), tuple(item["shape"]))


SHORT = {banks.LD_CONFLICTS: "ld conflicts", banks.ST_CONFLICTS: "st conflicts",
         banks.LD_WAVEFRONTS: "ld wavefronts", banks.LD_INSTRUCTIONS: "ld instructions"}


ST_INSTRUCTIONS = "smsp__inst_executed_op_shared_st.sum"


ST_NOISE = 0.15     # tolerated store-side excess, as a fraction of the store instructions


def counter_agrees(metric: str, model: int, measured: dict) -> bool:
    """Whether Nsight Compute's ``measured`` counters (each the minimum over the
    variant's launches, see scripts/ncu_banks.py) agree with
    the model's value ``model`` of ``metric``: exactly, except for the store
    conflicts. On the H200, ncu reports a few store wavefronts beyond the
    access pattern's that change from run to run of the same kernel (3-14 %
    of the store instructions in the 2026-11-29 run), so there the pattern's
    part must be present (ncu >= model) and the excess within
    :data:`ST_NOISE` of the store instructions (the rule of
    tests/gpu/test_banks_ncu.py)."""
    got = measured.get(metric)
    if got is None:
        return False
    if metric == banks.ST_CONFLICTS and ST_INSTRUCTIONS in measured:
        return 0 <= got - model <= ST_NOISE * measured[ST_INSTRUCTIONS]
    return got == model


def bank_counter_rows(doc: dict | None = None, which: str = "gemm") -> list[dict]:
    """Model (``banks.predict`` / ``banks.predict_probe``, recomputed here)
    next to Nsight Compute's counters, one row per launch of
    ``scripts/ncu_banks.py``'s plan: ``which`` = "gemm" (the chapter-4
    variants) or "probe" (one-warp probes). ``doc``: ``results.artifact("banks")``
    or None (then every measured cell is None). Each row has, per counter,
    "<short> model" and "<short> ncu", "st excess" (ncu - model store
    conflicts) and "agree": "yes", "NO" or None (:func:`counter_agrees`)."""
    shape = tuple(doc["_meta"]["shape"]) if doc else (512, 512, 512)
    rows = []
    for it in ncu_plan(shape):
        kind = "probe" if it["key"] == "probe" else ("gemm" if it["key"].startswith("tile1d") else "other")
        if kind != which:
            continue
        meta = ((doc or {}).get("_meta", {}).get("variants", {})).get(it["name"])
        if meta:                                   # what was actually launched (e.g. the probe reps)
            it = {**it, "params": meta.get("params", it["params"]), "shape": meta.get("shape", it["shape"])}
        pred = ncu_predict(it)
        meas = (doc or {}).get(it["name"])
        row = {"variant": it["name"]}
        for m, short in SHORT.items():
            row[f"{short} model"] = style.count(pred[m])
            row[f"{short} ncu"] = None if meas is None else style.count(meas.get(m))
        if meas is None:
            row["st excess"], row["agree"] = None, None
        else:
            st = meas.get(banks.ST_CONFLICTS)
            row["st excess"] = None if st is None else style.count(st - pred[banks.ST_CONFLICTS])
            ok = all(counter_agrees(m, pred[m], meas) for m in SHORT)
            row["agree"] = "yes" if ok else "NO"
        rows.append(row)
    return rows


def show_bank_counters() -> None:
    """The chapter's Nsight Compute cell: model vs the recorded counters of
    ``results.artifact("banks")`` for the GEMM variants and the probes, or the
    model alone with a note when nothing is recorded. AssertionError when a
    recorded counter disagrees with the model."""
    doc, where = artifact_note("banks", "Nsight Compute counters",
                               "python scripts/ncu_banks.py --out results/h200-banks.json")
    where = ("model only (helpers.models.banks.predict); Nsight Compute counters not recorded yet" if doc is None
             else f"model (helpers.models.banks.predict) vs Nsight Compute, {where}")
    cols = (["variant"] + [f"{s} {w}" for s in SHORT.values() for w in ("model", "ncu")]
            + ["st excess", ("agree", "within tolerance")])
    gemm_rows = bank_counter_rows(doc, "gemm")
    probe_rows = bank_counter_rows(doc, "probe")
    shape_txt = " x ".join(str(s) for s in (doc["_meta"]["shape"] if doc else (512, 512, 512)))
    show.table(gemm_rows, cols, f"Chapter-4 GEMM variants at M, N, K = {shape_txt}, kernel totals; {where}. "
               "Model and counter side by side; 'within tolerance': the three load counters equal the model's, "
               "and the store conflicts are at least the model's, with an excess (st excess) of at most "
               f"{ST_NOISE:.0%} of the store instructions.")
    show.table(probe_rows, cols, f"One-warp probes (kernels/04_bank_conflicts.cu: bank_probe); {where}.")
    if doc is not None:
        bad = [r["variant"] for r in gemm_rows + probe_rows if r["agree"] != "yes"]
        assert not bad, f"model and Nsight Compute disagree for {bad}"
        print(f"model and Nsight Compute agree for all {len(gemm_rows) + len(probe_rows)} variants: the three "
              "load counters equal, the store conflicts within the tolerance of the first table's caption "
              "(each counter the lower of two profiled launches)")


def show_store_tables(widths=(32, 16)) -> None:
    """For each tile width BK of ``widths``: warp 0's tile store and its A reads per 4 k in
    every layout (:func:`helpers.figures.banks.store_rows`), one table each, captioned as a model."""
    for bk in widths:
        show.table(banks_fig.store_rows(bk),
                   ["layout", "store: ways", "read: bits per lane", "read: instructions per 4 k",
                    "read: wavefronts per 4 k"],
                   f"A tile of BK = {bk} floats per row: warp 0's tile store and its A reads per 4 k "
                   "(helpers.models.banks model of kernels/04_bank_conflicts.cu; not a measurement).")


LAYOUT_KEYS = ("tile1d_conflict", "tile1d_padded", "tile1d_swizzle", "tile1d_transposed")


def show_timings(shape=(4096, 4096, 4096)) -> list:
    """Measure (or read) heaven 3's smem_tiled and the four layouts of :data:`LAYOUT_KEYS`
    against one cuBLAS run: a table, bars, and one line naming the fastest layout. Returns the
    records (smem_tiled first). A wrong result raises in :func:`helpers.runtime.bench.gemm`."""
    recs = bench.gemm(["smem_tiled", *LAYOUT_KEYS], shape)
    common.show_records(recs, f"Heavens 3 and 4, fp32, {common.mnk(shape)}.",
                        bar_title="Heaven 4: the layouts of the A tile against heaven 3")
    done = [r for r in recs[1:] if r["value"]]
    if done and recs[0]["value"] and recs[1]["value"]:
        best = max(done, key=lambda r: r["ratio"])
        print(f"tile1d_conflict is {bench.speedup(recs[1], recs[0]):.2f}x smem_tiled; fastest layout here: "
              f"{best['kernel']} ({style.params_text(best['params'])}), {best['ratio']:.1%} of cuBLAS, "
              f"{bench.speedup(best, recs[1]):.2f}x the conflicting layout")
    return recs
