"""Which model a kernel follows, as its chapter says: the link from catalog keys to models.

The models name no kernel of the catalog (tests/test_boundaries.py): a model module
defines its variants (the index schemes of :mod:`helpers.models.mapping`, the bank models
of :mod:`helpers.models.banks`), and the chapter that registers a kernel says which
variant it follows. Its functions then take either the kernel's name or the variant's.
"""
from __future__ import annotations


class KernelNames:
    """Kernel name -> one of ``variants`` (a tuple of names), filled by the chapters.

    ``what`` names a variant in messages ("scheme", "model"); ``missing`` ends the
    KeyError for a name that is neither a named kernel nor a variant ("no bank model")."""

    def __init__(self, what: str, variants: tuple, missing: str):
        self.what, self.variants, self.missing = what, tuple(variants), missing
        self.kernels: dict = {}

    def name(self, kernel: str, variant: str) -> None:
        """Say that ``kernel`` follows ``variant``. ValueError naming the variant when it is not one of them."""
        if variant not in self.variants:
            raise ValueError(f"{self.what}={variant!r}: must be one of {self.variants}")
        self.kernels[kernel] = variant

    def of(self, name: str) -> str:
        """The variant of kernel ``name``, or ``name`` itself when it is a variant; KeyError otherwise."""
        v = self.kernels.get(name, name)
        if v not in self.variants:
            raise KeyError(f"kernel={name!r}: {self.missing} (have {tuple(self.kernels)} and the "
                           f"{self.what}s {self.variants})")
        return v

    def kernels_of(self, variant: str) -> tuple:
        """The kernels named to ``variant``, in the order they were named."""
        return tuple(k for k, v in self.kernels.items() if v == variant)
