"""The landing page's table of heavens (helpers.chapters.common.show_staircase): for each heaven,
what limited the kernel before its step, with the glossary's term for it, and what the step does.
Its few measured numbers are read from the records, never written here."""
from __future__ import annotations

from helpers.runtime import panels, results

# One line per heaven for the landing page: what held the kernel before, and what the step does.
# One line per heaven for the landing page: what limited the kernel before the step (with the
# glossary's term for it) and what the step does. {fp32_peak}, {gpu}, {fma5}, {wmma_idle} and {probe_top} are
# filled from the records by :func:`step_rows`.
GLOSSARY = "glossary.html#term-"    # raw HTML links: the built page's anchors (the id Sphinx gives a term)
STEPS = {
    1: ("nothing yet: one thread per element of C",
        f"loads along rows so a warp reads whole 32-byte <a href='{GLOSSARY}sector'>sectors</a>"),
    2: ("one output and 4-byte loads per thread (chapter 2 times the two apart)", "float4 loads and a 1 x 4 strip of C per thread: four elements per load"),
    3: (f"the <a href='{GLOSSARY}L1-TEX'>L1/TEX</a> data pipe: every operand of every FMA passes through it "
        "(DRAM nearly idle)", "tiles staged in shared memory and reused by the block"),
    4: (f"one shared-memory load per FMA: the shared-memory queue is full (<a href='{GLOSSARY}MIO-throttle'>MIO throttle</a>)",
        f"a 1-D register strip per thread and an XOR <a href='{GLOSSARY}swizzle'>swizzle</a> of A"),
    5: ("a few multiply-adds per shared-memory load (a 1-D strip of C per thread)",
        f"<a href='{GLOSSARY}register-tile'>register</a> and warp tiles, double buffering, a <a href='{GLOSSARY}cp.async'>cp.async</a> pipeline"),
    6: (f"FP32 multiply-add issue: the <a href='{GLOSSARY}FMA-pipe'>FMA pipe</a> {{fma5:.0f}} % busy, of a "
        "{fp32_peak:.1f} TFLOP/s peak on the {gpu}",
        f"<a href='{GLOSSARY}Tensor-Core'>Tensor Cores</a> through WMMA, fp16 in, fp32 accumulate"),
    7: (f"how WMMA feeds each <a href='{GLOSSARY}HMMA'>HMMA</a> (which part costs what, chapter 6 cannot separate): "
        f"the <a href='{GLOSSARY}Tensor-pipe'>Tensor pipe</a> idles {{wmma_idle:.0f}} % of the SMs' active cycles",
        f"<a href='{GLOSSARY}mma.sync'>mma.sync</a>, <a href='{GLOSSARY}ldmatrix'>ldmatrix</a>, a swizzled layout, a deeper pipeline"),
    8: ("guesses about what limits each kernel", "Nsight Compute panels and the decision table, every heaven"),
    9: (f"shapes other than multiples of the tile, too few tiles, a ragged last wave (<a href='{GLOSSARY}tile-quantization'>tile quantization</a>)",
        f"<a href='{GLOSSARY}predication'>predicated</a> cp.async, a repack, <a href='{GLOSSARY}split-K'>split-K</a>, "
        f"<a href='{GLOSSARY}stream-K'>stream-K</a>, a dispatcher"),
    10: ("mma.sync itself: its instructions alone, every other stage of the loop removed, reach {probe_top:.2f} of cuBLAS",
         f"<a href='{GLOSSARY}TMA'>TMA</a>, <a href='{GLOSSARY}wgmma'>wgmma</a>, "
         f"<a href='{GLOSSARY}warp-specialization'>warp specialization</a>, <a href='{GLOSSARY}persistent-kernel'>persistent</a> tiles, "
         f"<a href='{GLOSSARY}cluster'>clusters</a> (sm_90a)"),
}


def step_rows(recs: list, wmma_key: str, fp32_key: str) -> list:
    """The landing page's rows (heaven, what limited it before, this step, ratio to cuBLAS), with
    the measured numbers of :data:`STEPS` read from the records: the FP32 peak of the recorded
    spec sheet (SMs x FP32 lanes x 2 x boost clock), heaven 5's FMA pipe activity (chapter 8's panel
    of ``fp32_key`` at 4096^3), WMMA's idle Tensor pipe (100 - its Nsight
    Compute tensor-pipe activity in chapter 8's panel of ``wmma_key`` at 4096^3) and chapter 7's mma-only ceiling
    (extras.mma_sync_probes, fp16). KeyError when one of them is not recorded."""
    runs, _, _ = panels.recorded()
    wmma = next(r for r in runs if r["key"] == wmma_key and list(r["shape"]) == [4096, 4096, 4096])
    h5 = next(r for r in runs if r["key"] == fp32_key and list(r["shape"]) == [4096, 4096, 4096])
    vals = {"fp32_peak": results.load()["ceilings"]["spec"]["fp32_peak_TFLOPs"],
            "gpu": results.load()["provenance"]["gpu"],
            "wmma_idle": 100 - wmma["panel"]["tensor_pct"], "fma5": h5["panel"]["fma_pct"],
            "probe_top": results.load()["extras"]["mma_sync_probes"]["float16"]["rows"][-1]["ratio"]}
    by = {r["chapter"]: r for r in recs}
    return [{"heaven": h, "limited before by": before.format(**vals), "this step": step.format(**vals),
             "ratio to cuBLAS": by[h]["ratio"] if h in by else None} for h, (before, step) in STEPS.items()]
