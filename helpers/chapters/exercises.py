"""The exercises at the end of chapters 1-7 and 10: the reader completes one step of the
chapter's kernel, and the book checks it on the reader's GPU.

Each :class:`Exercise` names its files in ``kernels/exercises/`` (``NN_name.starter.cu``,
``.solution.cu`` and the deliberately wrong ``.wrong_<what>.cu`` variants, each the
chapter's kernel with one step cut or broken), the catalog entry whose launch it takes,
the shapes it is checked on and, per hint code of :data:`helpers.models.exercise.HINTS`,
what that hint means in the chapter's terms.

A notebook cell calls :func:`check` with the reader's source (or uses the cell magic
``%%exercise 3.1``, registered when this module is imported under IPython). Live, the
check runs in a child process (:mod:`helpers.runtime.exercise`) and shows one verdict:
the compiler's errors at the reader's lines, a hang, a fault, where a wrong result is
wrong and its likely cause, or, when right, its speed beside the chapter's kernel and
cuBLAS and its place on the staircase. Without a GPU it says so in one line and shows
what the check said on the recorded GPU (``results/<gpu>-exercises.json``, written by
``scripts/record_exercises.py``). :func:`show_solution` lists a solution (the notebook
folds it). :func:`run` is the whole check without display (tests, the recorder).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from helpers.figures import exercise as ex_fig, style
from helpers.models import banks
from helpers.models.words import counted
from helpers.models import exercise as model
from helpers.runtime import catalog, gpu, launch, results
from helpers.runtime import exercise as rt
from helpers.runtime.checks import require
from helpers.runtime.compile import KERNEL_DIR

from . import common

ARTIFACT = "exercises"
LIVE_WHERE = ("open this chapter in Colab or on a JupyterHub with a GPU (the README's "
              "\"Running a chapter live on a GPU\") to check your own kernel")
ODD = ((37, 53, 29), (129, 257, 100))        # small shapes, no dimension a multiple of a tile
LARGE = (1000, 1000, 999)
TIME_SHAPE = (4096, 4096, 4096)
VS = "vs the chapter's kernel"

# What each hint says in general; an exercise adds what it means for its step.
GENERAL = {
    "compile": "It does not compile.",
    "hang": "It did not finish in time, so the child process running it was stopped.",
    "fault": "It stopped with a CUDA error, in the child process; the notebook is unharmed.",
    "out_of_bounds": "It wrote outside C (into the NaN guard zones before and after it).",
    "race": "A race between the threads of a block.",
    "tile_edge": "Wrong only at the edge of the matrix: the partial tiles.",
    "never_written": "Some elements of C were never written (they are still NaN).",
    "wrong_values": "Every element was written, but some are wrong.",
    "thread_order": "Right, but the threads of a warp write C in an order that costs extra sectors.",
    "bank_conflicts": "Right, but its shared-memory accesses conflict in the banks.",
    "pass": "Right on every shape.",
}


@dataclass(frozen=True)
class Exercise:
    """One exercise. ``id`` ("3.1"), ``chapter``, ``title``, ``stem`` (files
    ``kernels/exercises/<stem>.{starter,solution,wrong_*}.cu``), ``key`` (the catalog entry
    whose entry name, launch, -D defaults, dtype and owner model the kernel takes),
    ``tile`` (rows, columns, k of one block step: the tile-edge test rounds shapes up to
    it), ``shapes`` (checked in order, small odd ones first), ``starter`` (the hint the
    unedited starter gets), ``wrong`` ({variant: the hint it must get}), ``hints`` ({code:
    what it means for this step}), ``barriers`` (``__syncthreads()`` the step needs, or
    None), ``probe`` (True: the shared-memory layout function ``a_at`` is probed and the
    bank model costs it), ``timeout_s``."""
    id: str
    chapter: int
    title: str
    stem: str
    key: str
    tile: tuple
    starter: str | tuple
    wrong: dict
    hints: dict
    shapes: tuple = ODD + (LARGE,)
    barriers: int | None = None
    probe: bool = False
    timeout_s: float = 120.0
    extra: dict = field(default_factory=dict)

    def file(self, variant: str = "starter") -> str:
        """``exercises/<stem>.<variant>.cu``, relative to kernels/ (FileNotFoundError if absent)."""
        f = f"exercises/{self.stem}.{variant}.cu"
        if not (KERNEL_DIR / f).is_file():
            raise FileNotFoundError(f"variant={variant!r}: no kernels/{f}")
        return f

    def text(self, variant: str = "starter") -> str:
        return (KERNEL_DIR / self.file(variant)).read_text()

    def variants(self) -> list:
        """"starter", "solution" and every wrong variant, in that order."""
        return ["starter", "solution", *self.wrong]

    def expected(self, variant: str) -> tuple:
        """The hints ``variant`` may get (most exercises: exactly one; a missing mbarrier wait
        reads stale or half-landed data, which two runs may or may not tell apart)."""
        h = {"starter": self.starter, "solution": "pass", **self.wrong}[variant]
        return h if isinstance(h, tuple) else (h,)


EXERCISES: dict[str, Exercise] = {}


def _add(e: Exercise) -> None:
    EXERCISES[e.id] = e


_add(Exercise(
    "1.1", 1, "the thread order", "01_thread_order", "naive_yfirst", tile=(8, 32, 1),
    starter="never_written", timeout_s=60.0,
    wrong={"wrong_column_order": "thread_order", "wrong_no_guard": "out_of_bounds",
           "wrong_hang": "hang", "wrong_fault": "fault"},
    hints={"never_written": "Each thread must compute a different element: row and col come from the block "
                            "and thread indices.",
           "thread_order": "Consecutive lanes (threadIdx.x) should take consecutive columns, so that one "
                           "store instruction of the warp writes one run of a row of C.",
           "out_of_bounds": "The grid covers whole blocks; the threads past row M - 1 or column N - 1 "
                            "must return before they load or store.",
           "hang": "A loop whose condition never changes.",
           "fault": "An index far outside A, B or C: an illegal address."}))
_add(Exercise(
    "2.1", 2, "the float4 loads", "02_float4", "vec4", tile=(8, 128, 4),
    shapes=((37, 52, 28), (129, 260, 100), (1000, 1000, 1000)),
    starter="wrong_values",
    wrong={"wrong_b_row": "wrong_values", "wrong_misaligned": "fault"},
    hints={"wrong_values": "The float4 of A holds A[row][k .. k+3]; its element kk multiplies the float4 of "
                           "row k + kk of B, which starts at b_ptr + (k + kk) * N.",
           "fault": "A float4 load must start at a multiple of four floats (16 bytes): a misaligned "
                    "address faults."}))
_add(Exercise(
    "3.1", 3, "the tiled loop and its two barriers", "03_tiled_loop", "smem_tiled", tile=(32, 32, 32),
    starter="race", barriers=2,
    wrong={"wrong_one_barrier": "race", "wrong_no_zero_fill": "tile_edge"},
    hints={"race": "The loop needs two barriers: one after the copies (no thread reads a tile before it "
                   "is complete) and one after the products (no thread overwrites a tile another is "
                   "still reading).",
           "tile_edge": "In the last k-tile, elements past column K - 1 of A and row K - 1 of B must be "
                        "copied as 0, not read.",
           "wrong_values": "Thread (tx, ty) copies A[row][k0 + tx] to As[ty][tx] and B[k0 + ty][col] to "
                           "Bs[ty][tx], then adds As[ty][k] * Bs[k][tx]."}))
_add(Exercise(
    "4.1", 4, "the XOR swizzle", "04_swizzle", "tile1d_swizzle", tile=(64, 64, 32),
    starter="bank_conflicts", probe=True,
    wrong={"wrong_scalar_xor": "fault"},
    hints={"bank_conflicts": "Row-major rows of BK floats start in one or two banks, so the 16 rows of a "
                             "column read pile up there. XOR the chunk index with a function of the row.",
           "fault": "The A tile is read as float4: a swizzle must move whole 16-byte chunks (XOR k with a "
                    "multiple of 4), or the float4 address is misaligned.",
           "wrong_values": "Two (m, k) sharing one slot, or the store and the read disagreeing on the "
                           "layout: a_at must be one-to-one on the tile."}))
_add(Exercise(
    "5.1", 5, "the outer product over a thread tile", "05_outer_product", "reg2d", tile=(128, 128, 8),
    starter="wrong_values",
    wrong={"wrong_thread_row": "wrong_values"},
    hints={"wrong_values": "Thread (tr, tc) reads its TM values of A at As[k][tr * TM + i] and its TN values "
                           "of B at Bs[k][tc * TN + j], then adds a[i] * b[j] to acc[i][j] for every i, j."}))


TC_SHAPES = ((37, 56, 40), (129, 264, 104), (1000, 1000, 1000))    # K % 8 == 0, N % 8 == 0
_add(Exercise(
    "6.1", 6, "the WMMA fragment loop", "06_wmma_fragments", "wmma_f16", tile=(128, 128, 32), shapes=TC_SHAPES,
    starter="wrong_values", timeout_s=240.0,
    wrong={"wrong_b_col_major": "wrong_values"},
    hints={"wrong_values": "Fragment i of A starts at a_s + i * 16 * LDA_S + ks and fragment j of B at b_s + "
                           "ks * LDB_S + j * 16; both tiles are row-major in shared memory, so both fragments "
                           "are declared row_major (a col_major B fragment reads each 16 x 16 block of B "
                           "transposed)."}))
_add(Exercise(
    "7.1", 7, "the ldmatrix addresses", "07_ldmatrix_rows", "mma_sync_f16", tile=(128, 256, 64), shapes=TC_SHAPES,
    starter="wrong_values", timeout_s=300.0,
    wrong={"wrong_no_swizzle": "wrong_values"},
    hints={"wrong_values": "Each lane hands ldmatrix one row: row lane % 16 of the 16-row tile, 16-byte chunk "
                           "lane / 16 of the k16 step (A) or of the pair of n8 fragments (B). cp.async stored "
                           "logical chunk q at swz(q, R), so the address must go through the same swizzle."}))
_add(Exercise(
    "10.1", 10, "the consumer's mbarrier wait", "10_mbarrier_wait", "hopper_r2_warp_specialized_f16",
    tile=(128, 256, 64), shapes=TC_SHAPES, timeout_s=300.0,
    starter=("race", "wrong_values", "fault"),
    wrong={"wrong_parity": ("race", "wrong_values", "hang", "fault")},
    hints={"race": "The consumers read a slot before TMA has filled it: wait on full[s] for the phase of this "
                   "lap, parity (it / STAGES) & 1.",
           "wrong_values": "The consumers read a slot before TMA has filled it: wait on full[s] for the phase "
                           "of this lap, parity (it / STAGES) & 1.",
           "hang": "A wait on a phase that never completes: the parity of lap it / STAGES is (it / STAGES) & 1.",
           "fault": "Consumers that never wait can finish, and the block leave, while TMA still writes its "
                    "shared memory: wait on full[s] for the phase of this lap."}))


def get(ex_id: str) -> Exercise:
    """The exercise ``ex_id`` ("3.1"); ValueError lists the known ones."""
    if ex_id not in EXERCISES:
        raise ValueError(f"exercise={ex_id!r}: unknown; the book has {', '.join(EXERCISES)}")
    return EXERCISES[ex_id]


# ------------------------------------------------------------------ the check, without display
def _probe(e: Exercise, p: dict) -> dict:
    n = p["BM"] * p["BK"]
    code = ('extern "C" __global__ void exercise_probe(int* out)\n{\n'
            "    for (int m = 0; m < BM; ++m)\n        for (int k = 0; k < BK; ++k)\n"
            "            out[m * BK + k] = a_at(m, k);\n}\n")
    return {"code": code, "entry": "exercise_probe", "count": n}


def _bank_costs(e: Exercise, offsets) -> dict:
    spec = catalog.get(e.key)
    q = spec.full()
    mine = model.tile1d_a_costs(offsets, q)
    ref = model.tile1d_a_costs([banks.a_tile_offset(q, m, k) for m in range(q["BM"]) for k in range(q["BK"])], q)
    return {"mine": mine, "model": ref}


def observe(e: Exercise, source: str, res: dict) -> dict:
    """The observation :func:`helpers.models.exercise.diagnose` reads, from a child's result."""
    runs = res.get("runs", [])
    last = runs[-1] if runs else {}
    where = res.get("where", {})
    obs = {"compile_error": res.get("compile_error"), "timed_out": res.get("timed_out"),
           "error": res.get("error") if not res.get("timed_out") else None,
           "guard_writes": last.get("guard_writes"), "nondeterministic": last.get("nondeterministic"),
           "ok": res.get("stage") == "done", "aligned_ok": res.get("aligned_ok"),
           "edge_only": where.get("edge_only"), "never_written": where.get("never_written")}
    if e.barriers is not None:
        obs.update(barriers=model.barrier_count(source), barriers_needed=e.barriers)
    own = res.get("owner") or {}
    if own.get("stores") and own.get("stores_model"):
        obs.update(stores=own["stores"]["sectors"], stores_model=own["stores_model"]["sectors"])
    if res.get("probe") is not None:
        costs = _bank_costs(e, res["probe"])
        res["banks"] = costs
        if costs["mine"].get("error"):
            obs["ok"] = False
        else:
            obs.update(wavefronts=costs["mine"]["read"], wavefronts_model=costs["model"]["read"])
    return obs


