"""Shared setup for the inspect tests."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Run each test with one intra-op thread (restored afterwards): the tests use small models,
    and on a busy 2-core machine two threads waiting on each other are several times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
