"""One module per chapter (kernels/NN_name.cu, helpers/chapters/chNN_name.py and
book/NN_name.ipynb form one column): its kernels' catalog entries and the thin
functions its notebook calls. Importing this package registers every entry."""
from . import ch08_profiling  # noqa: F401  (chapter 8 has no kernels of its own; it reads every chapter's)
from . import (ch00_measuring, ch01_naive, ch02_vectorized, ch03_smem_tiling,  # noqa: F401
               ch04_bank_conflicts, ch05_register_tiling, ch06_wmma, ch07_mma_sync, ch09_any_shape, ch10_hopper,
               ch11_pitfalls, ch12_fp8, common)
