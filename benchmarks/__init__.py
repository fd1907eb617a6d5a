"""Benchmarks: each module measures one property, prints a table and writes benchmarks/results/."""
