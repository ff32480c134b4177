"""Layer 1, devices: `Hardware` (device.py), numeric formats (dtypes.py), roofline ceilings, what-if edits,
and the specs workbook (specs/: open with bounded work, read and validate cells, plausibility, write).

Layers and import rules: docs/architecture.md."""
