"""The `llm-roofline` command line (main.py), its help texts, `serve` and `serving-search`.

Layers and import rules: docs/architecture.md."""
