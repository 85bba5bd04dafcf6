"""Chapter 11 (book/12_fp8.ipynb), FP8 on Hopper: e4m3 x e4m3 -> fp32 -> bf16 with
per-tensor scales (rung 1) and block scales with promotion (rung 2), kernels/12_fp8.cu
(sm_90a only).

The catalog entries, the launch-argument builder (TMA maps of bytes, the scales), the
runs the recorder makes (``record()``: speed against cuBLASLt FP8, accuracy against K,
the accumulator probe) and the thin functions the notebook calls, which read
results/<gpu>-fp8.json without a GPU.
"""
from __future__ import annotations

import numpy as np

from helpers.figures import fp8 as fp8_fig, show, style
from helpers.models import fp8 as qm
from helpers.models.raster import cdiv
from helpers.runtime import catalog, gpu, launch, results, tma, verify
from helpers.runtime import fp8 as rt
from helpers.runtime.catalog import Kernel, register
from helpers.runtime.checks import multiple_of, require

from .common import Sentence
from .verdicts import STEP_NOISE, change_kind

FILE = "12_fp8.cu"
BM, BK = 128, 128                 # rows per CTA (two consumer warpgroups), bytes of K per k-tile
SM90A = ("-arch=sm_90a",)
H200_SMS = 132
ARTIFACT = "fp8"                  # results/<gpu>-fp8.json
SMEM_LIMIT = 232448               # the 227 KB opt-in limit of sm_90


def smem(p) -> int:
    """Dynamic shared memory, bytes: 1 KB alignment slack, STAGES x (A tile 16 KB + Bt tile
    BN x 128 B), two 16 KB bf16 staging buffers, two mbarriers per stage, and with SCALE_LOAD = 1
    a scale area of (128 + 4) floats per stage."""
    return (1024 + p["STAGES"] * (BM * BK + p["BN"] * BK) + 2 * 64 * 128 * 2 + 2 * p["STAGES"] * 8
            + (p["STAGES"] * (BM + 4) * 4 if p.get("SCALE_LOAD", 0) == 1 else 0))


def _grid(p, s):
    M, N, _ = s
    cl = p["CLUSTER_M"]
    tiles = cdiv(cdiv(M, BM), cl) * cdiv(N, p["BN"])
    sms = gpu.device_info()["sms"] if gpu.live() else H200_SMS
    return (max(cl, min(sms - sms % cl, tiles * cl)), 1, 1)      # persistent: one CTA per SM, whole clusters


def _rules(p, s):
    M, N, K = s
    return [
        multiple_of("K", K, 16, "TMA: the row pitch of A and Bt (K bytes of e4m3) must be a multiple of 16 bytes"),
        multiple_of("N", N, 8, "TMA: the row pitch of C (N x 2 bytes of bf16) must be a multiple of 16 bytes"),
        (max(M, N, K) < 2 ** 31, "M, N, K", (M, N, K), "must each be < 2^31 (32-bit tile coordinates)"),
        (p["BN"] in (128, 192, 256), "BN", p["BN"], "must be 128, 192 or 256 (the wgmma N)"),
        (p["CLUSTER_M"] in (1, 2), "CLUSTER_M", p["CLUSTER_M"], "must be 1 or 2 (clusters along M)"),
        (p["PROMOTE"] in (0, 1, 2, 4), "PROMOTE", p["PROMOTE"], "must be 0, 1, 2 or 4 (k-tiles per promotion)"),
        (p["PROMOTE"] == 0 or p["BN"] <= 192, "PROMOTE", p["PROMOTE"],
         "needs BN <= 192: two accumulator arrays of BN / 2 registers must fit a thread's 232"),
        (p["BLOCK_SCALE"] == 0 or p["PROMOTE"] == 1, "BLOCK_SCALE", p["BLOCK_SCALE"],
         "needs PROMOTE = 1: each k-block's partial sum is multiplied by its own scales"),
        (p["PINGPONG"] in (0, 1), "PINGPONG", p["PINGPONG"], "must be 0 or 1 (consumers take turns issuing)"),
        (p.get("SCALE_LOAD", 0) in (0, 1) and (p.get("SCALE_LOAD", 0) == 0 or p["BLOCK_SCALE"]),
         "SCALE_LOAD", p.get("SCALE_LOAD", 0), "must be 0 or 1; 1 needs BLOCK_SCALE = 1"),
        (2 <= p["STAGES"] and smem(p) <= SMEM_LIMIT, "STAGES", p["STAGES"],
         f"must be >= 2 with the ring within 227 KB of shared memory (BN = {p['BN']}: "
         f"at most {max(s for s in range(2, 9) if smem({**p, 'STAGES': s}) <= SMEM_LIMIT)})"),
    ]


