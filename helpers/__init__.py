"""Helpers for the Nine Heavens of GEMM book, one module per concept.

gpu        is there a GPU (live mode) or not (recorded mode); its spec sheet
compile    build kernels/*.cu with CuPy/NVRTC (cached), or check them with nvcc
checks     preconditions: ValueError naming the parameter, its value and the rule
catalog    every kernel variant: file, entry, parameters, launch geometry, rules
launch     validate, compile, launch (nothing reaches the GPU before the checks)
verify     random inputs, NaN-poisoned outputs, float64 reference, tolerances
timing     CUDA-event timing, FLOP and byte counts, same-run references
bench      measure a list of kernels live, or read results/<gpu>.json
results    the recorded results file and its provenance
roofline   measured ceilings and the roofline figure
mapping    index maps of the one-output-per-thread kernels (heavens 1-2)
sweep      parameter sweeps: static Plotly slider and live ipywidgets
show       display figures, kernel sources and tables in notebooks and the book
"""