def job_for(e: Exercise, source: str, shapes=None, timed: bool = True) -> dict:
    """The check job of ``source`` for exercise ``e`` (:func:`helpers.runtime.exercise.job`, which
    raises ValueError): its entry, ``shapes`` (default: its own), tile, probe, timing shape."""
    probe = _probe(e, catalog.get(e.key).full()) if e.probe else None
    return rt.job(source, e.key, shapes or e.shapes, TIME_SHAPE if timed else None, tile=e.tile, probe=probe)


def run(ex_id: str, source: str, timed: bool = True, timeout_s: float | None = None) -> dict:
    """Check ``source`` (the reader's CUDA) for exercise ``ex_id`` in a child process.

    Returns {"hint": a code of :data:`helpers.models.exercise.HINTS`, "passed", "result":
    the child's result (:func:`helpers.runtime.exercise.check`), "obs"}. Raises
    ValueError for an unknown exercise or an empty source; RuntimeError without a GPU."""
    e = get(ex_id)
    p = dict(catalog.get(e.key).defaults)
    res = rt.check(job_for(e, source, timed=timed), timeout_s=timeout_s or e.timeout_s)
    obs = observe(e, source, res)
    d = model.diagnose(obs)
    return {**d, "result": res, "obs": obs, "params": p}


