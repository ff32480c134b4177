"""Shared helpers every layer may use: one-line errors, numbers for people, spreadsheet-safe tables, the hash of a
frozen model kept per object (`frozen_hash.py`) and truth tests of small arrays (`arrays.py`).

Layers and import rules: docs/architecture.md."""
