"""Which tier this pytest session runs (tests/conftest.py explains the two tiers)."""
from __future__ import annotations

import os

FULL_VAR = "GEMM_BOOK_FULL"


def full(config) -> bool:
    """True when the session runs the full tier: ``pytest --full``, or ``GEMM_BOOK_FULL=1``."""
    return bool(config.getoption("--full", default=False)) or os.environ.get(FULL_VAR) == "1"
