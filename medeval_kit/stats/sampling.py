"""Nested seeded draws: every item subset is a prefix of one seeded permutation.

A draw of 10 items is then the first 10 of the permutation that a draw of 40 items uses, so a small
trial run asks an LLM nothing that a larger run with the same seed has not already cached.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

from medeval_kit.errors import ParameterError

__all__ = ["nested_order", "nested_sample"]

T = TypeVar("T")


def nested_order(n: int, seed: int | Sequence[int]) -> np.ndarray:
    """Return the seeded permutation of ``0..n-1`` whose prefixes are the nested draws.

    ``numpy.random.default_rng(seed).permutation(n)``; ``seed`` may be a sequence of ints (e.g.
    ``(seed, stratum)``) for independent streams.

    Parameters
    ----------
    n : int
        Items.
    seed : int or sequence of int
        The random seed (a sequence gives an independent stream per entry pattern).

    Returns
    -------
    ndarray of int
        A permutation of ``0..n-1``.

    Examples
    --------
    >>> nested_order(5, 0).tolist()
    [2, 4, 3, 0, 1]
    """
    return np.random.default_rng(seed).permutation(int(n))


def nested_sample(ids: Sequence[T], n: int | None, seed: int | Sequence[int]) -> list[T]:
    """Return the first ``n`` of one seeded permutation of ``ids``, kept in their original order.

    ``n`` None (or at least ``len(ids)``) returns all of ``ids``. For a fixed seed the draw of a
    smaller ``n`` is a subset of the draw of a larger one.

    Parameters
    ----------
    ids : sequence
        The items.
    n : int, optional
        How many to draw; ``None`` draws all.
    seed : int or sequence of int
        The random seed.

    Returns
    -------
    list
        The drawn items in their order in ``ids``.

    Raises
    ------
    ParameterError
        ``n`` is negative.

    Examples
    --------
    >>> small, large = nested_sample(range(100), 3, 7), nested_sample(range(100), 10, 7)
    >>> set(small) <= set(large)
    True
    """
    ids = list(ids)
    if n is None or int(n) >= len(ids):
        return ids
    if int(n) < 0:
        raise ParameterError(f"n_items must be 0 or more, got {n}")
    keep = np.sort(nested_order(len(ids), seed)[: int(n)])
    return [ids[k] for k in keep]
