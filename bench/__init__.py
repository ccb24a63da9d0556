"""Benchmarks: `python -m bench.workflows`, `python -m bench.web`."""
