"""Pure Python/NumPy models of what the kernels do. Import neither the runtime nor Plotly."""
