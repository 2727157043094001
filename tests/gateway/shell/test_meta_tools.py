"""What a client sends find_tools and request_capability, read as models write it."""

from __future__ import annotations

import pytest

from toolroute.gateway.shell.meta_tools import check_find_args, coerce_k


@pytest.mark.parametrize(
    ("k", "coerced"),
    [(None, 5), ("3", 3), (3.0, 3), (" 7 ", 7), (0, 1), (-1, 1), (51, 50), ("80", 50)],
)
def test_k_as_models_send_it_is_read_as_an_integer_within_the_range(
    k: object, coerced: int
) -> None:
    assert coerce_k(k, 5, 50) == (coerced, None)
    assert check_find_args({"query": "x", "k": k}) is None


@pytest.mark.parametrize("k", [2.5, True, "three", [3], {"k": 3}, float("nan")])
def test_k_that_is_no_whole_number_is_refused_with_the_range(k: object) -> None:
    value, problem = coerce_k(k, 5, 50)
    assert problem is not None and problem.startswith("`k` must be an integer from 1 to 50")
    assert check_find_args({"query": "x", "k": k}) == problem