def summary(e: Exercise, variant: str, out: dict) -> dict:
    """What the results file keeps of one :func:`run` of ``variant``: the hint, whether it
    passed, the hints expected, the verdict and its detail lines, the speed records (a
    right kernel timed), the child's wall time and last stage."""
    verdict, details, code = explain(e, out)
    res = out["result"]
    return {"hint": out["hint"], "passed": out["passed"], "expected": list(e.expected(variant)),
            "verdict": verdict, "details": details, "compile_error": code or None,
            "records": res.get("records"), "wall_s": res.get("wall_s"), "last_stage": res.get("last_stage")}


def check_files(ids=None, variants=None, workers: int = 4, timed: bool = True, say=print) -> dict:
    """Every file of the exercises ``ids`` (default: all) through :func:`run`: the wrong
    variants and starters ``workers`` at a time (each its own child process; no timing), then
    each solution alone, timed when ``timed``. Returns {id: {variant: :func:`summary`}};
    ``say`` gets one line per file as it finishes. Needs a GPU."""
    from concurrent.futures import ThreadPoolExecutor
    ids = list(ids or EXERCISES)
    todo = [(i, v) for i in ids for v in get(i).variants() if variants is None or v in variants]
    out: dict = {i: {} for i in ids}

    def one(item):
        i, v = item
        e = get(i)
        s = summary(e, v, run(i, e.text(v), timed=timed and v == "solution"))
        out[i][v] = s
        say(f"{i} {v}: {s['hint']} (expected {' or '.join(s['expected'])}, {s['wall_s']} s)")
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        list(pool.map(one, [t for t in todo if t[1] != "solution"]))
    for t in todo:
        if t[1] == "solution":
            one(t)
    return out


