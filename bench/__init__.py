"""Benchmarks: `make bench` (all, quick settings) or `python -m bench NAME [--full]`."""
