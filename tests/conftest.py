"""Shared skips for the whole suite.  Tests are laid out like the code: core/,
runtime/, adapters/, lab/, cli/, package/ (plus the C programs in c/ and the
fuzzer in fuzz/); shared constants and helpers are in support.py."""
import pytest

import support


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "two_cpus(reason=None): skip unless this process may run on two CPUs")


def pytest_runtest_setup(item):
    if item.get_closest_marker("long") is not None and \
            "long" not in (item.config.getoption("markexpr") or ""):
        pytest.skip("a statistical run of many minutes: pytest -m long")
    mark = item.get_closest_marker("two_cpus")
    if mark is not None and not support.TWO_CPUS:
        pytest.skip(mark.kwargs.get("reason") or "needs two allowed CPUs")