# ------------------------------------------------------------------ words
def _owner_text(o: dict) -> str:
    if not o:
        return "never written"
    bx, by = o["block"]
    return f"written by block ({bx}, {by}), warp {o['warp']}, lane {o['lane']}"


def _where_lines(w: dict) -> list:
    if not w or not w.get("wrong"):
        return []
    lines = [f"{w['wrong']} of {w['size']} elements wrong ({w['never_written']} never written), rows "
             f"{w['rows'][0]}-{w['rows'][1]}, columns {w['cols'][0]}-{w['cols'][1]}"
             + (", only in the last partial tiles" if w.get("edge_only") else "") + "."]
    if w.get("n_blocks"):
        lines.append(f"They were written by {w['n_blocks']} block(s) and {w['n_warps']} distinct warp "
                     f"number(s) (warps {', '.join(map(str, w['warps']))}{' ...' if w['n_warps'] > 8 else ''}).")
    lines += [f"C[{x['row']}][{x['col']}]: {_owner_text(x['owner'])}." for x in w["examples"]]
    return lines


def explain(e: Exercise, out: dict) -> tuple[str, list, str]:
    """(verdict, detail lines, code) for a :func:`run` result."""
    code, res, obs = out["hint"], out["result"], out["obs"]
    verdict = GENERAL[code] + (" " + e.hints[code] if code in e.hints else "")
    details, text = [], ""
    runs = res.get("runs", [])
    if code == "compile":
        text = res.get("compile_error", "")
    elif code in ("hang", "fault"):
        details.append(res.get("error", ""))
        if code == "fault" and "misaligned" in res.get("error", "").lower():
            details.append("A misaligned address: a vector access (float4, 16 bytes) at an address that "
                           "is not a multiple of its size.")
        elif code == "fault" and "illegal" in res.get("error", "").lower():
            details.append("An illegal address: a load or store outside every array of the kernel.")
    elif code == "out_of_bounds":
        details.append(f"{runs[-1]['guard_writes']} elements written outside C at M, N, K = "
                       f"{', '.join(map(str, runs[-1]['shape']))}.")
    elif code == "race":
        if obs.get("nondeterministic"):
            details.append(f"Two runs on the same inputs differ in {obs['nondeterministic']} elements.")
        if obs.get("barriers_needed") is not None and obs["barriers"] < obs["barriers_needed"]:
            details.append(f"The source has {obs['barriers']} __syncthreads(); the step needs "
                           f"{obs['barriers_needed']}.")
    if code in ("tile_edge", "never_written", "wrong_values", "race") and runs and not runs[-1].get("ok"):
        r = runs[-1]
        details.append(f"At M, N, K = {', '.join(map(str, r['shape']))}: {r['message'] or 'wrong'}.")
        details += _where_lines(res.get("where", {}))
        if res.get("aligned_ok") is not None:
            details.append("On the same shape rounded up to whole tiles it is "
                           + ("right." if res["aligned_ok"] else "wrong too."))
    if code == "thread_order":
        st, sm = res["owner"]["stores"], res["owner"]["stores_model"]
        details.append(f"Warp 0 of block 0 writes {st['elements']} elements of C in {st['rows']} row(s) and "
                       f"{st['cols']} column(s): {st['sectors']} sectors of 32 bytes; the chapter's kernel: "
                       f"{sm['sectors']}.")
    if code == "bank_conflicts" or (code == "pass" and res.get("banks")):
        b = res["banks"]
        reads = catalog.get(e.key).full()["BK"] // 4
        details.append(f"Bank model of warp 0, per k-tile: the {reads} float4 column reads of the A tile take "
                       f"{b['mine']['read']} wavefronts in all and its stores {b['mine']['store']}; the chapter's "
                       f"swizzle: {b['model']['read']} and {b['model']['store']}.")
    if code == "pass":
        details.append("Shapes checked: " + "; ".join(", ".join(map(str, r["shape"])) for r in runs) + ".")
    return verdict, details, text


