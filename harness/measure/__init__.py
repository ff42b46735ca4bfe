"""Measuring the harness itself: the benchmark command and the CPU split by process."""
