"""Ground truth: exact number formats, the arbitrary-precision oracle, evaluation models."""
