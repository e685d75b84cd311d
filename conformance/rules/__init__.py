"""The rules: platform ``profiles``, the one ``judge`` (the tolerance policy: every element against
everything acceptable, the element rules R01 to R06), the requirement ``catalog`` (every requirement
and its check), and the ``openbehaviour`` policy (the other acceptable answers where the manual is
silent).
"""
