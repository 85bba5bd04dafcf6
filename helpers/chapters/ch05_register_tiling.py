"""Chapter 5, register tiling, warp tiling, double buffering, cp.async (kernels/05_register_tiling.cu).

Every rule mirrors a validity test of the kernel file: an invalid configuration
fails there at compile time (static_assert), and the catalog refuses it first.
The notebook's calls: :func:`show_timings` (the six steps), :func:`show_controls` (steps at
equal tiles, GROUP_M), :func:`show_flags` (the two -D switches), :func:`show_step_resources`,
:func:`show_sweep_resources` and :func:`show_launch_bounds_pitfall` (registers and spills).
"""
from __future__ import annotations

from helpers.figures import show
from helpers.models import tiles
from helpers.models.raster import cdiv
from helpers.runtime import bench, catalog, launch, panels, results
from helpers.runtime.catalog import Kernel, frozen_sweep, register
from helpers.runtime.checks import multiple_of

from . import common
from .common import SMEM_OPTIN_SM90, divides_threads, even_split, staged, static_smem_rule, threads_rules


# Every rule below mirrors a validity test in kernels/05_register_tiling.cu
# (R1_OK, R2_OK, V4_OK, WT_OK, WT_DB_OK, CA_OK), a static_assert in the build of
# its entry: the catalog refuses what the kernel would not compile, and
# tests/test_rules_vs_kernels.py checks every slider configuration against it.
def _reg1d_threads(p):
    return p["BM"] * p["BN"] // p["TM"]


def _reg1d_rules(p, s):
    BM, BN, BK, TM = p["BM"], p["BN"], p["BK"], p["TM"]
    t = _reg1d_threads(p)
    return staged(lambda: [(BM % TM == 0, "TM", TM, f"must divide BM={BM} (TM rows per thread)"),
                            static_smem_rule(BK * (BM + BN), "4*BK*(BM+BN)")] + threads_rules(t),
                   lambda: [divides_threads("BK", BK, t, "each thread loads one column of the A tile"),
                            divides_threads("BN", BN, t, "each thread loads one column of the B tile"),
                            even_split("BM*BK", BM * BK, t, "A tile loads"),
                            even_split("BK*BN", BK * BN, t, "B tile loads")])


