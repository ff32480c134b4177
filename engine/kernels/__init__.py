"""Layer 2, the kernel table: its columns and builder (table.py), one kernel's FLOPs and bytes (fields.py),
causal attention windows, and the shape of collectives (collective_kinds.py).

Layers and import rules: docs/architecture.md."""
