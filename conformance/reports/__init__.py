"""Reports from ``report.json``: what a reader needs (``view``), Markdown, self-contained HTML with
plots, JUnit, writing all of them (``write``), and the regression gate and comparison (``gate``).
"""
