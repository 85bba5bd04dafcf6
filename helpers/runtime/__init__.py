"""The runtime: compile, check, launch, verify, time and record kernels. No chapter knowledge, no Plotly."""
