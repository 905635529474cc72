"""Retrying tasks whose code raises (Ray's retry_exceptions, with max_retries), and
max_retries=-1 (without limit)."""
import os

import pytest

import orb


@orb.remote(retry_exceptions=True, max_retries=2)
def flaky(path, failures):
    """Raises on its first `failures` attempts (counted in a file), then returns them."""
    seen = int(open(path).read()) if os.path.exists(path) else 0
    if seen < failures:
        with open(path, "w") as f:
            f.write(str(seen + 1))
        raise ValueError("flaky attempt %d" % (seen + 1))
    return seen


def test_a_task_that_raises_is_retried_within_max_retries(cluster, scratch):
    assert orb.get(flaky.remote(os.path.join(scratch, "a"), 2), timeout=60) == 2
    with pytest.raises(ValueError, match="flaky attempt 3"):  # 1 + 2 retries; the last error stands
        orb.get(flaky.remote(os.path.join(scratch, "b"), 5), timeout=60)
    with pytest.raises(ValueError, match="flaky attempt 1"):  # as Ray's default: not retried
        orb.get(flaky.options(retry_exceptions=False).remote(os.path.join(scratch, "c"), 1), timeout=60)
    assert orb.get(flaky.options(max_retries=-1).remote(os.path.join(scratch, "d"), 4), timeout=60) == 4


def test_an_allowlist_retries_only_its_exceptions(cluster, scratch):
    only_value = flaky.options(retry_exceptions=[ValueError])
    assert orb.get(only_value.remote(os.path.join(scratch, "a"), 1), timeout=60) == 1
    only_key = flaky.options(retry_exceptions=[KeyError, TypeError])
    with pytest.raises(ValueError, match="flaky attempt 1"):
        orb.get(only_key.remote(os.path.join(scratch, "b"), 1), timeout=60)
    with pytest.raises(ValueError, match="retry_exceptions must be a bool or a list of exception classes"):
        flaky.options(retry_exceptions=[1])
    with pytest.raises(TypeError, match="'retry_exceptions'"):
        flaky.options(retry_exceptions="yes")


@orb.remote(max_retries=1)
def items_then_flaky(path):
    """Yields 0, then raises on its first attempt (counted in a file), then yields 1."""
    yield 0
    seen = int(open(path).read()) if os.path.exists(path) else 0
    if seen == 0:
        with open(path, "w") as f:
            f.write("1")
        raise KeyError("first attempt")
    yield 1


def test_a_dynamic_generator_is_retried_whole_when_its_error_is_retried(cluster, scratch):
    dynamic = items_then_flaky.options(num_returns="dynamic")
    first, error = orb.get(dynamic.remote(os.path.join(scratch, "a")))  # not retried: the error is its last item
    assert orb.get(first) == 0
    with pytest.raises(KeyError, match="first attempt"):
        orb.get(error)
    retried = dynamic.options(retry_exceptions=[KeyError]).remote(os.path.join(scratch, "b"))
    assert [orb.get(ref) for ref in orb.get(retried)] == [0, 1]
