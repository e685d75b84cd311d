"""Command line, requirements and verdicts: what the suite does with the reference."""
