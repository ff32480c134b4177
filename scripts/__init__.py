"""Maintenance scripts (scripts/build_specs.py imports its per-family device modules from here)."""
