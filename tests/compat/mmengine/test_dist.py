"""hookline.compat.mmengine.dist on one process (the 2-process run is test_distributed.py)."""

from __future__ import annotations

import pytest
import torch

from hookline import ConfigError
from hookline.compat.mmengine import dist


def test_queries_and_collectives_are_identities_on_one_process():
    assert dist.get_dist_info() == (0, 1) and dist.is_main_process() and not dist.is_distributed()
    assert dist.get_backend() is None and dist.get_comm_device() == torch.device("cpu")
    data = torch.tensor([1.0, 3.0])
    assert dist.all_reduce(data, "mean") is data and data.tolist() == [1.0, 3.0]
    states = {"a": torch.ones(2)}
    dist.all_reduce_dict(states, op="mean")
    assert states["a"].tolist() == [1.0, 1.0]
    dist.all_reduce_params([torch.nn.Parameter(torch.ones(1))], op="mean")
    assert dist.all_gather(data) == [data] and dist.all_gather_object({"x": 1}) == [{"x": 1}]
    assert dist.broadcast(data) is data and dist.collect_results([1, 2, 3], size=2) == [1, 2]
    assert isinstance(dist.sync_random_seed(), int)
    assert dist.get_data_device({"a": [torch.zeros(1)]}) == torch.device("cpu")
    dist.barrier()


def test_master_only_runs_on_rank_zero():
    calls = []

    @dist.master_only
    def write(value):
        calls.append(value)
        return value

    assert write(3) == 3 and calls == [3] and write.__name__ == "write"


def test_an_unknown_reduce_op_is_a_config_error(monkeypatch):
    monkeypatch.setattr(dist, "get_world_size", lambda group=None: 2)
    with pytest.raises(ConfigError, match="unknown reduce op 'median'"):
        dist.all_reduce(torch.ones(1), op="median")
    with pytest.raises(ConfigError, match="device must be"):
        dist.collect_results([], 0, device="tpu")
