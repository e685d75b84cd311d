"""Certification: the engine that runs an implementation on a vector set and asks the catalog for
every requirement's verdict (``engine``), waivers of known failures (``waivers``), and the error
statistics of a run (``errorstats``).
"""
