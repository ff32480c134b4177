"""Workload presets: typical request lengths of four serving workloads (issue 16), beside custom lengths.

WORKLOADS maps a preset's name to (input_length, output_length) in tokens; WORKLOAD_LABELS says what each is.
"""

from __future__ import annotations

WORKLOADS: dict[str, tuple[int, int]] = {
    "chat": (1024, 256),
    "rag": (8192, 256),
    "code": (2048, 1024),
    "reasoning": (1024, 8192),
}

WORKLOAD_LABELS: dict[str, str] = {
    "chat": "Chat: 1k prompt, 256 generated",
    "rag": "RAG (retrieval-augmented): 8k prompt, 256 generated",
    "code": "Code: 2k prompt, 1k generated",
    "reasoning": "Reasoning: 1k prompt, 8k generated",
}


def workload_lengths(name: str) -> tuple[int, int]:
    """(input_length, output_length) of the preset `name`; ValueError naming the presets otherwise."""
    try:
        return WORKLOADS[name]
    except KeyError:
        raise ValueError(f"workload {name!r}: expected one of {', '.join(WORKLOADS)}") from None
