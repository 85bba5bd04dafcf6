"""Where the compiler put chapter 5's prefetch: a check of instruction *order*.

Chapter 5's double-buffered kernel (``sgemm_warptile_db``) issues the global
loads of tile kt+1 before the math of tile kt, so that their latency hides
behind the FFMAs. Counting instructions cannot see whether that happened: a
rewrite of the kernel's macros as functions kept every FFMA, LDS, LDG and STS
count and every register, yet ptxas moved the two LDGs after the FFMAs, next
to the STS that consume them, and the kernel ran 35 % slower on the H200
(notes/ch5_function_rewrite.md; the book keeps the macros). This test reads
the SASS (nvcc + nvdisasm) and measures, in the main loop, how many FFMAs lie
between each prefetch LDG and the first STS after it: with the prefetch in
place that is three quarters of a tile (TM * TN * BK FFMAs: 384 of 512 at the
defaults, 768 of 1024 at BN=256); with the regression it was 2.

It fails if a change lets the loads sink. Without nvcc or nvdisasm it skips
(``pip install nvidia-cuda-nvdisasm``; requirements.txt has it on Linux x86-64).
"""
from __future__ import annotations

import re

import pytest

import helpers  # noqa: F401  (fills the catalog)
from helpers.runtime import catalog
from helpers.runtime import compile as kc

pytestmark = pytest.mark.skipif(kc.nvcc_path() is None or kc.tool_path("nvdisasm") is None,
                                reason="needs nvcc and nvdisasm (pip install nvidia-cuda-nvdisasm)")

SPEC = catalog.get("warptile_db")
# The defaults and the widest shipped tile (BN=256: the most registers, where
# ptxas is likeliest to trade the early issue for a shorter live range).
CONFIGS = [SPEC.defaults, {**SPEC.defaults, "BN": 256, "WN": 64, "TN": 16}]


def ffma_between_prefetch_and_store(listing: list[str]) -> list[int]:
    """For each LDG that follows some FFMA (the main loop's prefetch; the
    prologue's loads come before any math), the number of FFMAs between it and
    the first STS after it."""
    out = []
    seen_ffma = False
    for i, ins in enumerate(listing):
        if re.search(r"\bFFMA\b", ins):
            seen_ffma = True
        elif "LDG" in ins and seen_ffma:
            n = 0
            for later in listing[i + 1:]:
                if re.search(r"\bSTS\b", later):
                    break
                n += bool(re.search(r"\bFFMA\b", later))
            out.append(n)
    return out


@pytest.mark.parametrize("params", CONFIGS, ids=["defaults", "BN256"])
def test_prefetch_is_issued_before_the_tile_math(params):
    listing = kc.sass_listing(SPEC.file, SPEC.entry, kc.entry_defines(SPEC.entry, SPEC.defines(params)))
    gaps = ffma_between_prefetch_and_store(listing)
    tile_ffma = params["TM"] * params["TN"] * params["BK"]
    assert gaps, "no LDG inside the main loop: the prefetch is gone"
    # At least a quarter of a tile's FFMAs must cover each load (the regression left 2).
    assert min(gaps) >= tile_ffma // 4, (
        f"{SPEC.entry} {params}: only {min(gaps)} of the tile's {tile_ffma} FFMAs lie between a "
        f"prefetch LDG and its STS (gaps {gaps}); the loads no longer overlap the math")


def test_the_check_sees_a_sunk_prefetch():
    """The measure itself, on two hand-written listings: loads before the math
    pass, loads next to their stores fail."""
    math = ["FFMA R1, R2, R3, R1"] * 64
    early = ["LDG.E.128 R4, desc[UR4][R2.64]"] + ["FFMA R0, R0, R0, R0"] + math + ["STS.128 [R5], R4"]
    late = ["FFMA R0, R0, R0, R0"] + math + ["LDG.E.128 R4, desc[UR4][R2.64]", "FFMA R1, R2, R3, R1",
                                            "STS.128 [R5], R4"]
    assert ffma_between_prefetch_and_store(early) == []          # before any FFMA: the prologue
    assert ffma_between_prefetch_and_store(["FFMA R0, R0, R0, R0"] + early) == [65]
    assert ffma_between_prefetch_and_store(late) == [1]
