"""Benchmarks (`trace bench …`): medians and ratios against a peer measured
in the same run. Never timed assertions in tests."""