def speed_rows(e: Exercise, recs: list, mine: str = "your kernel", run: str = "this run") -> tuple[list, str]:
    """Rows (yours, named ``mine``; the chapter's kernel) with TFLOP/s, cuBLAS TFLOP/s and
    ratios, and one sentence that places yours: first against the chapter's kernel timed in
    the same run (its ratio to cuBLAS over the chapter's: each kernel alternated with its own
    cuBLAS rounds, so a clock that moved between the two cancels), then, for scale, beside
    the recorded ratios of the heavens taught so far (chapters up to ``e.chapter``) of the
    same dtype, which come from another run. ``run`` names the run the rows come from."""
    rows = [{"kernel": mine if i == 0 else r["title"], "TFLOP/s": r["value"], "cuBLAS TFLOP/s": r["reference_value"],
             "ratio to cuBLAS": r["ratio"]} for i, r in enumerate(recs)]
    if len(recs) == 2 and recs[1]["ratio"]:
        rows[0][VS] = round(recs[0]["ratio"] / recs[1]["ratio"], 3)
    dtype = catalog.get(e.key).dtype
    stairs = []
    for h, key in sorted(common.HEADLINE.items()):
        if h <= e.chapter and key in catalog.KERNELS and catalog.get(key).dtype == dtype:
            try:
                r = common.recorded_run(key)["ratio"]
            except KeyError:
                continue
            if r is not None:
                stairs.append((h, r))
    who = mine[0].upper() + mine[1:]
    place = f"{who}: {style.ratio_text(recs[0]['ratio'])} of cuBLAS in {run}"
    if VS in rows[0]:
        place += (f", {style.ratio_text(rows[0][VS])} of the chapter's kernel in the same run (ratio over ratio: "
                  "each had its own cuBLAS rounds)")
        tf = recs[0]["value"] / recs[1]["value"] if recs[1].get("value") else None
        if tf and abs(tf - rows[0][VS]) > 0.02:      # the two cuBLAS timings moved apart: say so
            drift = abs(recs[0]["reference_value"] / recs[1]["reference_value"] - 1)
            place += (f"; by TFLOP/s alone {style.ratio_text(round(tf, 3))}: the cuBLAS timed beside each differed "
                      f"by {drift:.0%}, so the two kernels are within about that of each other")
    if stairs:
        place += (f". For scale, the {dtype} heavens so far on the staircase (recorded in another run, so a few "
                  "hundredths either way is noise): "
                  + ", ".join(f"heaven {h} {style.ratio_text(r)}" for h, r in stairs))
    return rows, place + "."


