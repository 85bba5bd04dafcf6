"""Chapter 5's glued numbers (book/05_register_tiling.ipynb): what its prose quotes, read from the
H200's records only (``results/<gpu>.json``, ``-fp32-flags.json``, ``-ncu-panels.json``), never
measured. A module of its own because ``ch05_register_tiling.py`` is near the 500-line limit; it
belongs to chapter 5's page and imports nothing but that chapter, ``common`` and the runtime.
"""
from __future__ import annotations

from helpers.runtime import bench, catalog, panels, results

from . import ch05_register_tiling as ch5
from .common import Sentence

SHAPE = (4096, 4096, 4096)
# the counters of the bank-conflict check of step 6 (Nsight Compute metric names)
CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared"
DEFAULT_TILE, SMALL_TILE = "128x256x16", "128x128x8"      # the two tiles of the build-flag table


def _ratio(key: str, p: dict) -> float:
    return results.lookup(key, p, "float32", SHAPE)["ratio"]


def _pairs(before: str, after: str) -> list:
    """[(params of ``before``, speed of ``after`` over ``before``)] at every shared configuration
    (:func:`helpers.chapters.ch05_register_tiling.twins`), from the records, as :func:`helpers.runtime.bench.speedup` (the quotient of their ratios to cuBLAS)."""
    out = []
    for p, q in ch5.twins(before, after):
        a, b = results.lookup(after, q, "float32", SHAPE), results.lookup(before, p, "float32", SHAPE)
        out.append((p, bench.speedup(a, b)))
    return out


def _pct(x: float) -> float:
    """A speed ratio as a gain in per cent (1.065 -> 6.5; below 1, negative)."""
    return (x - 1) * 100


def faster_words(x: float) -> Sentence:
    """A speed ratio in words: "1.2 % faster" or "0.4 % slower"."""
    return Sentence(f"{abs(_pct(x)):.1f} % {'faster' if x >= 1 else 'slower'}")


def alone_words(serp: float, interior: float) -> Sentence:
    """Which of the two switches helps alone (speed ratios of each over neither)."""
    helps = [n for n, x in (("the serpentine order", serp), ("the unchecked interior", interior)) if x > 1]
    return Sentence("neither switch helps alone" if not helps else "both switches help alone" if len(helps) == 2
                    else f"only {helps[0]} helps alone")


def flags_takeaway(serp: float, interior: float, both: float) -> Sentence:
    """The chapter's summary line on the two switches at 128 x 128 x 8 (speed ratios over neither)."""
    if max(serp, interior) <= 1 < both:
        return Sentence(f"each does little or harm alone, together they gain {_pct(both):.1f} %")
    return Sentence(f"alone they move the speed by {_pct(serp):+.1f} % and {_pct(interior):+.1f} %, together by "
                    f"{_pct(both):+.1f} %, not the sum")


def launch_bounds_sentence(doc: dict | None = None) -> Sentence:
    """The pitfall section's sentence on what its twin changes besides the register cap, for a
    ``{glue:md}`` role. ``doc`` is the build-flag record (default: ``results/<gpu>-fp32-flags.json``).
    With its ``cap`` group (scripts/ch5_flags.py: the pitfall, the same build with MIN_BLOCKS = 1 and
    both switches off, and the twin, timed in one run) it quotes the one-switch control; without
    one it says what the comparison leaves mixed and where the switches are timed apart."""
    doc = results.artifact(ch5.FLAGS_ARTIFACT) if doc is None else doc
    mixed = ("As the book ships it, `MIN_BLOCKS = 1` also turns on step 6's two build switches (the "
             "serpentine FMA order and the unchecked interior copies)")
    cap = (doc or {}).get("cap")
    if not cap:
        return Sentence(mixed + ". Step 6's table of builds times those apart: they move the ratio to "
                        "cuBLAS by hundredths, not by the factor the cap costs here.")
    trap, ctl, twin = (r["ratio"] for r in cap)
    return Sentence(mixed + ". A third build, timed in one run with these two for step 6's build-flag "
                    f"record, keeps both switches off and changes only `MIN_BLOCKS`: it runs at {ctl:.3f} of "
                    f"cuBLAS against the pitfall's {trap:.3f}, so the register cap alone makes it "
                    f"{ctl / trap:.1f}x slower; the switches then take the uncapped build to {twin:.3f}.")


