"""A ported MMEngine scheduler config built without MMEngine's scope (``{"type": "LinearLR",
"begin": 0, "end": 3}`` names torch's LinearLR): one error saying to write
``"mmengine.LinearLR"`` or call ``init_default_scope("mmengine")``, whichever way the Runner
gets it (one optimizer, a dict of optimizers by name, a built OptimWrapperDict)."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import hookline.compat.mmengine  # noqa: F401  (registers the "mmengine" scope)
from hookline import ConfigError, Runner
from hookline.engine import OptimWrapper, OptimWrapperDict

QUIET = {"logger": None, "progress": None, "checkpoint": None}
WARMUP = {"type": "LinearLR", "start_factor": 0.1, "by_epoch": False, "begin": 0, "end": 3}
HINT = (r"torch's LinearLR takes no 'begin', 'end' \(MMEngine's LinearLR does\).*"
        r"\{'type': 'mmengine.LinearLR', \.\.\.\}, or call init_default_scope\('mmengine'\)")


class Pair(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.generator, self.discriminator = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)

    def train_step(self, data, optim_wrapper):
        return {}


def runner(tmp_path, model, **kwargs) -> Runner:
    pairs = TensorDataset(torch.ones(4, 2), torch.ones(4, 1))
    return Runner(model, train_dataloader=DataLoader(pairs, batch_size=2), max_iters=2,
                  work_dir=tmp_path, device="cpu", default_hooks=QUIET, **kwargs)


def test_one_optimizer(tmp_path):
    with pytest.raises(ConfigError, match=r"param_scheduler\[0\]: " + HINT):
        runner(tmp_path, torch.nn.Linear(2, 1), optimizer={"type": "SGD", "lr": 0.1},
               loss_fn=torch.nn.MSELoss(), param_scheduler=[WARMUP])


def test_optimizers_by_name_and_a_built_dict(tmp_path):
    configs = {"generator": {"optimizer": {"type": "SGD", "lr": 0.1}},
               "discriminator": {"optimizer": {"type": "SGD", "lr": 0.1}}}
    with pytest.raises(ConfigError, match=HINT):
        runner(tmp_path, Pair(), optim_wrapper=configs, param_scheduler={"generator": [WARMUP]})
    model = Pair()
    built = OptimWrapperDict(**{name: OptimWrapper(torch.optim.SGD(
        getattr(model, name).parameters(), lr=0.1)) for name in configs})
    with pytest.raises(ConfigError, match=HINT):
        runner(tmp_path, model, optim_wrapper=built, param_scheduler=[WARMUP]).train()


def test_mmengines_scheduler_by_its_scoped_name_runs(tmp_path):
    run = runner(tmp_path, torch.nn.Linear(2, 1), optimizer={"type": "SGD", "lr": 0.1},
                 loss_fn=torch.nn.MSELoss(),
                 param_scheduler=[{**WARMUP, "type": "mmengine.LinearLR"}])
    run.train()  # MMEngine's LinearLR: 0.01, 0.055, then the base rate (as MMEngine gives)
    assert run.optimizer.param_groups[0]["lr"] == pytest.approx(0.1)


def test_the_scoped_name_needs_no_compat_import(tmp_path):
    """As the hint says: ``"mmengine.LinearLR"`` in a script that imports only the Runner
    (a fresh interpreter, so no other test's import of hookline.compat counts)."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415
    script = (
        "import sys, torch\n"
        "from torch.utils.data import DataLoader, TensorDataset\n"
        "from hookline import Runner\n"
        "data = DataLoader(TensorDataset(torch.ones(4, 2), torch.ones(4, 1)), batch_size=2)\n"
        "run = Runner(torch.nn.Linear(2, 1), optimizer={'type': 'SGD', 'lr': 0.1},\n"
        "             loss_fn=torch.nn.MSELoss(), train_dataloader=data, max_iters=1,\n"
        f"             work_dir={str(tmp_path)!r}, default_hooks={QUIET!r},\n"
        f"             param_scheduler=[{{**{WARMUP!r}, 'type': 'mmengine.LinearLR'}}])\n"
        "run.train()\n"
        "print(type(run.param_schedulers[0]).__module__, run.optimizer.param_groups[0]['lr'])\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    module, lr = done.stdout.splitlines()[-1].split()
    assert module.startswith("hookline.compat.mmengine") and float(lr) == pytest.approx(0.055)