# ------------------------------------------------------------------ notebook calls
def _words(hint: str) -> str:
    """A hint code as words for a table: "never_written" -> "never written"."""
    return hint.replace("_", " ")


def self_test_line(e: Exercise, got: dict, where: str) -> str:
    """One sentence on the recorded self-test of exercise ``e``'s checker (``got``: the
    record's verdict per file): the starter and the deliberately wrong versions of the
    kernel, and whether each got the verdict it was written to provoke; ``where``: the
    record (:func:`helpers.runtime.results.artifact_where`). Empty when none was recorded."""
    tried = [v for v in e.variants() if v != "solution" and v in got]
    if not tried:
        return ""
    wrong = [v for v in tried if v != "starter"]
    what = " and ".join(filter(None, ["the unfinished starter file" if "starter" in tried else "",
                                      f"{counted(len(wrong), 'deliberately wrong version')} of this kernel" if wrong else ""]))
    missed = [v for v in tried if got[v].get("hint") not in e.expected(v)]
    if not missed:
        return f"The checker was also tried on {what}: each got the verdict it was written to provoke; {where}."
    return (f"The checker was also tried on {what}; "
            + "; ".join(f"{e.stem}.{v}.cu got \"{_words(got[v].get('hint', '?'))}\", not "
                        f"\"{' or '.join(_words(h) for h in e.expected(v))}\"" for v in missed) + f"; {where}.")


