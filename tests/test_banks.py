"""Unit tests of helpers/models/banks.py (the shared-memory bank model) and of the
chapter-4 catalog rules. CPU only; the SASS cross-check needs nvcc and
nvdisasm and skips without them. The model against Nsight Compute on a GPU:
tests/gpu/test_banks_ncu.py."""
from __future__ import annotations

import numpy as np
import pytest

from helpers.chapters import ch04_bank_conflicts as ch4
from helpers.models import banks
from helpers.models.banks import LD_CONFLICTS, LD_INSTRUCTIONS, LD_WAVEFRONTS, ST_CONFLICTS
from helpers.runtime import catalog, compile as kc


def _full(key, p):
    """Every -D value of catalog entry ``key`` with ``p`` (what helpers.models.banks takes)."""
    return catalog.get(key).full(p)


def lanes(f):
    return [f(l) for l in range(32)]


# ------------------------------------------------------------------ one request
def test_bank_of_address():
    assert banks.bank(0) == 0 and banks.bank(4) == 1 and banks.bank(124) == 31 and banks.bank(128) == 0
    assert list(banks.bank(np.array([0, 132, 256 + 8]))) == [0, 1, 2]


def test_row_read_is_one_wavefront():
    c = banks.wavefronts(lanes(lambda l: 4 * l))
    assert c == {"wavefronts": 1, "conflicts": 0, "phases": [1], "ways": 1}


def test_column_of_32x32_tile_is_32_way():
    c = banks.wavefronts(lanes(lambda l: 4 * 32 * l))
    assert c["wavefronts"] == 32 and c["conflicts"] == 31


def test_padded_column_is_conflict_free():
    assert banks.wavefronts(lanes(lambda l: 4 * 33 * l))["wavefronts"] == 1


@pytest.mark.parametrize("pad,ways", [(0, 32), (1, 1), (2, 2), (4, 4), (8, 8), (3, 1), (16, 16)])
def test_padding_gcd_rule(pad, ways):
    """Column read of a 32-wide tile with rows of 32 + pad floats: the lanes
    fall on gcd(32 + pad, 32) banks' worth of repeats."""
    assert banks.wavefronts(lanes(lambda l: 4 * (32 + pad) * l))["ways"] == ways


def test_broadcast_is_free():
    assert banks.wavefronts([0] * 32)["wavefronts"] == 1
    # two words in the same bank, 16 lanes each: 2-way, not 32-way
    assert banks.wavefronts(lanes(lambda l: 128 * (l % 2)))["wavefronts"] == 2
    # two words in different banks: one wavefront
    assert banks.wavefronts(lanes(lambda l: 4 * (l % 2)))["wavefronts"] == 1


def test_inactive_lanes_do_not_count():
    addrs = [128 * l if l < 4 else None for l in range(32)]
    assert banks.wavefronts(addrs)["wavefronts"] == 4
    assert banks.wavefronts([None] * 32)["wavefronts"] == 0


def test_64bit_phases():
    row = banks.wavefronts(lanes(lambda l: 8 * l), width=8)
    assert row["phases"] == [1, 1] and row["wavefronts"] == 2 and row["conflicts"] == 0
    col = banks.wavefronts(lanes(lambda l: 128 * l), width=8)          # 16 distinct doublewords per half
    assert col["phases"] == [16, 16]
    pad2 = banks.wavefronts(lanes(lambda l: 4 * 34 * l), width=8)      # +2 floats: conflict-free
    assert pad2["wavefronts"] == 2


def test_128bit_phases():
    row = banks.wavefronts(lanes(lambda l: 16 * l), width=16)
    assert row["phases"] == [1, 1, 1, 1] and row["conflicts"] == 0     # 512 bytes: 4 wavefronts minimum
    col = banks.wavefronts(lanes(lambda l: 128 * l), width=16)
    assert col["phases"] == [8, 8, 8, 8] and col["wavefronts"] == 32
    pad4 = banks.wavefronts(lanes(lambda l: 4 * 36 * l), width=16)      # +4 floats keeps float4 alignment
    assert pad4["wavefronts"] == 4
    # +1 padding cannot even be read as float4: misaligned
    with pytest.raises(ValueError, match="multiple of width=16"):
        banks.wavefronts(lanes(lambda l: 4 * 33 * l), width=16)


