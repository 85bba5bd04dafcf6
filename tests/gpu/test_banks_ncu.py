"""GPU suite: the shared-memory bank model (helpers/models/banks.py) against Nsight
Compute, counter by counter, for every chapter-4 variant, the chapter-0
transposes (the H200 anchor: 1,015,808 conflicts at 1024 x 1024) and the
bank probes.

Runs scripts/ncu_banks.py (about a minute) unless BANKS_NCU_JSON names a JSON
file that script already wrote. Skipped without a GPU (tests/conftest.py) or
without ncu. The comparison is exact: these counters are event counts, and
the model predicts them from the kernels' access patterns.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.models import banks
from helpers.runtime import ncu as ncu_tool

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import ncu_banks  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    given = os.environ.get("BANKS_NCU_JSON")
    if given:
        return json.loads(Path(given).read_text())
    if ncu_tool.find() is None:
        pytest.skip("Nsight Compute (ncu) not found: PATH, $CUDA_PATH/bin, /usr/local/cuda/bin")
    out = tmp_path_factory.mktemp("ncu") / "banks.json"
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "ncu_banks.py"), "--out", str(out)],
                       capture_output=True, text=True, timeout=1800)
    if not out.exists():
        text = r.stdout[-3000:] + r.stderr[-3000:]
        if "ERR_NVGPUCTRPERM" in text or "permission" in text.lower():
            pytest.skip("ncu may not read GPU performance counters here (ERR_NVGPUCTRPERM)")
        pytest.fail(f"scripts/ncu_banks.py wrote nothing (rc={r.returncode}):\n{text}")
    return json.loads(out.read_text())


def variants(doc):
    return {k: v for k, v in doc.items() if not k.startswith("_") and k != "provenance"}


def test_every_planned_variant_was_measured(measured):
    planned = {it["name"] for it in ncu_banks.ncu_plan(tuple(measured["_meta"]["shape"]))}
    assert set(variants(measured)) == planned


@pytest.mark.parametrize("metric", banks.METRICS)
def test_model_equals_ncu(measured, metric):
    meta = measured["_meta"]["variants"]
    bad = []
    for name, got in variants(measured).items():
        item = {"name": name, **meta[name]}
        want = ncu_banks.ncu_predict(item)[metric]
        if metric == banks.ST_CONFLICTS and "smsp__inst_executed_op_shared_st.sum" in got:
            # Store side: on the H200 ncu reports extra store wavefronts (and so extra
            # "conflicts") that change from run to run of the same kernel (e.g. 9,047 then
            # 11,737 for one variant), 3-14 % of the store instructions, so they are not a
            # property of the access pattern. The pattern's part must be there exactly
            # (ncu >= model) and the excess must stay within 15 % of the store instructions.
            excess = got[metric] - want
            if not 0 <= excess <= 0.15 * got["smsp__inst_executed_op_shared_st.sum"]:
                bad.append(f"{name}: ncu {got.get(metric)}, model {want} (excess {excess})")
        elif got.get(metric) != want:
            bad.append(f"{name}: ncu {got.get(metric)}, model {want}")
    assert not bad, f"{metric}: model and Nsight Compute disagree for\n  " + "\n  ".join(bad)


def test_anchor_reproduced(measured):
    """The numbers of shared/reference/h200-anchors.json."""
    t = measured["transpose_shared/PAD0"]
    assert t[banks.LD_CONFLICTS] == 1015808 and t[banks.LD_INSTRUCTIONS] == 32768
    assert t[banks.LD_WAVEFRONTS] == 1048576
    assert measured["transpose_shared/PAD1"][banks.LD_CONFLICTS] == 0
