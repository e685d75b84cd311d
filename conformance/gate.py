"""Placeholder: filled in by the issue that owns it."""
