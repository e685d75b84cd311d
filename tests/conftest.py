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


def require_optional(module: str, install: str):
    """The optional dependency ``module`` (torch, mindspore), imported; a skip naming how to
    install it when it is absent, but a failure under CI, which installs every extra it tests."""
    import importlib

    import pytest

    try:
        return importlib.import_module(module)
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail(f"{module} is not installed, but CI installs it ({install})")
        pytest.skip(f"{module} is not installed ({install})")