def test_128bit_conflicts_only_within_a_quarter_warp():
    # lanes 0 and 8 hit the same banks (different words) but sit in different phases
    c = banks.wavefronts(lanes(lambda l: 16 * (l % 8) + 128 * (l // 8)), width=16)
    assert c["wavefronts"] == 4 and c["conflicts"] == 0


def test_128bit_packed_pairs():
    # lanes 0-15 one float4, lanes 16-31 another: pairs (n, n^1) agree -> two half-warp phases
    assert banks.wavefronts(lanes(lambda l: 32 * (l // 16)), width=16)["phases"] == [1, 1]
    assert banks.wavefronts([0] * 32, width=16)["wavefronts"] == 2
    # T_n == T_{n+16} is not a pair rule: four phases, 2-way each
    c = banks.wavefronts(lanes(lambda l: 32 * (l % 16)), width=16)
    assert c["phases"] == [2, 2, 2, 2] and c["conflicts"] == 4
    # stores never pack
    assert banks.wavefronts([0] * 32, width=16, load=False)["wavefronts"] == 4


def test_bad_request_raises():
    with pytest.raises(ValueError, match="len"):
        banks.wavefronts([0] * 31)
    with pytest.raises(ValueError, match="width"):
        banks.wavefronts([0] * 32, width=32)


# ------------------------------------------------------------------ layouts
def test_layout_banks_shapes_and_values():
    b = banks.layout_banks(32, 32)
    assert b.shape == (32, 32) and (b[:, 5] == 5).all()               # a column is one bank
    p = banks.layout_banks(32, 32, pad=1)
    assert sorted(p[:, 0]) == list(range(32))                          # padded column: all banks
    d = banks.layout_banks(8, 16, elem_bytes=8)
    assert d[0, 15] == 30 and d[1, 0] == 0                             # 16 doubles = 128 bytes per row


@pytest.mark.parametrize("cols", [16, 32])
def test_xor_swizzle_column_quarter_warps_hit_distinct_banks(cols):
    b = banks.layout_banks(64, cols, swizzle="xor")
    for c in range(0, cols, 4):
        for q in range(0, 64, 8):                                      # 8 lanes of a quarter-warp
            assert len(set(b[q:q + 8, c])) == 8
    for r in range(64):                                                # each row is a permutation
        assert sorted(b[r] % cols if cols < 32 else b[r]) == sorted(
            (np.arange(cols) + (r * cols) % 32) % 32 % (cols if cols < 32 else 32))


def test_layout_banks_rejects_bad_arguments():
    with pytest.raises(ValueError, match="rows"):
        banks.layout_banks(0, 32)
    with pytest.raises(ValueError, match="elem_bytes"):
        banks.layout_banks(4, 4, elem_bytes=3)
    with pytest.raises(ValueError, match="swizzle"):
        banks.layout_banks(4, 24, swizzle="xor")


# ------------------------------------------------------------------ chapter 0 anchor
def test_transpose_anchor_h200():
    """h200-anchors.json: a 32 x 32 float tile read by column gave 1,015,808
    conflicts for 32,768 shared-load instructions and 1,048,576 wavefronts;
    padded to 33 columns, 0. That is transpose_shared (TILE 32, BLOCK_ROWS 8)
    on a 1024 x 1024 matrix: 1024 blocks x 8 warps x 4 loads = 32,768."""
    p = {"TILE": 32, "BLOCK_ROWS": 8}
    r = banks.predict("transpose_shared", _full("transpose_shared", p), (1024, 1024))
    assert r[LD_INSTRUCTIONS] == 32768
    assert r[LD_WAVEFRONTS] == 1048576
    assert r[LD_CONFLICTS] == 1015808
    assert r[ST_CONFLICTS] == 0
    assert r[LD_CONFLICTS] == r[LD_WAVEFRONTS] - r[LD_INSTRUCTIONS]
    q = banks.predict("transpose_padded", _full("transpose_padded", p), (1024, 1024))
    assert q[LD_CONFLICTS] == 0 and q[LD_WAVEFRONTS] == 32768 and q[LD_INSTRUCTIONS] == 32768
    big = banks.predict("transpose_shared", _full("transpose_shared", p), (4096, 4096))          # 16x the tiles
    assert big[LD_INSTRUCTIONS] == 16 * 32768 and big[LD_CONFLICTS] == 16 * 1015808


def test_transpose_model_needs_whole_tiles():
    with pytest.raises(ValueError, match="ROWS=1000"):
        banks.predict("transpose_shared", _full("transpose_shared", {"TILE": 32, "BLOCK_ROWS": 8}), (1000, 1024))


def test_transpose_access_maps():
    col = banks.warp_access("transpose_shared", _full("transpose_shared", {"TILE": 32, "BLOCK_ROWS": 8}), "column")
    assert col["banks"] == [0] * 32 and col["cost"]["wavefronts"] == 32
    row = banks.warp_access("transpose_shared", _full("transpose_shared", {"TILE": 32, "BLOCK_ROWS": 8}), "row")
    assert row["banks"] == list(range(32)) and row["cost"]["wavefronts"] == 1
    pad = banks.warp_access("transpose_padded", _full("transpose_padded", {"TILE": 32, "BLOCK_ROWS": 8}), "column")
    assert pad["banks"] == list(range(32))


# ------------------------------------------------------------------ chapter 4 variants
def cost(key, access, **p):
    return banks.warp_access(key, _full(key, p), access)["cost"]


@pytest.mark.parametrize("bk,phases", [(32, [8, 8, 8, 8]), (16, [4, 4, 4, 4])])
def test_row_major_a_tile_column_read_conflicts(bk, phases):
    c = cost("tile1d_conflict", "column", BK=bk)
    assert c["phases"] == phases


def test_a_read_width_follows_the_padding():
    q = dict(catalog.get("tile1d_padded").defaults, LAYOUT=0)
    assert [banks.a_read_width({**q, "PAD": p}) for p in (0, 1, 2, 4)] == [16, 4, 8, 16]
    assert banks.a_read_width({**q, "LAYOUT": 1, "PAD": 0}) == 16
    assert banks.a_read_width({**q, "LAYOUT": 2, "PAD": 0}) == 4


@pytest.mark.parametrize("pad", [1, 2, 4])
@pytest.mark.parametrize("bk", [16, 32])
def test_padding_fixes_the_column_read(pad, bk):
    assert cost("tile1d_padded", "A_read", BK=bk, PAD=pad)["conflicts"] == 0


def test_plus_one_padding_is_not_enough_for_bk16():
    """BK = 16: a warp stores two rows of the A tile per instruction; any
    padding shifts the second row onto the first row's banks (2-way), and
    PAD = 1 also turns each float4 read into four scalar loads. The XOR
    swizzle keeps both sides conflict-free and the reads 128-bit."""
    for pad in (1, 2, 4):
        assert cost("tile1d_padded", "A_store", BK=16, PAD=pad)["ways"] == 2
    assert cost("tile1d_swizzle", "A_store", BK=16)["ways"] == 1
    assert cost("tile1d_swizzle", "A_read", BK=16)["conflicts"] == 0
    r1 = banks.predict("tile1d_padded", _full("tile1d_padded", {"BK": 16, "PAD": 1}), (512, 512, 512))
    rs = banks.predict("tile1d_swizzle", _full("tile1d_swizzle", {"BK": 16}), (512, 512, 512))
    assert r1[ST_CONFLICTS] > 0 and rs[ST_CONFLICTS] == 0
    assert r1[LD_INSTRUCTIONS] > rs[LD_INSTRUCTIONS]


@pytest.mark.parametrize("bk,pad,ways", [(32, 0, 32), (16, 0, 16), (32, 1, 1), (16, 1, 2), (16, 2, 1), (32, 4, 4)])
def test_transposed_a_tile_moves_the_conflict_to_the_store(bk, pad, ways):
    assert cost("tile1d_transposed", "A_read", BK=bk, PAD=pad)["wavefronts"] == 1
    assert cost("tile1d_transposed", "A_store", BK=bk, PAD=pad)["ways"] == ways


def test_b_reads_are_packed_half_warp_broadcasts():
    c = cost("tile1d_swizzle", "B_read")
    assert c["phases"] == [1, 1] and c["conflicts"] == 0


def test_predict_totals_are_per_tile_counts_times_tiles():
    key, p = "tile1d_conflict", {"BK": 32}
    one = banks.predict(key, _full(key, p), (64, 64, 32))                          # one block, one k tile
    assert one[LD_INSTRUCTIONS] == 16 * (8 + 64)                       # 16 warps x (A + B reads)
    assert one[LD_WAVEFRONTS] == 16 * (8 * 32 + 64 * 2)
    many = banks.predict(key, _full(key, p), (200, 130, 70))                       # 4 x 3 blocks, 3 k tiles
    assert many[LD_INSTRUCTIONS] == one[LD_INSTRUCTIONS] * 4 * 3 * 3


def test_model_needs_a_known_kernel():
    with pytest.raises(KeyError, match="no bank model"):
        banks.predict("naive_yfirst", _full("naive_yfirst", {}), (64, 64, 64))
    with pytest.raises(ValueError, match="model="):
        banks.name_model("naive_yfirst", "diagonal")


def test_the_chapters_name_their_kernels_to_the_bank_models():
    """The models name no kernel; chapters 0 and 4 say which of theirs follows which model."""
    assert banks.kernels_of("tile1d") == ("tile1d_conflict", "tile1d_padded", "tile1d_swizzle", "tile1d_transposed")
    assert banks.kernels_of("transpose") == ("transpose_shared", "transpose_padded")
    p = {"TILE": 32, "BLOCK_ROWS": 8}
    assert banks.predict("transpose", p, (1024, 1024)) == banks.predict("transpose_shared", p, (1024, 1024))
    with pytest.raises(ValueError, match="access="):
        banks.warp_access("tile1d_conflict", _full("tile1d_conflict", {}), "diagonal")


def test_probe_predictions():
    assert banks.predict_probe("ld32_column32")[LD_WAVEFRONTS] == 32
    assert banks.predict_probe("ld128_row", reps=10)[LD_WAVEFRONTS] == 40
    assert banks.predict_probe("ld128_uniform")[LD_WAVEFRONTS] == 2
    for name, pr in banks.PROBES.items():
        assert len(pr["offsets"]) == 32 and all(o % (pr["PROBE_BYTES"] // 4) == 0 for o in pr["offsets"])
        assert max(pr["offsets"]) + pr["PROBE_BYTES"] // 4 <= 2048, name


# ------------------------------------------------------------------ chapter-4 catalog rules
@pytest.mark.parametrize("key", banks.kernels_of("tile1d"))
def test_tile1d_rules_name_the_parameter(key):
    spec = catalog.get(key)
    # values outside the slider's choices
    for bad, name in [({"TN": 6}, "TN"), ({"BM": 40}, "BM"), ({"BN": 48}, "BN"), ({"BK": 8}, "BK")]:
        with pytest.raises(ValueError) as e:
            spec.validate({**spec.params(), **bad}, (64, 64, 64))
        assert str(e.value).startswith(name + "="), str(e.value)
    # legal choices, illegal together
    with pytest.raises(ValueError, match=r"^threads per block=2048"):
        spec.validate({**spec.params(), "BM": 128, "BN": 128}, (64, 64, 64))      # 128*128/8
    with pytest.raises(ValueError, match=r"^BM\*BK=512: must be a multiple of the 1024 threads"):
        spec.validate({**spec.params(), "BM": 32, "BN": 128, "TN": 4, "BK": 16}, (64, 64, 64))
    with pytest.raises(ValueError, match=r"^BK\*BN=512: must be a multiple of the 1024 threads"):
        spec.validate({**spec.params(), "BM": 128, "BN": 32, "TN": 4, "BK": 16}, (64, 64, 64))
    spec.validate({**spec.params(), "BM": 32, "BN": 128, "TN": 16}, (7, 9, 5))


def test_tile1d_rule_functions_directly():
    """Rules that the slider choices cannot reach still say what is wrong."""
    rules = ch4._tile1d_rules
    base = {"BM": 64, "BN": 64, "BK": 32, "TN": 8}
    for bad, name in [({"BM": 40}, "BM"), ({"TN": 6}, "TN"), ({"BN": 72}, "BN")]:
        failed = [r for r in rules({**base, **bad}, (1, 1, 1)) if not r[0]]
        assert failed and failed[0][1] == name, failed


def test_tile1d_every_shipped_config_is_valid_and_modelled():
    for key in banks.kernels_of("tile1d"):
        spec = catalog.get(key)
        for p in spec.configs():
            spec.validate(p, (1023, 1025, 999))
            r = banks.predict(key, _full(key, p), (512, 512, 512))
            assert r[LD_WAVEFRONTS] >= r[LD_INSTRUCTIONS] > 0


# ------------------------------------------------------------------ SASS cross-check
SASS_CASES = [("tile1d_conflict", {"BK": 32}), ("tile1d_conflict", {"BK": 16}),
              ("tile1d_padded", {"PAD": 1, "BK": 16}), ("tile1d_padded", {"PAD": 2}),
              ("tile1d_padded", {"PAD": 4}), ("tile1d_swizzle", {}), ("tile1d_swizzle", {"TN": 16, "BK": 16}),
              ("tile1d_transposed", {"PAD": 1}), ("transpose_shared", {"TILE": 32, "BLOCK_ROWS": 8}),
              ("transpose_padded", {"TILE": 32, "BLOCK_ROWS": 8})]


@pytest.mark.skipif(kc.tool_path("nvdisasm") is None or kc.nvcc_path() is None,
                    reason="needs nvcc and nvdisasm (pip install nvidia-cuda-nvdisasm, in requirements.txt)")
@pytest.mark.parametrize("key,p", SASS_CASES)
def test_model_counts_the_instructions_the_compiler_emits(key, p):
    """The model's shared-memory instructions per warp and tile, by width
    (LDS, LDS.64, LDS.128, STS), equal those in the compiled SASS: the k loop
    body appears once in the binary and nothing else touches shared memory."""
    spec = catalog.get(key)
    q = spec.params(**p)
    got = kc.sass_shared_ops(spec.file, spec.entry, spec.defines(q), "sm_90")
    want = banks.static_shared_ops(key, _full(key, q))
    assert got == want, (got, want)
