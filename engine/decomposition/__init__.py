"""Layer 3, model + scenario -> kernel table: forward-pass records (passes.py), the passes of each phase
(phases.py, shared with auto/), the transformer (transformer.py) adding its kernels through one PassKernels
record (pass_kernels.py), the attention rows (attention.py), pass templates (pass_template.py), MLA, MoE, the chunked-prefill schedule (chunked.py),
the seed notebook's decomposition (seed.py), and the automatic decomposition of any Hugging Face architecture
(auto/).

Layers and import rules: docs/architecture.md."""
