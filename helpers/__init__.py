"""Helpers of the Nine Heavens of GEMM book, in four layers (imports point only downward,
checked by import-linter: see pyproject.toml and docs/architecture.md).

chapters/  one module per chapter: its catalog entries and the calls its notebook makes
    common               banner, running table, live slider, roofline cell, shared rule helpers
    verdicts             one rule for naming a measured change (within the noise, a gain, a loss) in glued prose
    intro                the landing page's glued ratios, read from the records (it has no chapter module)
    heaven_steps         the landing page's table of heavens: what limited each before its step, and the step
    ch00_measuring       transpose warm-up (copy, naive, shared, padded)
    ch01_naive           naive GEMM, x-first vs y-first
    ch02_vectorized      float4 loads, K-major B
    ch03_smem_tiling     shared-memory tiles
    ch04_bank_conflicts  padding, swizzle, transposed tiles; Nsight Compute bank counters
    ch05_register_tiling register tiles, warp tiles, double buffering, cp.async
    register_tiling_prose chapter 5's glued numbers, read from the records (ch05_register_tiling is near 500 lines)
    ch06_wmma            WMMA; the layout and fp16-accumulator pitfalls (the kernels run here)
    ch07_mma_sync        mma.sync, ldmatrix, swizzle, multistage pipeline; the PROBE ladder (measured here)
    prose_ch07           chapter 7's prose values: every number its Markdown quotes, read from the records
    ch08_profiling       Nsight Compute panels of every heaven, the decision table, the measured roofline
    prose_ch08           chapter 8's prose values: every number its Markdown quotes, read from the records
    cublas_fp32          chapter 8: the best FP32 kernel beside cuBLAS's under one profiler (recorded)
    ch09_any_shape       any M, N, K (predication, padding), split-K, stream-K: catalog entries, measurements
    dispatcher_demo      chapter 9's live call of helpers.gemm on an odd shape (ch09_any_shape is full)
    prose_ch09           chapter 9's prose values: every number its Markdown quotes, read from the records
    end_to_end           chapter 9's end-to-end zoo: gemm() as a reader calls it against cuBLAS, kernel-only beside it
    ch10_hopper          Hopper: TMA, wgmma, the mbarrier ring (sm_90a); names its last rung to chapter 9's runner
    hopper_dispatch      chapter 10's last section: its kernel as strategies of chapter 9's dispatcher
    ch11_pitfalls        appendix: broken kernels beside their fixes, each with the check that catches it
    ch12_fp8             FP8 (e4m3) on Hopper: per-tensor and block-scaled entries, promotion, the accumulator probe
    exercises            the exercises closing chapters 1-7 and 10: the reader's kernel checked, hinted, timed
colab      helpers.setup(), the first cell of every notebook: nothing outside Colab; on Colab the
           clone, CuPy of the right CUDA, plotly/ipywidgets floors, the widget manager
figures/   every Plotly figure and every display
    style                the shared look (colours, scales, compact arrays)
    show                 display figures, kernel sources, tables, notes (live and in the book)
    records              measurement records as tables and bars
    exercise             an exercise check's verdict, details and compiler message in a note box
    profiling            chapter 8: panel tables, speed-of-light and stall bars, the measured-traffic roofline
    tuning               chapter 8's autotuner: every timed configuration, model vs measured rank, winner vs default panels
    diagrams             chapters 5 and 7: the tile hierarchy (block -> warp -> thread or mma tiles), the GROUP_M block order
    schedules            the cp.async stage ring as a timeline (chapters 5, 7; chapter 10's look), split-K / stream-K work
    roofline sweep mapping tiles banks fragments precision probes anyshape hopper staircase   the figures of each topic
    fp8                  FP8 formats and scaling (models), error against K, the accumulator probe, speed bars
models/    pure Python/NumPy models of what the kernels do (no runtime, no Plotly)
    raster               cdiv and the one block rasterisation; the operand panels a wave of blocks shares
    names                which model variant each kernel follows, as its chapter says (no catalog key here)
    words                how a count is written in a sentence ("1 tile", "2 tiles"), for every layer
    occupancy            theoretical occupancy (Occupancy Calculator model)
    mapping              index schemes of heavens 1-2 (x-first, y-first, float4, k-major)
    tiles                owners, staging, reuse, lane layout of heavens 3-5
    banks                shared-memory banks and wavefronts; the tile1d and transpose bank models
    fragments            mma.m16n8k16 fragments, ldmatrix, the XOR swizzle
    mma_sync             geometry of 07_mma_sync.cu, ncu predictions, Tensor Core owner models
    hierarchy            block, warp and thread / m16n8k16 tiles of the warp-tiled kernels, as rectangles
    pipeline             NumPy replay of the Tensor Core kernels' data flow and pipeline hazards; the stage schedule
    precision            unit roundoff, the fp16 running sum
    anyshape             waves, split-K and stream-K models and who computes which (tile, k-tile), the dispatcher's rules
    hopper               TMA swizzle, wgmma descriptors, accumulator layout, mbarrier ring of chapter 10
    fp8                  e4m3 / e5m2 formats, per-tensor and block quantization, encode/decode tables
    diagnosis            Nsight Compute panel -> bottleneck -> next step (the book's decision table)
    tuning               the autotuner's space and cost model (waves x reuse x latency hiding), Spearman
    exercise             a reader's wrong kernel in owner-map terms, the hint (race, tile edge, thread order, ...)
runtime/   compile, check, launch, verify, time, record (no chapter knowledge: no catalog key, no Plotly)
    gpu                  is there a GPU (live mode) or not (recorded mode); its spec sheet
    compile              build kernels/*.cu with NVRTC (cached), or check them with nvcc; SASS counts
    checks               preconditions: ValueError naming the parameter, its value and the rule
    catalog              the Kernel class, the registry and get()
    launch               validate, compile, launch; resources, owner check, clusters that fit
    verify               random inputs, NaN-poisoned outputs, float64 reference, tolerances (CuPy or NumPy)
    timing               CUDA-event timing, FLOP and byte counts, same-run references
    bench                measure(): THE measurement (inputs, poison, check, same-run timing, Record);
                         a list of kernels live, or read results/<gpu>.json
    results              the results file, its provenance, the Nsight Compute artifacts
    exercise             a reader's kernel compiled, run, checked and timed in a child process with a time limit
    roofline             measured ceilings, arithmetic intensity
    sweep                measure a kernel over its recorded sweep
    ncu                  one Nsight Compute invocation and CSV parser for the ncu scripts
    precision            tolerances against unit roundoff, TF32 vs FP32 cuBLAS
    power                SM clock and board power sampled with nvidia-smi during a timing
    anyshape             the any-shape runner (plans -> launches of 09_any_shape.cu) and the dispatcher gemm();
                         its Hopper kernel is named by the chapter that owns it (use_hopper)
    anyshape_inputs      the checks of a gemm() call (shapes, dtypes, contiguity), cheap on the good path
    packed               launches whose arguments are packed once (cuLaunchKernel through cuda-bindings)
    tma                  TMA tensor-map descriptors (cuda.bindings, ctypes fallback) for chapter 10
    fp8                  FP8 GEMM data: quantized inputs, byte tensor maps, the cuBLASLt FP8 reference (torch, optional)
    panels               chapter 8's Nsight Compute panel of one launch: profiled live, or recorded
    tune                 the autotuner: prune by the catalog's rules, rank (nvcc registers), compile, time
    isolated             a kernel in a child process with a time limit, plain or under compute-sanitizer
    defaults             a kernel's defaults on the GPU the book decides for: the tuner's same-run winner
                         (results/<gpu>-tuning.json), or its fastest timed configuration that fits
"""
from . import chapters  # noqa: F401  (registers every chapter's kernels in runtime.catalog)
from .colab import setup  # noqa: F401  (helpers.setup(): the first cell of every notebook)
from .runtime.anyshape import gemm  # noqa: F401  (C = A @ B for any shape: chapter 9's dispatcher)
