"""Benchmarks and soak tests; run their scripts as modules from the repository root (python -m bench.soak.soak)."""
