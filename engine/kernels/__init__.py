"""Greedy-cosine kernels: exact CPU kernels (numba) on plain CSR arrays."""

from .cpu import (
    cosine_greedy_pair,
    dense_block,
    modified_cosine_pair,
    prepare_weights,
    search_block,
)

__all__ = [
    "cosine_greedy_pair",
    "dense_block",
    "modified_cosine_pair",
    "prepare_weights",
    "search_block",
]
