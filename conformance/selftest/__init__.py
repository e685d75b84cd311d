"""The self-test (``sl1conf selftest``, docs/selftest.md): the suite's zoo of small defective and
honest-but-unusual C libraries (``zoo/``, the table ``zoo/zoo.toml``; ``zoo``), built with the
user's compiler and certified through the user's path, and the kill matrix that says whether the
whole pipeline (compiler, harness, simulator or board script, suite) still catches every defect
and passes every honest library (``engine``; its words in ``matrix``).

It sits above the engines: it drives certify as the command line does, through certify's public
names only.
"""