def _recorded_line(e: Exercise) -> None:
    doc = results.artifact(ARTIFACT)
    got = (doc or {}).get("exercises", {}).get(e.id)
    head = (f"Shown here: the recorded check of the exercise's solution. This cell runs your own kernel only "
            f"when you execute it on a GPU: {LIVE_WHERE}.")
    if not got:
        ex_fig.report(f"Exercise {e.id}: {e.title}", head + " The check's result for the solution: not "
                      "recorded yet.")
        return
    sol = got.get("solution", {})
    details = [sol.get("verdict", "")] + list(sol.get("details", []))
    recs = sol.get("records") or []
    if recs:
        srows, place = speed_rows(e, recs, mine="the solution", run="the recorded run")
        details.append(place)
        details.append("Each beside its own cuBLAS rounds: " + "; ".join(
            f"{r['kernel']} {r['TFLOP/s']} TFLOP/s ({r['ratio to cuBLAS']} of cuBLAS)" for r in srows) + ".")
    details.append(self_test_line(e, got, results.artifact_where(doc, ARTIFACT)))
    ex_fig.report(f"Exercise {e.id}: {e.title}", head + " What the check said about the solution on the "
                  "recorded GPU:", details)


def check(ex_id: str, source: str) -> None:
    """Check the reader's kernel ``source`` for exercise ``ex_id`` and display the verdict.
    Live: in a child process with a time limit (a hang or a fault leaves this kernel
    alive); never raises for a wrong kernel (the verdict says what is wrong). Without a
    GPU (or in the batch run that writes the built book's outputs, where ``show.live_controls()``
    is False): one line saying so, and the recorded results of the exercise's files.
    Raises ValueError for an unknown exercise or an empty source."""
    e = get(ex_id)
    require(isinstance(source, str) and source.strip() != "", "source", type(source).__name__,
            "must be the kernel's CUDA source as a non-empty string")
    if not ex_fig.show.live_controls():       # no GPU, or the batch run whose outputs the built book shows
        _recorded_line(e)
        return
    spec = catalog.get(e.key)
    why = launch.unable(spec)
    if why:
        ex_fig.report(f"Exercise {e.id}: {e.title}", f"This GPU cannot run the chapter's kernel: it {why}.")
        return
    out = run(ex_id, source)
    verdict, details, text = explain(e, out)
    recs = out["result"].get("records") or []
    rows, caption = [], ""
    if recs:
        rows, place = speed_rows(e, recs)
        details.append(place)
        caption = (f"Your kernel and the chapter's at {common.mnk(TIME_SHAPE)}, each against cuBLAS in the "
                   f"same run; measured live on {gpu.device_info()['name']}.")
    ex_fig.report(f"Exercise {e.id}: {e.title}", verdict, details, text, rows,
                  ["kernel", "TFLOP/s", "cuBLAS TFLOP/s", "ratio to cuBLAS", VS], caption)


def show_solution(ex_id: str) -> None:
    """The listing of the solution of exercise ``ex_id`` (the notebook folds this cell)."""
    ex_fig.solution(get(ex_id).file("solution"))


def _register_magic() -> None:
    """``%%exercise 3.1`` over a cell of CUDA: :func:`check` of that exercise with the cell."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    ip = get_ipython()
    if ip is not None:
        ip.register_magic_function(lambda line, cell: check(line.strip(), cell), "cell", "exercise")


_register_magic()
