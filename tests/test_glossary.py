"""The glossary (book/glossary.md) and the Nsight Compute primer (book/ncu_primer.md), without
building the book: every term is defined once and the terms the chapters rely on are there; the
primer names the four sections the book collects (helpers.runtime.ncu.PANEL_SECTIONS), every stall
reason helpers.models.diagnosis treats specially, and the decision table's thresholds at their
current values; every {term} reference resolves; neither page quotes a measured-looking number
(a number followed by TFLOP/s, GB/s, x, %, MHz, µs, ...: the book's measurements live in the
chapters, next to their provenance); both pages sit where _toc.yml should put them."""
import re
from pathlib import Path

import pytest
import yaml

from helpers.models import diagnosis
from helpers.runtime.ncu import PANEL_SECTIONS

REPO = Path(__file__).resolve().parents[1]
GLOSSARY = REPO / "book" / "glossary.md"
PRIMER = REPO / "book" / "ncu_primer.md"

# Terms a reader meets in the chapters before (or without) their explanation. Each must be a
# term line of the glossary, so that {term}`...` can point at it.
REQUIRED = [
    "FLOP", "FFMA", "HMMA", "SASS", "PTX", "NVRTC", "warp", "warpgroup", "block", "CTA", "cluster",
    "SM", "occupancy", "coalescing", "sector", "request", "wavefront", "bank", "bank conflict",
    "shared memory", "L1/TEX", "L2", "DRAM", "HBM", "arithmetic intensity", "roofline",
    "ridge point", "LDS", "LDS.128", "STS", "LDG", "LDGSTS", "LSU pipe", "FMA pipe", "Tensor pipe",
    "long scoreboard", "short scoreboard", "MIO throttle", "LG throttle", "barrier stall",
    "wait stall", "math pipe throttle", "dispatch stall", "issue slot", "register tile",
    "thread tile", "TM, TN", "warp tile", "WM, WN", "block tile", "BM, BN, BK", "stages",
    "multistage pipeline", "double buffering", "cp.async", "ldmatrix", "mma.sync", "fragment",
    "WMMA", "swizzle", "padding", "TMA", "tensor map", "mbarrier", "wgmma", "warp specialization",
    "persistent kernel", "split-K", "stream-K", "GROUP_M", "block swizzle", "rasterization",
    "tile quantization", "wave quantization", "cuBLAS", "float64 reference", "NaN poisoning",
    "alternating rounds",
]

# A number followed by a unit of speed, bandwidth, clock or time, a percentage, or a ratio
# ("1.3x", "2.5×", "4.4 times", "0.95 of cuBLAS"). "64 x 64" is a shape, not a ratio.
MEASURED = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?)\s?"
    r"([TGMK]?FLOP/s|[TGMK]i?B/s|[MG]Hz\b|µs\b|us\b|ms\b|%|[x×](?!\s*\d)(?!\w)|times\b|of cuBLAS\b)")
# The percentages the primer must quote: the decision table's thresholds (helpers.models.diagnosis).
THRESHOLDS = {"BUSY": diagnosis.BUSY, "CEILING": diagnosis.CEILING,
              "CONFLICT_SHARE": 100 * diagnosis.CONFLICT_SHARE, "SECTOR_USE": diagnosis.SECTOR_USE,
              "STALL_TIE": 100 * diagnosis.STALL_TIE}
ALLOWED_PERCENT = {round(v, 6) for v in THRESHOLDS.values()}


def glossary_entries(text: str) -> list[tuple[list[str], str]]:
    """[(term lines, definition text)] of the ```{glossary} block of a MyST page, in order.

    Term lines are the unindented lines of the block (options such as ``:sorted:`` excepted),
    a definition is the indented text after them. ValueError when the page has no glossary."""
    m = re.search(r"^```\{glossary\}[^\n]*\n(.*?)^```\s*$", text, re.M | re.S)
    if m is None:
        raise ValueError("no ```{glossary} block in the page")
    entries: list[tuple[list[str], list[str]]] = []
    for line in m.group(1).splitlines():
        if not line.strip():
            continue
        if line[0].isspace():
            if not entries:
                raise ValueError(f"definition text before any term: {line!r}")
            entries[-1][1].append(line.strip())
        elif line.startswith(":") and not entries:
            continue                                        # a directive option
        elif entries and not entries[-1][1]:
            entries[-1][0].append(line.strip())             # another term of the same entry
        else:
            entries.append(([line.strip()], []))
    return [(terms, " ".join(d)) for terms, d in entries]


def measured_numbers(text: str) -> list[str]:
    """The measured-looking numbers of ``text``: each match of :data:`MEASURED`, except the
    decision table's threshold percentages (:data:`ALLOWED_PERCENT`)."""
    out = []
    for m in MEASURED.finditer(text):
        if m.group(2) == "%" and round(float(m.group(1)), 6) in ALLOWED_PERCENT:
            continue
        out.append(m.group(0))
    return out


def term_refs(text: str) -> list[str]:
    """The targets of every {term}`...` role of a MyST page (``text <target>`` or ``target``)."""
    return [m.group(2) or m.group(1) for m in re.finditer(r"\{term\}`([^`<]+?)(?:\s*<([^>`]+)>)?`", text)]


@pytest.fixture(scope="module")
def glossary():
    return GLOSSARY.read_text()


@pytest.fixture(scope="module")
def primer():
    return PRIMER.read_text()


@pytest.fixture(scope="module")
def terms(glossary):
    return [t for ts, _ in glossary_entries(glossary) for t in ts]