def _args(p, A, Bt, C, M, N, K, SA, SB, *extra):
    """The kernel arguments from the arrays: TMA maps of A (box 128 B x 128 rows) and Bt
    (box 128 B x BN/2 rows), of C (box 64 x 64 bf16; a small stand-in when C is fp32,
    OUT_F32=1, which stores C directly), M, N, K, the scale arrays and C's pointer."""
    tmC = tma.tensor_map("C", C, 64, 64) if not p["OUT_F32"] else _dummy_map()
    return (rt.tensor_map_u8("A", A, BM), rt.tensor_map_u8("Bt", Bt, p["BN"] // 2), tmC,
            np.int32(M), np.int32(N), np.int32(K), SA, SB, C) + tuple(extra)


_DUMMY = {}


def _dummy_map():
    if "map" not in _DUMMY:
        cp = gpu.cupy()
        _DUMMY["x"] = cp.zeros((64, 64), verify.np_dtype("bfloat16"))
        _DUMMY["map"] = tma.tensor_map("C", _DUMMY["x"], 64, 64)
    return _DUMMY["map"]


# Rung 1 ships without the cluster: at 4096^3 the clustered build ran at 0.84 of cuBLASLt FP8 and this
# one at 0.89 in the same run (0.98 and 0.99 at 8192^3; results/h200-fp8.json, notes/fp8.md).
_BASE = {"BN": 256, "STAGES": 4, "GROUP_M": 8, "CLUSTER_M": 1, "PROMOTE": 0, "BLOCK_SCALE": 0, "PINGPONG": 0,
         "OUT_F32": 0}
RUNGS = {
    "fp8_r1_tensor": ("1: per-tensor e4m3, 128x256, fp32 in the Tensor Core", dict(_BASE)),
    "fp8_r2_block": ("2: 1x128 / 128x128 block scales, promoted every k-block, 128x192, scales through the ring",
                     {**_BASE, "BN": 192, "STAGES": 4, "CLUSTER_M": 2, "PROMOTE": 1, "BLOCK_SCALE": 1, "PINGPONG": 0,
                      "SCALE_LOAD": 1}),
    "fp8_promote": ("per-tensor e4m3, 128x192, promoted every PROMOTE k-tiles",
                    {**_BASE, "BN": 192, "STAGES": 4, "CLUSTER_M": 2, "PROMOTE": 1}),
}
_CHOICES = {"STAGES": (2, 3, 4, 5, 6), "GROUP_M": (1, 4, 8, 16), "CLUSTER_M": (1, 2), "PROMOTE": (0, 1, 2, 4),
            "PINGPONG": (0, 1), "OUT_F32": (0, 1), "BN": (128, 192, 256),
            "SCALE_LOAD": (0, 1)}

for _key, (_title, _defaults) in RUNGS.items():
    register(Kernel(
        key=_key, chapter=12, title=_title, file=FILE, entry="fp8_gemm", op="gemm", dtype=rt.DTYPE,
        out_dtype="bfloat16", layout="NT", align=16, defaults=dict(_defaults),
        choices={n: v for n, v in _CHOICES.items() if n in _defaults and not (n == "BN" and _key != "fp8_promote")},
        block=lambda p: (384, 1, 1), grid=_grid, smem=smem, rules=_rules, compile_options=SM90A,
        min_cc=(9, 0), arch_specific=True, args=_args,
        sweep=(({"PROMOTE": 0}, {"PROMOTE": 2}, {"PROMOTE": 4}, {"OUT_F32": 1}) if _key == "fp8_promote" else
               ({"OUT_F32": 1},) if _key == "fp8_r2_block" else ({"CLUSTER_M": 2},))))

PROMOTIONS = (0, 1, 2, 4)


# ------------------------------------------------------------------ runs (GPU)
def prepare(key: str, shape, **params):
    """Validate and compile ``key`` for ``shape`` (ValueError before anything compiles)."""
    return launch.prepare(key, tuple(shape), **params)


def run_once(key: str, A8, Bt8, SA, SB, out_f32: bool = False, **params):
    """Run ``key`` once on device arrays: A8 (M, K) and Bt8 (N, K) uint8 e4m3 bytes, SA and
    SB the scales (float32 device arrays). Returns C (M, N), bf16 (float32 with
    ``out_f32``), first poisoned with NaN. Every rule is checked before the launch:
    ValueError naming the array or parameter."""
    require(getattr(A8, "ndim", 0) == 2 and getattr(Bt8, "ndim", 0) == 2, "A8.ndim, Bt8.ndim",
            (getattr(A8, "ndim", None), getattr(Bt8, "ndim", None)), "must both be 2")
    M, K = (int(v) for v in A8.shape)
    N, Kb = (int(v) for v in Bt8.shape)
    require(Kb == K, "Bt8.shape", tuple(Bt8.shape), f"must be (N, K) with K = {K} from A8.shape")
    L = prepare(key, (M, N, K), **{**params, "OUT_F32": int(out_f32)})
    cp = gpu.cupy()
    C = cp.full((M, N), np.nan, cp.float32 if out_f32 else verify.np_dtype("bfloat16"))
    L(A8, Bt8, C, M, N, K, SA, SB)
    return C


def measure(key: str, data, rounds: int = 5, check: bool = True, **params) -> dict:
    """One record of ``key`` on ``data`` (:func:`helpers.runtime.fp8.inputs`), checked and timed
    against the same-run reference (:func:`helpers.runtime.fp8.measure`)."""
    return rt.measure(prepare(key, data.shape, **params), data, rounds=rounds, check=check)


def accuracy_row(K: int, M: int = 256, N: int = 256, dist: str = "positive", seed: int = 0) -> dict:
    """Relative error against float64 of the dequantized inputs at one K (C in fp32, so no
    bf16 rounding hides the accumulator): per-tensor e4m3 with no promotion and with
    promotion every 1, 2, 4 k-tiles (``fp8_promote``), block-scaled (``fp8_r2_block``) on
    block-quantized inputs of the same draw, and cuBLAS bf16 on each set of dequantized
    inputs. Needs an sm_90 GPU."""
    row = {"K": K, "M": M, "N": N, "dist": dist}
    for scaling in ("tensor", "block"):
        d = rt.inputs((M, N, K), scaling, dist=dist, out_f32=True, seed=seed)
        a = d.arrays
        row[f"bf16_{scaling}"] = d.bf16_err
        if scaling == "tensor":
            for P in PROMOTIONS:
                C = run_once("fp8_promote", a["A"], a["Bt"], a["SA"], a["SB"], out_f32=True, PROMOTE=P)
                row[f"promote_{P}"] = verify.rel_err(C, d.expect)
        else:
            C = run_once("fp8_r2_block", a["A"], a["Bt"], a["SA"], a["SB"], out_f32=True)
            row["block"] = verify.rel_err(C, d.expect)
    return row


def probe_inputs(mode: str):
    """The accumulator probe's operands (host, float32 values exact in e4m3). Row 2i (i = 0, 1)
    of A with column j of Bt computes big + small_j - big, big = 2^16 (256 x 256), small_j =
    2^(16 - e_j) with A's factor 2^(-9 i) and Bt's 2^(x_j); the three terms sit at k = 0, d, 2d:
    d = 1 ("within one k32 instruction"), 32 ("across k32 steps of one k-tile"), 128 ("across
    k-tiles"). An exact accumulator returns small_j; one that keeps b bits below the leading
    bit of the running sum loses small_j once e_j > b. Returns (A (64, K), Bt (N, K), e (N,))."""
    step = {"within": 1, "steps": 32, "tiles": 128}
    require(mode in step, "mode", mode, f"must be one of {sorted(step)}")
    d = step[mode]
    K = max(128, 3 * d if d > 1 else 128)
    K = cdiv(K, 128) * 128
    xs = np.arange(-9, 9)                                     # Bt's factor exponents: e4m3 powers of two
    N = 2 * len(xs) + 4                                       # two row groups; pad to a multiple of 8
    N = cdiv(N, 8) * 8
    A = np.zeros((64, K), np.float32)
    Bt = np.zeros((N, K), np.float32)
    e = np.full(N, -1)
    for i, fa in enumerate((0, -9)):
        A[2 * i, 0], A[2 * i, d], A[2 * i, 2 * d] = 256.0, 2.0 ** fa, -256.0
        for jx, x in enumerate(xs):
            j = i * len(xs) + jx
            Bt[j, 0], Bt[j, d], Bt[j, 2 * d] = 256.0, 2.0 ** x, 256.0
            e[j] = 16 - (fa + x)
    return A, Bt, e


def accumulator_probe() -> dict:
    """Run the probe (:func:`probe_inputs`) with ``fp8_promote`` PROMOTE=0, C in fp32, in the
    three modes. Returns {mode: {"e": [...], "kept": [...]}} where kept[j] is C / small_j
    (1: the small term survived, 0: lost), and "bits": the largest e that survived in
    every mode and the smallest that was lost. Needs an sm_90 GPU."""
    cp = gpu.cupy()
    out = {}
    for mode in ("within", "steps", "tiles"):
        A, Bt, e = probe_inputs(mode)
        ok = e >= 0
        C = run_once("fp8_promote", cp.asarray(A.astype(qm.E4M3).view(np.uint8)),
                     cp.asarray(Bt.astype(qm.E4M3).view(np.uint8)), cp.ones(1, cp.float32),
                     cp.ones(1, cp.float32), out_f32=True, PROMOTE=0)
        C = cp.asnumpy(C)
        kept = []
        for j in np.nonzero(ok)[0]:
            row = 0 if j < (ok.sum() // 2) else 2
            kept.append(float(C[row, j] / 2.0 ** (16 - int(e[j]))))
        es = [int(x) for x in e[ok]]
        order = np.argsort(es)
        out[mode] = {"e": [es[i] for i in order], "kept": [kept[i] for i in order]}
    return out


# ------------------------------------------------------------------ notebook calls
def _sm90() -> bool:
    return gpu.live() and gpu.capability() == (9, 0)


def recorded() -> tuple[dict | None, str]:
    """(results/<gpu>-fp8.json as a dict or None, the caption's "recorded on ..." line)."""
    doc = results.artifact(ARTIFACT)
    return doc, results.artifact_where(doc, ARTIFACT, commit=True)


def show_formats() -> None:
    """The four formats as a table (bits, range, spacing) and as a figure (relative gap
    against magnitude): a model, from ml_dtypes."""
    rows = [{**r, "max": f"{r['max']:.5g}", "min normal": f"{r['min normal']:.3g}",
             "min subnormal": f"{r['min subnormal']:.3g}", "epsilon": f"{r['epsilon']:.3g}"} for r in qm.format_table()]
    show.table(rows, list(rows[0]), "The formats (ml_dtypes' float8_e4m3fn, float8_e5m2, float16, bfloat16): "
               "epsilon is the gap above 1, binades the range from the smallest subnormal to the largest value.")
    show.figure(fp8_fig.formats_figure())


def example_tensor(seed: int = 0, rows: int = 256, cols: int = 1024):
    """A synthetic activation: standard normal, with 4 columns 60 times larger (the outlier
    channels that per-tensor scaling must make room for). float32 (rows, cols)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    x[:, rng.choice(cols, 4, replace=False)] *= 60
    return x


def show_scaling(seed: int = 0) -> None:
    """Where the example tensor's values fall in e4m3 as they are, per-tensor scaled and
    1 x 128 block scaled (figure), and the quantization error of each (table)."""
    x = example_tensor(seed)
    show.figure(fp8_fig.scaling_figure(x))
    rows = [{"scaling": sc, **{f"{f} error": f"{qm.quantization_error(x, sc, f):.2e}" for f in ("e4m3", "e5m2")}}
            for sc in ("none", "tensor", "block")]
    show.table(rows, list(rows[0]), "Relative error ||deq(q(x)) - x|| / ||x|| of the example tensor "
               "(helpers.models.fp8.quantization_error; a model, no GPU).")


LABELS = {("fp8_r1_tensor", 1, None): "rung 1: per-tensor", ("fp8_r1_tensor", 2, None): "rung 1 in 2-CTA clusters",
          ("fp8_r2_block", 2, None): "rung 2: block scales",
          **{("fp8_promote", 2, P): f"per-tensor, 128x192, promote {P or 'never'}" for P in PROMOTIONS}}


def _label(r) -> str:
    p = r["params"]
    lab = LABELS.get((r["kernel"], p.get("CLUSTER_M"), p.get("PROMOTE") if r["kernel"] == "fp8_promote" else None),
                     r["kernel"])
    if r["kernel"] == "fp8_r2_block":                     # rung 2 and its controls: turns, scale path, tile
        lab += ", consumers take turns" if p.get("PINGPONG") else ", consumers issue together"
        if p.get("SCALE_LOAD", 0) != 1:
            lab += ", scales loaded by every thread"
        if p.get("BN") != 192:
            lab += f", 128x{p.get('BN')}"
    return lab + (" (vs cuBLAS bf16)" if "bf16" in r.get("reference", "") else "")


def speed_runs(shape=(4096, 4096, 4096), rounds: int = 5) -> list:
    """Rungs 1 and 2 measured live at ``shape`` on an sm_90 GPU (against cuBLASLt FP8 when torch
    imports, else cuBLAS bf16; ``rounds``: as many as the record's, scripts/record_fp8.py), or every
    recorded run; each record gains ``label``."""
    if _sm90():
        t, b = rt.inputs(shape, "tensor"), rt.inputs(shape, "block")
        recs = [measure("fp8_r1_tensor", t, rounds), measure("fp8_r2_block", b, rounds)]
        recs += [measure("fp8_r1_tensor", t.against_bf16(), rounds)] if "bf16" not in t.reference_name else []
    else:
        recs = [{**r, "source": "recorded"} for r in (recorded()[0] or {}).get("runs", [])]
    return [{**r, "label": _label(r)} for r in recs]


def show_speed(recs: list) -> None:
    """The records as a table and as bars of their ratios (each to its own same-run reference)."""
    if not recs:
        show.note(f"FP8 speed: {recorded()[1]}.", title="Not measured")
        return
    live = any(r.get("source") == "live" for r in recs)
    where = results.where(True) if live else recorded()[1]
    rows = [{**r, "shape": "x".join(map(str, r["shape"])), "rel_err": f"{r['rel_err']:.2e}" if r.get("rel_err") else ""}
            for r in recs]
    show.table(rows, {"label": "kernel", "shape": "M x N x K", "value": "TFLOP/s", "reference": "reference",
                      "reference_value": "reference TFLOP/s", "ratio": "ratio", "rel_err": "rel. error"},
               "Each row against its own reference, timed in the same run in alternating rounds; the error is "
               f"against float64 of the dequantized inputs (C in bf16). {where[0].upper() + where[1:]}.")
    show.figure(fp8_fig.speed_figure([r for r in recs if r.get("ratio") is not None], where))


def show_accuracy() -> None:
    """The recorded error against K (both input distributions), or a note when not recorded."""
    doc, where = recorded()
    rows = (doc or {}).get("accuracy", [])
    if not rows:
        show.note(f"The accuracy runs: {where}.", title="Not recorded")
        return
    for dist in ("positive", "normal"):
        show.figure(fp8_fig.accuracy_figure(rows, where, dist))


def show_probe() -> None:
    """The accumulator probe, measured live on an sm_90 GPU or read from the record."""
    doc, where = recorded()
    probe = accumulator_probe() if _sm90() else (doc or {}).get("probe")
    if not probe:
        show.note(f"The accumulator probe: {where}.", title="Not recorded")
        return
    show.figure(fp8_fig.probe_figure(probe, results.where(True) if _sm90() else where))


def show_refusals() -> None:
    """Shapes and parameters the rules refuse, before anything compiles or launches."""
    spec = catalog.get("fp8_r1_tensor")
    for bad_p, bad_s in (({}, (4096, 4096, 4104)), ({}, (4096, 4092, 4096)), ({"PROMOTE": 2}, (4096, 4096, 4096)),
                         ({"STAGES": 5}, (4096, 4096, 4096))):
        try:
            spec.validate(spec.params(**bad_p), bad_s)
            raise AssertionError(f"{bad_p} {bad_s} was accepted")
        except ValueError as e:
            print(f"{style.params_text(bad_p) if bad_p else 'the defaults'} at M x N x K = "
                  f"{' x '.join(map(str, bad_s))}: refused before compiling: {e}")


def show_resources() -> None:
    """Registers, shared memory and spills of the entries at their defaults (driver or nvcc)."""
    rows, where = launch.resource_rows([(k, {}) for k in RUNGS], label="key+diff")
    if rows:
        show.table(rows, ["config", "threads", "registers", "shared memory (KiB)", "spill bytes", "blocks/SM",
                          "occupancy"], f"The FP8 entries at their defaults; {where}.")
    else:
        show.note(f"Registers and shared memory are read from the compiled kernel: this {where}.", title="Resources")


# ------------------------------------------------------------------ numbers the prose quotes (MyST-NB glue)
SIZES = ("4096³", "8192³")          # the two shapes the verdicts name, in this order (no math: glue:md shows $ as typed)


def _per_size(d: list, bound: float) -> tuple[list, str]:
    """Each size's change ``d`` against ``bound``: "gain", "loss" or "within", and the words for
    them ("a loss beyond it at 4096³, within it at 8192³")."""
    kind = [change_kind(x, bound) for x in d]
    words = ", ".join(f"{'within it' if k == 'within' else 'a ' + k + ' beyond it'} at {n}" for k, n in zip(kind, SIZES))
    return kind, words


def cluster_verdict(pairs: list, spread: float, shipped: bool) -> Sentence:
    """What the prose says of rung 1's two-CTA cluster: ``pairs`` of (ratio without, ratio with)
    at 4096^3 and 8192^3, ``spread`` the relative gap between rung 1's own two timings of one
    shape, ``shipped`` whether rung 1's default has the cluster on."""
    kind, words = _per_size([w / o - 1 for o, w in pairs], spread)
    ref = f"the {spread:.1%} by which rung 1's own two timings of one shape differ"
    agrees = "loss" not in kind if shipped else "gain" not in kind     # the data back the default
    ships = ("so " if agrees else "yet ") + ("rung 1 ships with it" if shipped else "rung 1 ships without it")
    if set(kind) == {"within"}:
        return Sentence(f"a difference no larger than {ref}, {ships}")
    return Sentence(f"measured against {ref}: {words}; {ships}")


def pingpong_verdict(pairs: list, shipped: int) -> Sentence:
    """What the prose says of rung 2's turns: ``pairs`` of (ratio as shipped, ratio with the other
    ``PINGPONG``) at 4096^3 and 8192^3; ``shipped`` the default's PINGPONG (0 or 1)."""
    other = 1 - shipped
    kind, words = _per_size([o - s for s, o in pairs], STEP_NOISE)
    keep = ("so " if "gain" not in kind else "yet ") + f"rung 2 ships with `PINGPONG` = {shipped}"
    if set(kind) == {"within"}:
        return Sentence(f"the two settings differ by less than the spread between runs, {keep}")
    return Sentence(f"against the spread between runs, `PINGPONG` = {other} is {words}; {keep}")


def prose_values() -> dict:
    """Every measured number the chapter's prose quotes, from results/<gpu>-fp8.json only:
    ``r1_4096``, ``r1_8192`` (rung 1's ratio to cuBLASLt FP8), ``r1_tflops_8192``, ``lt_tflops_8192``,
    ``r2_4096``, ``r2_8192`` (rung 2 as shipped, to per-tensor cuBLASLt), ``r2_other_4096``,
    ``r2_other_8192`` (its control: the other PINGPONG), ``r2_sl0_4096``, ``r2_sl0_8192`` (the control of
    the scale path: every consumer thread loads its scales from global memory), ``r2_bn128_4096``,
    ``r2_bn128_8192`` (the control of the tile: 128 x 128 with those loads), ``r1_bf16_4096``, ``r1_bf16_8192`` (rung 1 to cuBLAS bf16), ``r1_twice_x`` (how far rung 1's two
    timings of one shape, one beside each reference, differ in TFLOP/s: the larger relative gap),
    ``r1_cluster_verdict`` and ``r2_pingpong_verdict`` (what the prose says of the two switches:
    :func:`cluster_verdict`, :func:`pingpong_verdict`), ``p{P}_8192`` (the promotion builds), ``err_p0``, ``err_p1``, ``err_block``, ``err_bf16`` (errors
    at the largest recorded K, uniform inputs), ``acc_k`` (that K), ``probe_kept_max`` (the largest
    e whose small term survived across k-tiles; ``probe_steps_max`` across the k32 steps of one
    k-tile, ``probe_within_max`` inside one instruction), ``torch``. KeyError when something is missing."""
    doc, _ = recorded()
    if not doc:
        raise KeyError(f"results/{results.DEFAULT_SLUG}-{ARTIFACT}.json is not recorded")

    def run(kernel, shape, ref="FP8", **p):
        for r in doc["runs"]:
            if (r["kernel"] == kernel and r["shape"] == list(shape) and ref in r["reference"]
                    and all(r["params"].get(k) == v for k, v in p.items())):
                return r
        raise KeyError(f"{kernel} {p} at {shape} against {ref} is not recorded")
    big, mid = (8192,) * 3, (4096,) * 3
    r2 = catalog.get("fp8_r2_block").defaults
    pp = r2["PINGPONG"]                                    # rung 2 as shipped; its control has the other
    ship = {"BN": r2["BN"], "SCALE_LOAD": r2["SCALE_LOAD"]}
    out = {"r1_4096": run("fp8_r1_tensor", mid, CLUSTER_M=1)["ratio"],
           "r1_8192": run("fp8_r1_tensor", big, CLUSTER_M=1)["ratio"],
           "r1c_4096": run("fp8_r1_tensor", mid, CLUSTER_M=2)["ratio"],
           "r1c_8192": run("fp8_r1_tensor", big, CLUSTER_M=2)["ratio"],
           "r1_tflops_8192": run("fp8_r1_tensor", big, CLUSTER_M=1)["value"],
           "lt_tflops_8192": run("fp8_r1_tensor", big, CLUSTER_M=1)["reference_value"],
           "r2_4096": run("fp8_r2_block", mid, PINGPONG=pp, **ship)["ratio"],
           "r2_8192": run("fp8_r2_block", big, PINGPONG=pp, **ship)["ratio"],
           "r2_other_4096": run("fp8_r2_block", mid, PINGPONG=1 - pp, **ship)["ratio"],
           "r2_other_8192": run("fp8_r2_block", big, PINGPONG=1 - pp, **ship)["ratio"],
           "r2_sl0_4096": run("fp8_r2_block", mid, PINGPONG=pp, BN=r2["BN"], SCALE_LOAD=0)["ratio"],
           "r2_sl0_8192": run("fp8_r2_block", big, PINGPONG=pp, BN=r2["BN"], SCALE_LOAD=0)["ratio"],
           "r2_bn128_4096": run("fp8_r2_block", mid, PINGPONG=pp, BN=128, SCALE_LOAD=0)["ratio"],
           "r2_bn128_8192": run("fp8_r2_block", big, PINGPONG=pp, BN=128, SCALE_LOAD=0)["ratio"],
           "r1_bf16_4096": run("fp8_r1_tensor", mid, ref="bf16", CLUSTER_M=1)["ratio"],
           "r1_bf16_8192": run("fp8_r1_tensor", big, ref="bf16", CLUSTER_M=1)["ratio"], "torch": doc.get("torch") or "absent"}
    # rung 1 is timed twice per shape, beside each reference: how far its own two timings differ
    out["r1_twice_x"] = max(abs(run("fp8_r1_tensor", s, CLUSTER_M=1)["value"]
                                / run("fp8_r1_tensor", s, ref="bf16", CLUSTER_M=1)["value"] - 1) for s in (mid, big))
    out["r1_cluster_verdict"] = cluster_verdict(
        [(out["r1_4096"], out["r1c_4096"]), (out["r1_8192"], out["r1c_8192"])], out["r1_twice_x"],
        catalog.get("fp8_r1_tensor").defaults["CLUSTER_M"] > 1)
    out["r2_pingpong_verdict"] = pingpong_verdict(
        [(out["r2_4096"], out["r2_other_4096"]), (out["r2_8192"], out["r2_other_8192"])], pp)
    for P in PROMOTIONS:
        out[f"p{P}_8192"] = run("fp8_promote", big, PROMOTE=P)["ratio"]
    acc = sorted((r for r in doc["accuracy"] if r["dist"] == "positive"), key=lambda r: r["K"])[-1]
    out.update(acc_k=acc["K"], err_p0=acc["promote_0"], err_p1=acc["promote_1"], err_p4=acc["promote_4"],
               err_block=acc["block"], err_bf16=acc["bf16_tensor"])
    t = doc["probe"]["tiles"]
    out["probe_kept_max"] = max(e for e, k in zip(t["e"], t["kept"]) if k > 0.5)
    out["probe_bits"] = out["probe_kept_max"] + 1              # with the leading bit
    w = doc["probe"]["within"]
    out["probe_within_max"] = max(e for e, k in zip(w["e"], w["kept"]) if k > 0.5)
    st = doc["probe"]["steps"]
    out["probe_steps_max"] = max(e for e, k in zip(st["e"], st["kept"]) if k > 0.5)
    return out