def _reg2d_threads(p):
    return (p["BM"] // p["TM"]) * (p["BN"] // p["TN"])


def _reg2d_base(p):
    BM, BN, TM, TN = p["BM"], p["BN"], p["TM"], p["TN"]
    return [(TM % 4 == 0, "TM", TM, "must be a multiple of 4 (A fragment read as float4)"),
            (TN % 4 == 0, "TN", TN, "must be a multiple of 4 (B fragment read as float4)"),
            (BM % TM == 0, "TM", TM, f"must divide BM={BM}"),
            (BN % TN == 0, "TN", TN, f"must divide BN={BN}"),
            static_smem_rule(p["BK"] * (BM + 4 + BN), "4*BK*(BM+4+BN)")] + threads_rules(_reg2d_threads(p))


def _reg2d_rules(p, s):
    BM, BN, BK = p["BM"], p["BN"], p["BK"]
    t = _reg2d_threads(p)
    return staged(lambda: _reg2d_base(p),
                   lambda: [divides_threads("BK", BK, t, "each thread loads one column of the A tile"),
                            divides_threads("BN", BN, t, "each thread loads one column of the B tile"),
                            even_split("BM*BK", BM * BK, t, "A tile loads"),
                            even_split("BK*BN", BK * BN, t, "B tile loads")])


def _float4_load_rules(p, t):
    BM, BN, BK = p["BM"], p["BN"], p["BK"]
    return [(BK % 4 == 0, "BK", BK, "must be a multiple of 4 (float4 loads along k)"),
            divides_threads("BK/4", BK // 4, t, "each thread loads one float4 column of the A tile"),
            divides_threads("BN/4", BN // 4, t, "each thread loads one float4 column of the B tile"),
            even_split("BM*BK/4", BM * BK // 4, t, "float4 loads of the A tile"),
            even_split("BK*BN/4", BK * BN // 4, t, "float4 loads of the B tile")]


def _float4_shape_rules(s, need_k=True):
    out = [multiple_of("N", s[1], 4, "float4 / 16-byte accesses along the rows of B and C")]
    if need_k:
        out.insert(0, multiple_of("K", s[2], 4, "float4 loads along the rows of A"))
    return out


def _vec4_rules(p, s):
    return staged(lambda: _reg2d_base(p), lambda: _float4_load_rules(p, _reg2d_threads(p)),
                   lambda: _float4_shape_rules(s))


def _wt_threads(p):
    return 32 * (p["BM"] // p["WM"]) * (p["BN"] // p["WN"])


def _warptile_base(p):
    BM, BN, BK, WM, WN, TM, TN = (p[k] for k in ("BM", "BN", "BK", "WM", "WN", "TM", "TN"))
    r = [(BM % WM == 0, "WM", WM, f"must divide BM={BM} (warp tiles tile the block)"),
         (BN % WN == 0, "WN", WN, f"must divide BN={BN} (warp tiles tile the block)"),
         (TM % 4 == 0, "TM", TM, "must be a multiple of 4 (A fragments are float4)"),
         (TN % 4 == 0, "TN", TN, "must be a multiple of 4 (B fragments are float4)"),
         (WM % TM == 0, "WM", WM, f"warp sub-tile not divisible by TM={TM}"),
         (WN % TN == 0, "WN", WN, f"warp sub-tile not divisible by TN={TN}")]
    if WM % TM == 0 and WN % TN == 0:
        LM, LN = WM // TM, WN // TN
        r += [(LM * LN == 32, "WM*WN/(TM*TN)", LM * LN,
               f"must be 32: one warp = (WM/TM) x (WN/TN) = {LM} x {LN} lanes"),
              (LM >= 2, "WM/TM", LM, "must be >= 2 (lane layout: lanes n, n^2 share a B fragment)"),
              (2 <= LN <= 16, "WN/TN", LN, "must be in [2, 16] (lane layout: lanes n, n^1 share an A fragment)")]
    r += [(BK % 4 == 0, "BK", BK, "must be a multiple of 4")]
    return staged(lambda: r, lambda: threads_rules(_wt_threads(p)))


def _warptile_rules(p, s):
    return staged(lambda: _warptile_base(p),
                   lambda: [static_smem_rule(p["BK"] * (p["BM"] + 4 + p["BN"]), "4*BK*(BM+4+BN)")],
                   lambda: _float4_load_rules(p, _wt_threads(p)), lambda: _float4_shape_rules(s))


def _warptile_db_rules(p, s):
    return staged(lambda: _warptile_rules(p, s), lambda: [
        (p["BK"] % 2 == 0, "BK", p["BK"], "must be even (fragment double buffer)"),
        static_smem_rule(2 * p["BK"] * (p["BM"] + 4 + p["BN"]), "2 buffers x 4*BK*(BM+4+BN)")])


def _cp_async_smem(p):
    return p["STAGES"] * p["BK"] * (p["BM"] + 4 + p["BN"]) * 4


def _cp_async_rules(p, s):
    BM, BN, BK = p["BM"], p["BN"], p["BK"]
    t = _wt_threads(p)
    smem = _cp_async_smem(p)
    return staged(lambda: _warptile_base(p), lambda: [
        (p["STAGES"] >= 2, "STAGES", p["STAGES"], "must be >= 2 (one stage computes while one fills)"),
        (BK % 2 == 0, "BK", BK, "must be even (fragment double buffer)"),
        divides_threads("BK", BK, t, "each thread copies one k column of the A tile"),
        even_split("BM*BK", BM * BK, t, "4-byte copies of the A tile"),
        divides_threads("BN/4", BN // 4, t, "each thread copies one float4 column of the B tile"),
        even_split("BK*BN/4", BK * BN // 4, t, "16-byte copies of the B tile"),
        (smem <= SMEM_OPTIN_SM90, "shared memory (bytes)", smem,
         f"STAGES*BK*(BM+4+BN)*4 must be <= {SMEM_OPTIN_SM90} (227 KB, the sm_90 per-block limit)"),
    ], lambda: _float4_shape_rules(s, need_k=False))


_R = dict(chapter=5, file="05_register_tiling.cu", op="gemm")
# Steps 1-5 are plain FP32 loads, shared memory and FMA: any CUDA GPU (min_cc left at 0.0).
# Step 6's cp.async exists from sm_80 on (PTX ISA, "cp.async": requires sm_80 or higher).
CP_ASYNC_CC = (8, 0)
_WT_CHOICES = {"BM": (64, 128, 256), "BN": (64, 128, 256), "BK": (8, 16, 32), "WM": (16, 32, 64, 128),
               "WN": (16, 32, 64, 128), "TM": (4, 8, 16), "TN": (4, 8, 16), "GROUP_M": (0, 4, 8, 16),
               "MIN_BLOCKS": (1, 2, 3, 4), "STAGES": (2, 3, 4, 5, 6)}
_WT_BASE = {"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 32, "TM": 8, "TN": 8, "GROUP_M": 8, "MIN_BLOCKS": 1}
_WT_GEOM = dict(block=lambda p: (_wt_threads(p), 1, 1),
                grid=lambda p, s: (cdiv(s[1], p["BN"]), cdiv(s[0], p["BM"]), 1))

register(Kernel(key="reg1d", title="1-D register tile (TM outputs per thread)", entry="sgemm_reg1d",
                defaults={"BM": 64, "BN": 64, "BK": 8, "TM": 8},
                choices={"BM": (32, 64, 128), "BN": (32, 64, 128), "BK": (4, 8, 16, 32), "TM": (2, 4, 8, 16)},
                block=lambda p: (_reg1d_threads(p), 1, 1),
                grid=lambda p, s: (cdiv(s[1], p["BN"]), cdiv(s[0], p["BM"]), 1),
                rules=_reg1d_rules, owner=tiles.owner_reg1d,
                sweep=({"TM": 16}, {"TM": 16, "BK": 16}, {"BK": 16}, {"BM": 128, "TM": 16}), **_R))
_R2 = dict(defaults={"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8},
           choices={"BM": (64, 128), "BN": (64, 128), "BK": (8, 16, 32), "TM": (4, 8), "TN": (4, 8)},
           block=lambda p: (_reg2d_threads(p), 1, 1),
           grid=lambda p, s: (cdiv(s[1], p["BN"]), cdiv(s[0], p["BM"]), 1),
           owner=tiles.owner_reg2d, **_R)
register(Kernel(key="reg2d", title="2-D register tile (TM x TN per thread)", entry="sgemm_reg2d",
                rules=_reg2d_rules, sweep=({"BK": 16}, {"BM": 64, "BN": 64, "TM": 4, "TN": 4},
                                           {"BM": 64, "BN": 128, "TM": 4}), **_R2))
register(Kernel(key="reg2d_vec4", title="2-D register tile + float4 global loads", entry="sgemm_vec4",
                rules=_vec4_rules, align=16,
                sweep=({"BK": 16}, {"BM": 64, "BN": 64, "TM": 4, "TN": 4, "BK": 16}), **_R2))
register(Kernel(key="warptile", title="warp tiling (packed float4 fragments)", entry="sgemm_warptile",
                defaults=dict(_WT_BASE), choices=_WT_CHOICES, rules=_warptile_rules, align=16,
                owner=tiles.owner_warptile,
                sweep=({"WM": 32, "WN": 64}, {"BK": 16}, {"GROUP_M": 0}), **_WT_GEOM, **_R))
register(Kernel(key="warptile_db", title="warp tiling + double buffering", entry="sgemm_warptile_db",
                defaults=dict(_WT_BASE), choices=_WT_CHOICES, rules=_warptile_db_rules, align=16,
                owner=tiles.owner_warptile,
                sweep=({"BK": 16}, {"WM": 32, "WN": 64}, {"GROUP_M": 0},
                       {"BN": 256, "WN": 64, "TN": 16}), **_WT_GEOM, **_R))
# The chapter's final kernel. The sweep lists the candidates the GPU run times
# (scripts/record_results.py); the defaults are the winner on the H200.
_CA_SWEEP = (
    {"STAGES": 2}, {"STAGES": 4}, {"STAGES": 5},
    {"BK": 16, "STAGES": 2}, {"BK": 16}, {"BK": 16, "STAGES": 4},
    {"MIN_BLOCKS": 2}, {"MIN_BLOCKS": 2, "STAGES": 4},
    {"WM": 32, "WN": 64}, {"WM": 32, "WN": 64, "BK": 16},
    {"GROUP_M": 0}, {"GROUP_M": 16},
    {"BN": 256, "WN": 64, "TN": 16}, {"BN": 256, "WN": 64, "TN": 16, "BK": 16},
    {"BM": 256, "WM": 128, "TM": 16}, {"BM": 64, "WM": 32, "WN": 32, "TM": 4},
)
# Defaults: the winner of the sweep recorded on the H200 (2026-11-29): 128 x 256 blocks,
# 64 x 64 warp tiles, 8 x 16 per thread, BK 16, 3 stages.
register(Kernel(key="cp_async", title="warp tiling + cp.async multistage pipeline", entry="sgemm_cp_async",
                min_cc=CP_ASYNC_CC, defaults={**_WT_BASE, "BN": 256, "WN": 64, "TN": 16, "BK": 16, "STAGES": 3},
                choices=_WT_CHOICES, rules=_cp_async_rules, align=16,
                smem=_cp_async_smem, owner=tiles.owner_warptile,
                sweep=frozen_sweep({**_WT_BASE, "STAGES": 3}, _CA_SWEEP),
                **_WT_GEOM, **_R))
# Pitfall ("register spills"): asking __launch_bounds__ for more
# resident blocks than the registers allow. MIN_BLOCKS=2 on the 128 x 256 tile
# caps ptxas at 65536 / (2 * 256) = 128 registers for 128 accumulators + 48
# fragment registers: it spills to local memory. Correct, just slow; the GPU
# suite skips it and the compile test expects its spills (title says both).
register(Kernel(key="cp_async_pitfall", title="pitfall: __launch_bounds__ min blocks forces spills",
                entry="sgemm_cp_async", min_cc=CP_ASYNC_CC,
                pitfall="__launch_bounds__(256, 2) on the 128 x 256 tile caps ptxas at 128 registers for 176 "
                        "live values: it spills to local memory (correct, slower)",
                defaults={**_WT_BASE, "BN": 256, "WN": 64, "TN": 16, "STAGES": 3, "MIN_BLOCKS": 2},
                choices=_WT_CHOICES, rules=_cp_async_rules, align=16, smem=_cp_async_smem,
                owner=tiles.owner_warptile, **_WT_GEOM, **_R))
# (The same tile without the cap is the cp_async sweep point
#  {"BN": 256, "WN": 64, "TN": 16}: 225 registers, no spills.)


# ------------------------------------------------------------------ controls (notebook calls)
# Two claims of the chapter's text, each checked by a control: (1) a step measured
# against the step before it at the *same* parameters, so that what changes is the
# kernel's code and not its tile; (2) GROUP_M (grouped block order) against plain
# row order at the same tile. Every pair is a configuration the book ships
# (catalog ``configs()``), so the H200 records hold all of them.
STEP_PAIRS = (("reg2d", "reg2d_vec4"), ("warptile", "warptile_db"), ("warptile_db", "cp_async"))


def _tile(p: dict) -> str:
    s = f"{p['BM']}x{p['BN']}x{p['BK']}"
    if "WM" in p:
        s += f", warp {p['WM']}x{p['WN']}"
    s += f", thread {p['TM']}x{p['TN']}"
    if p.get("GROUP_M", 8) != 8:
        s += f", GROUP_M={p['GROUP_M']}"
    return s


def twins(before: str, after: str) -> list:
    """[(params of ``before``, params of ``after``)]: every shipped configuration of
    ``before`` that ``after`` also ships with the same values of the parameters they
    share (``after``'s extra ones, such as STAGES, at its default)."""
    b, a = catalog.get(before), catalog.get(after)
    extra = {k: v for k, v in a.defaults.items() if k not in b.defaults}
    out = []
    for p in b.configs():
        q = {**{k: v for k, v in p.items() if k in a.defaults}, **extra}
        if q in a.configs():
            out.append((p, q))
    return out


def group_m_sets() -> list:
    """[(key, {GROUP_M: params})]: shipped configurations of the warp-tiled kernels that
    differ only in GROUP_M from one with GROUP_M = 8 (the default raster)."""
    out = []
    for key in ("warptile", "warptile_db", "cp_async"):
        cfgs = catalog.get(key).configs()
        for p in cfgs:
            if p["GROUP_M"] == 8 and any(q["GROUP_M"] != 8 and {**q, "GROUP_M": 8} == p for q in cfgs):
                out.append((key, {q["GROUP_M"]: q for q in cfgs if {**q, "GROUP_M": 8} == p}))
    return out


def _fmt(r: dict | None) -> str:
    if not r or r.get("value") is None:
        return "not recorded"
    return f"{r['value']:.2f} ({r['ratio']:.3f})"


def _span(xs: list) -> str:
    xs = sorted(x for x in xs if x is not None)
    return "none measured" if not xs else f"{xs[0]:.3f}x" if len(xs) == 1 else f"{xs[0]:.3f}x to {xs[-1]:.3f}x"


def show_controls(shape=(4096, 4096, 4096)) -> dict:
    """Measure (live: one :func:`helpers.runtime.bench.gemm` call, each kernel alternated
    with cuBLAS in the same run) or read (no GPU: the H200 records, labelled) the two
    controls of the chapter, fp32 on ``shape`` (M, N, K); display them as two tables
    (TFLOP/s, ratio to cuBLAS) and print the ratios the text refers to.
    Returns {"steps": rows, "group_m": rows, "records": records}."""
    steps = [(b, a, p, q) for b, a in STEP_PAIRS for p, q in twins(b, a)]
    groups = group_m_sets()
    items = []
    for b, a, p, q in steps:
        items += [(b, p), (a, q)]
    for key, by in groups:
        items += [(key, p) for p in by.values()]
    default = dict(catalog.get("cp_async").defaults)
    items += [("warptile_db", p) for p in catalog.get("warptile_db").configs()] + [("cp_async", default)]
    uniq = []
    for it in items:
        if it not in uniq:
            uniq.append(it)
    recs = bench.gemm(uniq, shape)
    rec = {(k, tuple(sorted(p.items()))): r for (k, p), r in zip(uniq, recs)}
    get = lambda k, p: rec[(k, tuple(sorted(p.items())))]     # noqa: E731
    wh = bench.where(recs)
    wh = wh[0].upper() + wh[1:]

    step_rows = [{"step": f"{b} -> {a}", "parameters": _tile(p), "before": _fmt(get(b, p)),
                  "after": _fmt(get(a, q)), "after / before": bench.speedup(get(a, q), get(b, p))} for b, a, p, q in steps]
    show.table(step_rows, ["step", "parameters", ("before", "before: TFLOP/s (x cuBLAS)"),
                           ("after", "after: TFLOP/s (x cuBLAS)"), ("after / before", "after / before (of the x cuBLAS)")],
               f"Each step against the step before it at the same parameters (cp_async at its default "
               f"STAGES), fp32, {' x '.join(map(str, shape))}; each kernel timed against cuBLAS in the same run. {wh}.")
    for b, a in STEP_PAIRS:
        print(f"{a} / {b} at equal parameters: "
              + _span([r["after / before"] for r in step_rows if r["step"] == f"{b} -> {a}"]))
    try:
        catalog.get("warptile_db").validate({k: v for k, v in default.items() if k != "STAGES"}, shape)
    except ValueError as e:
        print(f"cp_async's default tile ({_tile(default)}) as warptile_db: refused, {e}")
    db = [r for (k, _), r in zip(uniq, recs) if k == "warptile_db" and r.get("value")]
    ca = get("cp_async", default)
    if db and ca.get("value"):
        best = max(db, key=lambda r: r["ratio"])
        print(f"each at its best shipped configuration: cp_async ({_tile(default)}, STAGES={default['STAGES']}) "
              f"{_fmt(ca)} against warptile_db ({_tile(best['params'])}) {_fmt(best)}: {bench.speedup(ca, best):.3f}x")

    group_rows = []
    for key, by in groups:
        base = get(key, by[8])
        row = {"kernel": key, "parameters": _tile(by[8])}
        for g, p in sorted(by.items()):
            row[f"G{g}"] = _fmt(get(key, p))
            if g != 8:
                row[f"r{g}"] = bench.speedup(get(key, p), base)
        group_rows.append(row)
    gs = sorted({g for _, by in groups for g in by})
    show.table(group_rows, ["kernel", "parameters"] + [(f"G{g}", f"GROUP_M={g}") for g in gs]
               + [(f"r{g}", f"GROUP_M={g} / GROUP_M=8") for g in gs if g != 8],
               f"Grouped block order: GROUP_M tile rows per group (0 = plain row order), TFLOP/s (x cuBLAS); "
               f"the quotients are of the x cuBLAS values, "
               f"fp32, {' x '.join(map(str, shape))}, the same run as the table above. {wh}.")
    print("GROUP_M = 0 against GROUP_M = 8: " + ", ".join(
        f"{r['kernel']} {r['r0']:.3f}x" for r in group_rows if r.get("r0") is not None))
    runs, _, where = panels.recorded()
    for r in runs:
        if r["key"] == "cp_async" and r.get("params") == default and list(r["shape"]) == list(shape):
            pn = r["panel"]
            ab = 4 * (shape[0] * shape[2] + shape[2] * shape[1])
            print(f"cp_async at its default tile ({_tile(default)}; not the tile of the table above), "
                  f"Nsight Compute, {where}: DRAM busy {pn['dram_pct']:.1f} % of its peak, "
                  f"L2 hit rate {pn['l2_hit']:.1f} %, DRAM reads {pn['dram_read'] / ab:.1f}x the bytes of A and B")
    return {"steps": step_rows, "group_m": group_rows, "records": recs}


# ------------------------------------------------------------------ build flags (recorded)
FLAGS_ARTIFACT = "fp32-flags"     # results/<gpu>-fp32-flags.json, written by scripts/ch5_flags.py


def flag_rows(slug: str = results.DEFAULT_SLUG) -> dict | None:
    """The recorded side-by-side timing of ``cp_async`` built with each combination of its two
    ``-D`` flags, SERPENTINE (FMA order) and FAST_INTERIOR (one bounds test per k tile), at two
    tiles (``results/<slug>-fp32-flags.json``, written on a GPU by ``scripts/ch5_flags.py``).
    Returns None when it is not recorded, else {"rows": one row per build and tile ("tile",
    "FMA order", "copies", "registers", "TFLOP/s", "ratio": median ratio to cuBLAS, "range":
    lowest and highest of the timings, "timings", "flags"), "effects": {tile: {"serpentine
    (checked copies)", "serpentine (interior copies)", "interior (plain order)", "interior
    (serpentine order)"}: ratio of the medians}, "where", "command"}."""
    doc = results.artifact(FLAGS_ARTIFACT, slug)
    if doc is None:
        return None
    rows, effects = [], {}
    for st in doc["sets"]:
        p = st["params"]
        tile = f"{p['BM']}x{p['BN']}x{p['BK']}"
        by = {(r["flags"]["SERPENTINE"], r["flags"]["FAST_INTERIOR"]): r["ratio"] for r in st["rows"]}
        effects[tile] = {"serpentine (checked copies)": by[1, 0] / by[0, 0],
                         "serpentine (interior copies)": by[1, 1] / by[0, 1],
                         "interior (plain order)": by[0, 1] / by[0, 0],
                         "interior (serpentine order)": by[1, 1] / by[1, 0]}
        for r in st["rows"]:
            f, ratios = r["flags"], [t["ratio"] for t in r["timings"]]
            rows.append({"tile": tile, "FMA order": "serpentine" if f["SERPENTINE"] else "plain",
                         "copies": "interior tiles unchecked" if f["FAST_INTERIOR"] else "every copy checked",
                         "registers": r["registers"], "TFLOP/s": r["tflops"], "ratio": r["ratio"],
                         "range": f"{min(ratios):.3f}-{max(ratios):.3f}", "timings": len(ratios), "flags": f})
    return {"rows": rows, "effects": effects, "where": results.artifact_where(doc, FLAGS_ARTIFACT, slug),
            "command": doc["command"]}


def show_flags(slug: str = results.DEFAULT_SLUG) -> dict | None:
    """Display :func:`flag_rows` as one table and print each flag's effect with the other flag
    held (a ratio of medians, per tile); one line when nothing is recorded. Returns the rows."""
    out = flag_rows(slug)
    if out is None:
        print(f"The build-flag comparison is not recorded for this GPU (scripts/ch5_flags.py writes "
              f"results/<gpu>-{FLAGS_ARTIFACT}.json).")
        return None
    n = out["rows"][0]["timings"]
    show.table(out["rows"], ["tile", "FMA order", "copies", "registers", "TFLOP/s",
                             ("ratio", "ratio to cuBLAS (median)"), ("range", "lowest-highest")],
               f"cp_async built four ways per tile (SERPENTINE x FAST_INTERIOR), fp32 4096^3; each build "
               f"timed {n} times against cuBLAS in alternating rounds, the builds' order rotated; registers "
               f"as NVRTC allocated them. Recorded, not measured now: {out['where']}.")
    for tile, e in out["effects"].items():
        print(f"{tile}: " + ", ".join(f"{k} x{v:.3f}" for k, v in e.items()))
    return out


# ------------------------------------------------------------------ timings and resources (notebook calls)
STEPS = ("reg1d", "reg2d", "reg2d_vec4", "warptile", "warptile_db", "cp_async")
RESOURCE_COLUMNS = ["config", "threads", "registers", "shared memory (KiB)", "spill bytes", "spills",
                    "blocks/SM", "occupancy"]


def show_timings(shape=(4096, 4096, 4096)) -> list:
    """Measure (or read) the six :data:`STEPS`, after heaven 3's and heaven 4's kernels, against
    one cuBLAS run: a table, bars, and one line per step (its ratio to cuBLAS and to the row
    above). Returns the records. A wrong result raises in :func:`helpers.runtime.bench.gemm`."""
    recs = bench.gemm(["smem_tiled", "tile1d_swizzle", *STEPS], shape)
    common.show_records(recs, f"Heavens 3-5, fp32, {common.mnk(shape)}.", bar_title="Heaven 5, step by step")
    for prev, r in zip(recs[1:], recs[2:]):
        if r["ratio"] and prev["ratio"]:
            print(f"{r['kernel']:12s} {r['ratio']:6.1%} of cuBLAS, {bench.speedup(r, prev):.2f}x the row above")
    return recs


def show_step_resources() -> None:
    """Registers, shared memory, spills and occupancy of the six :data:`STEPS` at their defaults
    (:func:`helpers.chapters.common.show_resources`)."""
    common.show_resources([(k, {}) for k in STEPS], RESOURCE_COLUMNS,
                                 "The six steps at their default parameters; {where}.")


def show_sweep_resources() -> None:
    """The same for cp_async over its sweep, each configuration once, labelled as the sweep chart
    labels its bars: by what it changes from the kernel's shipped defaults ("default" for
    those themselves); the column "refused" only where a configuration is.
    Raises AssertionError if a configuration the book ships spills."""
    spec, points = catalog.get("cp_async"), []
    for pt in (spec.defaults,) + tuple(spec.sweep):
        if spec.params(**pt) not in points:
            points.append(spec.params(**pt))
    base = spec.params()
    rows, where = launch.resource_rows([("cp_async", p) for p in points])
    if not rows:
        print("resources: " + where)
        return
    for r, p in zip(rows, points):
        diff = " ".join(f"{k}={v}" for k, v in p.items() if v != base.get(k)) or "default"
        note = r["config"][r["config"].find(" ["):] if " [" in r["config"] else ""    # "[not on this GPU: ...]"
        r["config"] = diff + note
    cols = RESOURCE_COLUMNS[:1] + (["refused"] if any("refused" in r for r in rows) else []) + RESOURCE_COLUMNS[1:]
    show.table(rows, cols, "cp_async over its sweep, each configuration by what it changes from the defaults "
               + " ".join(f"{k}={v}" for k, v in base.items()) + f", as in the sweep chart above; {where}.")
    spilled = [r["config"] for r in rows if "refused" not in r and r.get("spills") != "no"]
    if spilled:
        raise AssertionError(f"a shipped cp_async configuration spills: {spilled}")


def show_launch_bounds_pitfall(shape=(4096, 4096, 4096)) -> None:
    """cp_async_pitfall (``__launch_bounds__(256, 2)``) beside the same tile with MIN_BLOCKS = 1:
    their registers and spills (AssertionError unless the pitfall spills and its twin does
    not), then both measured against cuBLAS (both verified: spills cost time, not
    correctness), and one line with the throughput ratio."""
    pair = [("cp_async", {**catalog.get("cp_async_pitfall").params(), "MIN_BLOCKS": 1}), ("cp_async_pitfall", {})]
    rows, where = launch.resource_rows(pair)
    refused = [r["refused"] for r in rows if "refused" in r]   # e.g. a GPU without cp.async
    if rows and not refused:
        show.table(rows, [c for c in RESOURCE_COLUMNS if c != "shared memory (KiB)"],
                   f"The same tile without and with __launch_bounds__(256, 2); {where}.")
        ok, trap = rows
        if not (trap["spills"] == "SPILLS" and ok["spills"] == "no"):
            raise AssertionError("the pitfall should spill and its twin should not: "
                                 f"{trap['config']} spills={trap['spills']}, {ok['config']} spills={ok['spills']}")
    else:
        print("resources: " + ("; ".join(refused) if refused else where))
    recs = bench.gemm(pair, shape)
    common.show_records(recs, f"The launch-bounds pitfall, fp32, {common.mnk(shape)} (both results are verified: "
                        "spills cost time, not correctness).")
    a, b = recs
    if a["value"] and b["value"]:
        print(f"asking for 2 blocks per SM: {bench.speedup(b, a):.2f}x the uncapped kernel's ratio to cuBLAS")