def test_every_term_is_defined_once(glossary, terms):
    seen: dict[str, str] = {}
    for t in terms:
        assert t.lower() not in seen, f"glossary term {t!r} is defined twice (also as {seen[t.lower()]!r})"
        seen[t.lower()] = t
    for ts, definition in glossary_entries(glossary):
        assert definition, f"glossary terms {ts} have no definition"


def test_glossary_defines_the_terms_the_chapters_use(terms):
    have = {t.lower() for t in terms}
    missing = [t for t in REQUIRED if t.lower() not in have]
    assert not missing, f"the glossary does not define: {missing}"


def test_glossary_is_sorted_and_definitions_are_short(glossary):
    assert re.search(r"^```\{glossary\}\n:sorted:", glossary, re.M), "the glossary should be :sorted:"
    for ts, definition in glossary_entries(glossary):
        words = len(definition.split())
        assert 20 <= words <= 90, f"{ts[0]!r}: {words} words; a definition is two or three sentences"


@pytest.mark.parametrize("page", [GLOSSARY, PRIMER], ids=lambda p: p.name)
def test_term_references_resolve(page, terms):
    have = {t.lower() for t in terms}
    refs = term_refs(page.read_text())
    assert refs, f"{page.name} links no glossary term"
    unknown = sorted({r for r in refs if r.lower() not in have})
    assert not unknown, f"{page.name}: {{term}} references to undefined terms: {unknown}"


@pytest.mark.parametrize("page", [GLOSSARY, PRIMER], ids=lambda p: p.name)
def test_chapter_links_point_at_pages(page):
    for target in re.findall(r"\]\(([^)#]+?\.(?:ipynb|md))(?:#[^)]*)?\)", page.read_text()):
        assert (page.parent / target).is_file(), f"{page.name} links {target}, which does not exist"


def test_primer_names_the_four_sections_and_the_command(primer):
    assert tuple(PANEL_SECTIONS) == ("SpeedOfLight", "MemoryWorkloadAnalysis", "Occupancy", "WarpStateStats")
    command = re.search(r"```text\n(ncu .*?)```", primer, re.S)
    assert command, "the primer shows no ncu command line"
    for sec in PANEL_SECTIONS:
        assert f"--section {sec}" in command.group(1), f"the command does not collect {sec}"
        assert len(re.findall(rf"\b{sec}\b", primer)) >= 2, f"the primer does not discuss {sec}"
    assert "--clock-control none" in command.group(1)
    # The order the page teaches: Speed of Light, memory, warp states, occupancy last.
    heads = re.findall(r"^### \d\. (.+)$", primer, re.M)
    assert [h.split(":")[0].split(",")[0] for h in heads] == ["Speed of Light", "Memory", "Warp states",
                                                               "Occupancy"], heads


def test_primer_names_every_stall_the_diagnosis_treats_specially(primer):
    special = sorted(diagnosis.DATA_WAIT | {"wait", "math_pipe_throttle"})
    missing = [s for s in special if f"`{s}`" not in primer and f"{{term}}`{s} <" not in primer]
    assert not missing, f"the primer does not name these stall reasons: {missing}"
    # The metric family it quotes is the one helpers.models.diagnosis reads.
    family = re.search(r"`(smsp__average_warps_issue_stalled_<reason>_per_issue_active\.ratio)`", primer)
    assert family, "the primer does not quote the stall metrics"
    example = family.group(1).replace("<reason>", "long_scoreboard")
    assert diagnosis.stalls({example: 1.0}) == {"long_scoreboard": 1.0}


def test_primer_quotes_the_thresholds_at_their_values(primer):
    for name, value in THRESHOLDS.items():
        bullet = re.search(rf"^\* `{name}`:(.*?)(?=^\* |^\n|\Z)", primer, re.M | re.S)
        assert bullet, f"the primer does not explain {name}"
        assert f"{value:g} %" in bullet.group(1), f"{name}: the primer should say {value:g} %"
    assert "`DATA_WAIT`" in primer


@pytest.mark.parametrize("metric", [
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "lts__t_sector_hit_rate.pct",
    "dram__bytes_read.sum",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
])
def test_primer_names_the_metrics_the_book_quotes(primer, metric):
    assert f"`{metric}`" in primer


@pytest.mark.parametrize("page", [GLOSSARY, PRIMER], ids=lambda p: p.name)
def test_no_measured_numbers(page):
    found = measured_numbers(page.read_text())
    assert not found, f"{page.name} quotes measured-looking numbers {found}; measurements belong in " \
                      "the chapters, beside their provenance"


@pytest.mark.parametrize("planted", [
    "runs at 47.2 TFLOP/s", "copies at 4240 GB/s", "is 1.3x faster", "a 2.5× speed-up",
    "keeps the pipe 92 % busy", "at 1980 MHz", "takes 57 µs", "0.35 ms per call",
    "4.4 times the instructions", "reaches 0.95 of cuBLAS",
])
def test_a_planted_number_is_caught(planted):
    clean = ("32 banks of 4 bytes, 32-byte sectors, 4 warps per warpgroup, a 64 x 64 warp tile, "
             "$16 \\times 8 \\times 16$, LDS.128, busy at 60 % of peak, 0x1F.")
    assert measured_numbers(clean) == []
    assert measured_numbers(clean + " It " + planted + ".") != [], planted


def test_toc_places_both_pages():
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    parts = {p["caption"]: [c["file"] for c in p["chapters"]] for p in toc["parts"]}
    heavens, appendix = parts["The heavens"], parts["Appendix"]
    assert heavens.index("book/ncu_primer") == heavens.index("book/00_measuring") + 1, \
        "the primer belongs right after chapter 0, before the first chapter that quotes counters"
    assert appendix.index("book/glossary") == appendix.index("book/11_pitfalls") + 1
