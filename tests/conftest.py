"""Shared test settings: hypothesis profiles.

``ci`` (chosen automatically when the CI variable is set, as .ci/run does) is
derandomized, so every CI run draws the same examples and a red run can be
reproduced; ``dev`` draws fresh examples each run. Choose one explicitly with
SL1CONF_HYPOTHESIS_PROFILE.
"""

import os

from hypothesis import HealthCheck, settings

_COMMON = dict(
    deadline=None,  # the exact oracle is slow by design; timing is not what we test
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("ci", derandomize=True, database=None, print_blob=True, **_COMMON)
settings.register_profile("dev", **_COMMON)
settings.load_profile(
    os.environ.get("SL1CONF_HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)
