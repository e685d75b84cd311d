"""ULP distances in classes: one table for a report's histograms, a sweep's histogram and the
words a failing requirement's commonest error is said in.

Why one: the same element must land in the same class wherever it is counted; a sweep saying
"5-8" and a report saying "5 to 64" of one library would be two answers. The classes follow the
budgets: 1 and 2 (fp16's budget), 3 (fp32's), 4, then 5 to 8, 9 to 64 and 65 or more, where an
error is no rounding at all. Distances are :func:`reference.formats.ulp_distance`'s (NaN as a
class; NaN against a number is ``formats.NAN_MISMATCH``, which no class holds).
"""

from __future__ import annotations

import numpy as np

from sl1conf.reference import formats

__all__ = ["LABELS", "WORDS", "BUCKETS", "distance_class", "bucket_of"]

_UPPER = np.array([1, 2, 3, 4, 8, 64])  # inclusive upper ends of the classes but the last
LABELS = ("1", "2", "3", "4", "5-8", "9-64", "65+")
"""The classes of a distance of one ULP or more, in order."""
WORDS = ("1 ULP from the correctly rounded result", "2 ULP from it", "3 ULP from it", "4 ULP from it",
         "5 to 8 ULP from it", "9 to 64 ULP from it", "65 ULP or more from it")
"""The same classes in words (a requirement's bulk: requirements.base.ERROR_KINDS)."""
BUCKETS = ("0", *LABELS, "nan")
"""A histogram's buckets: the same bits (or both NaN), each class, NaN against a number."""


def distance_class(dist: np.ndarray) -> np.ndarray:
    """Index into LABELS of each distance of one ULP or more."""
    return np.searchsorted(_UPPER, np.minimum(np.asarray(dist), 1 << 62), side="left")


def bucket_of(dist: np.ndarray) -> np.ndarray:
    """Index into BUCKETS of each distance (0 for 0, the last for a NaN against a number)."""
    dist = np.asarray(dist)
    return np.where(dist == formats.NAN_MISMATCH, len(BUCKETS) - 1,
                    np.where(dist == 0, 0, 1 + distance_class(np.maximum(dist, 1))))
