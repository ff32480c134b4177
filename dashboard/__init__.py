"""Streamlit dashboard for llm-roofline (pages are thin; figures are pure functions)."""