def prose_values() -> dict:
    """{name: value} the prose of chapter 5 glues, at 4096^3 fp32 on the H200's records:

    - ``vec4_gain_bk8_pct`` / ``vec4_gain_bk16_pct``: reg2d_vec4 over reg2d at BK = 8 and 16, %;
    - ``db_gain_min_pct`` / ``db_gain_max_pct``: warptile_db over warptile at equal tiles, %;
    - ``ca_gain_small_min_pct`` / ``..._max_pct``: cp_async over warptile_db at the 128 x 128 x 8
      tiles; ``ca_level_min`` / ``ca_level_max``: the same ratio at the deeper and wider tiles;
    - ``ca_plain_small`` (cp_async built like warptile_db: serpentine order, every copy checked,
      at 128 x 128 x 8, from the flag table) and ``db_small`` (warptile_db there), ratios to cuBLAS;
    - ``group_wt_loss_pct``: what plain row order (GROUP_M = 0) costs warptile against GROUP_M = 8, %;
      ``group_others_dev_pct``: the largest change, either way, of any other GROUP_M over 8 in the
      other warp-tiled kernels, %;
    - the flag table: ``serp_checked_pct``, ``interior_serp_pct``, ``interior_plain_loss_pct`` (default
      tile, %; the last a loss), ``flags_both`` and ``flags_neither`` (ratios to cuBLAS there), ``small_serp_x`` and
      ``small_interior_x`` (each switch alone at 128 x 128 x 8), ``small_both_pct`` (both against
      neither, %), ``small_interior_regs`` (registers of both unchecked-interior builds, equal) and
      ``small_interior_pct`` (their difference, %); the same effects in words, for sentences whose
      sign could change with a re-recording: ``serp_checked_words``, ``interior_plain_words``,
      ``small_both_words`` (:func:`faster_words`), ``small_alone_words`` (:func:`alone_words`) and
      ``flags_takeaway`` (:func:`flags_takeaway`);
    - step 6's Nsight Compute panel: ``ca_dram_pct`` (DRAM busy, % of peak), ``ca_conflicts_m``
      (shared-memory bank conflicts, millions), ``ca_conflicts_ld`` and ``ca_conflicts_st`` (those
      of shared loads and stores), ``ca_conflict_pct`` (conflicts per shared wavefront, %);
    - ``lb_control``: the pitfall section's sentence on its one-switch control
      (:func:`launch_bounds_sentence`).

    Raises KeyError or StopIteration when a record is missing."""
    out = {}
    vec4 = {p["BK"]: x for p, x in _pairs("reg2d", "reg2d_vec4")}
    out["vec4_gain_bk8_pct"], out["vec4_gain_bk16_pct"] = _pct(vec4[8]), _pct(vec4[16])
    db = [x for _, x in _pairs("warptile", "warptile_db")]
    out["db_gain_min_pct"], out["db_gain_max_pct"] = _pct(min(db)), _pct(max(db))
    ca = _pairs("warptile_db", "cp_async")
    small = [x for p, x in ca if (p["BN"], p["BK"]) == (128, 8)]
    level = [x for p, x in ca if (p["BN"], p["BK"]) != (128, 8)]
    out["ca_gain_small_min_pct"], out["ca_gain_small_max_pct"] = _pct(min(small)), _pct(max(small))
    out["ca_level_min"], out["ca_level_max"] = min(level), max(level)
    small_tile = {"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 32, "TM": 8, "TN": 8}
    out["db_small"] = _ratio("warptile_db", {**catalog.get("warptile_db").defaults, **small_tile})
    groups = {(k, g): bench.speedup(results.lookup(k, p, "float32", SHAPE), results.lookup(k, by[8], "float32", SHAPE))
              for k, by in ch5.group_m_sets() for g, p in by.items() if g != 8}
    out["group_wt_loss_pct"] = -_pct(groups["warptile", 0])
    out["group_others_dev_pct"] = max(abs(_pct(x)) for (k, _), x in groups.items() if k != "warptile")

    flags = ch5.flag_rows()
    row = {(r["tile"], r["FMA order"], r["copies"].startswith("interior")): r for r in flags["rows"]}
    e, s = flags["effects"][DEFAULT_TILE], flags["effects"][SMALL_TILE]
    out["serp_checked_pct"] = _pct(e["serpentine (checked copies)"])
    out["interior_serp_pct"] = _pct(e["interior (serpentine order)"])
    out["interior_plain_loss_pct"] = -_pct(e["interior (plain order)"])
    out["flags_both"] = row[DEFAULT_TILE, "serpentine", True]["ratio"]
    out["flags_neither"] = row[DEFAULT_TILE, "plain", False]["ratio"]
    out["small_serp_x"], out["small_interior_x"] = s["serpentine (checked copies)"], s["interior (plain order)"]
    both, neither = row[SMALL_TILE, "serpentine", True], row[SMALL_TILE, "plain", False]
    out["small_both_pct"] = _pct(both["ratio"] / neither["ratio"])
    plain_int = row[SMALL_TILE, "plain", True]
    out["small_interior_regs"] = both["registers"] if both["registers"] == plain_int["registers"] else None
    out["small_interior_pct"] = _pct(both["ratio"] / plain_int["ratio"])
    out["ca_plain_small"] = row[SMALL_TILE, "serpentine", False]["ratio"]
    out["serp_checked_words"] = faster_words(e["serpentine (checked copies)"])
    out["interior_plain_words"] = faster_words(e["interior (plain order)"])
    out["small_alone_words"] = alone_words(s["serpentine (checked copies)"], s["interior (plain order)"])
    out["small_both_words"] = faster_words(both["ratio"] / neither["ratio"])
    out["flags_takeaway"] = flags_takeaway(s["serpentine (checked copies)"], s["interior (plain order)"],
                                           both["ratio"] / neither["ratio"])

    runs, _, _ = panels.recorded()
    default = dict(catalog.get("cp_async").defaults)
    run = next(r for r in runs if r["key"] == "cp_async" and r.get("params") == default
               and tuple(r["shape"]) == SHAPE)
    m = run["metrics"]
    out["ca_dram_pct"] = run["panel"]["dram_pct"]
    out["ca_conflicts_m"] = m[f"{CONFLICTS}.sum"] / 1e6
    out["ca_conflicts_ld"], out["ca_conflicts_st"] = m[f"{CONFLICTS}_op_ld.sum"], m[f"{CONFLICTS}_op_st.sum"]
    out["ca_conflict_pct"] = run["panel"]["conflict_share"] * 100
    ctl, _ = panels.control("cp_async")            # the same kernel, the copies' conflicts counted apart
    out["ca_ctl_ldgsts_m"] = ctl[f"{CONFLICTS}_op_ldgsts.sum"] / 1e6
    out["ca_ctl_all_m"] = ctl[f"{CONFLICTS}.sum"] / 1e6
    out["lb_control"] = launch_bounds_sentence()
    return {k: v for k, v in out.items() if v is not None}
