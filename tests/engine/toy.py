"""A small deterministic training setup shared by the engine tests (and run as a script).

As a script: ``python toy.py WORK_DIR [--resume auto] [--sleep S] [--out FILE] [--keep N]
[--fault STAGE@ITER[:SIGNAL]] [--kill-before-delete]`` trains with a checkpoint every 3
iterations and writes the final model and optimizer state to ``FILE``; ``--fault``
signals the process itself at an exact point (:class:`FaultAt`; ``--signal-in-final-wait
SIGNAL`` while ``train()`` waits for the last checkpoint's write), ``--kill-before-delete``
SIGKILLs it right after the first checkpoint that keep-N deletes an older one for.
"""

from __future__ import annotations

import argparse
import os
import signal
import time

import torch
from torch.utils.data import DataLoader, IterableDataset, TensorDataset

from hookline import Hook, Runner


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Dropout(0.2), torch.nn.Linear(16, 3)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def dataset(n: int = 60) -> TensorDataset:
    generator = torch.Generator().manual_seed(123)
    x = torch.randn(n, 6, generator=generator)
    y = torch.randint(0, 3, (n,), generator=generator)
    return TensorDataset(x, y)


class Stream(IterableDataset):
    """``n`` seeded samples, yielded one by one (no ``__len__``); records ``set_epoch``."""

    def __init__(self, n: int = 40, seed: int = 0) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 4, generator=generator)
        self.y = (self.x[:, 0] > 0).long()
        self.epochs: list[int] = []
        self.passes = 0

    def set_epoch(self, epoch: int) -> None:
        self.epochs.append(epoch)

    def __iter__(self):
        self.passes += 1
        for i in range(len(self.x)):
            yield self.x[i], self.y[i]


class Sleep(Hook):
    """Slows iterations down so a test can kill the process in the middle of a run."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        time.sleep(self.seconds)


class FaultAt(Hook):
    """At ``stage``, once ``at`` training iterations are done (``runner.state.resume_point``'s
    count, the same in every stage): send ``signum`` to this very process, or raise
    ``RuntimeError`` when ``signum`` is None. ``flush``: wait for background checkpoint writes
    first (so a SIGKILL lands after them, not in the middle)."""

    priority = "LOWEST"

    def __init__(self, stage: str, at: int, signum: int | None = signal.SIGKILL,
                 flush: bool = True) -> None:
        self.at, self.signum, self.flush, self.fired = at, signum, flush, False
        setattr(self, stage, self._fire)

    def _fire(self, runner, **kwargs) -> None:
        if self.fired or runner.state.resume_point[2] != self.at:
            return
        self.fired = True
        if self.flush:
            runner.flush_checkpoints()
        if self.signum is None:
            raise RuntimeError("fault injected")
        os.kill(os.getpid(), self.signum)
        if self.signum == signal.SIGKILL:
            time.sleep(60)  # never returns: the signal ends the process


def parse_fault(text: str) -> FaultAt:
    """``"after_train_epoch@16:SIGTERM"`` -> FaultAt (the signal defaults to SIGKILL)."""
    stage, _, rest = text.partition("@")
    at, _, name = rest.partition(":")
    return FaultAt(stage, int(at), getattr(signal, name or "SIGKILL"))


def make_runner(work_dir, *, max_epochs: int | None = 4, max_iters: int | None = None,
                hooks=(), checkpoint_every: int | None = None, **kwargs) -> Runner:
    torch.manual_seed(0)
    model = Net()
    default_hooks = {"logger": {"type": "LoggerHook", "interval": 5}}
    if checkpoint_every is not None:
        default_hooks["checkpoint"] = {"type": "CheckpointHook", "interval": checkpoint_every,
                                       "by_epoch": False}
    data = dataset()
    return Runner(
        model,
        optimizer=kwargs.pop("optimizer", {"type": "Adam", "lr": 0.01}),
        param_scheduler={"type": "StepLR", "step_size": 4, "gamma": 0.7, "by_epoch": False},
        loss_fn=torch.nn.CrossEntropyLoss(),
        train_dataloader=DataLoader(data, batch_size=8, shuffle=True),
        val_dataloader=DataLoader(data, batch_size=16),
        metrics=kwargs.pop("metrics", {"accuracy": "accuracy"}),
        max_epochs=max_epochs if max_iters is None else None,
        max_iters=max_iters,
        work_dir=work_dir,
        hooks=hooks,
        default_hooks={**default_hooks, **kwargs.pop("default_hooks", {})},
        **kwargs,
    )


def final_state(runner: Runner) -> dict:
    return {
        "model": {k: v.clone() for k, v in runner.model.state_dict().items()},
        "optimizer": runner.optimizer.state_dict(),
        "iter": runner.iter,
        "epoch": runner.epoch,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("work_dir")
    parser.add_argument("--resume", default=None)
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--out", default=None)
    parser.add_argument("--keep", type=int, default=-1)
    parser.add_argument("--fault", default=None, metavar="STAGE@ITER[:SIGNAL]")
    parser.add_argument("--kill-before-delete", action="store_true")
    parser.add_argument("--signal-in-final-wait", default=None, metavar="SIGNAL")
    args = parser.parse_args()
    torch.set_num_threads(1)
    hooks = [Sleep(args.sleep)] if args.sleep else []
    if args.fault:
        hooks.append(parse_fault(args.fault))
    runner = make_runner(args.work_dir, hooks=hooks, checkpoint_every=3, resume=args.resume,
                         default_hooks={"checkpoint": {"type": "CheckpointHook", "interval": 3,
                                                       "by_epoch": False,
                                                       "max_keep_ckpts": args.keep}})
    if args.kill_before_delete:
        def kill(path) -> None:  # the new checkpoint is on disk, the old one not yet deleted
            runner.flush_checkpoints()
            os.kill(os.getpid(), signal.SIGKILL)

        runner.remove_checkpoint = kill
    if args.signal_in_final_wait:  # the signal arrives while train() waits for the last write
        writer, flush = runner.checkpoint_writer, runner.checkpoint_writer.flush
        armed = {"after_train": False, "fired": False}
        runner.on("after_train", lambda: armed.update(after_train=True), priority="LOWEST")

        def signalled_flush() -> None:
            if armed["after_train"] and not armed["fired"]:
                armed["fired"] = True
                os.kill(os.getpid(), getattr(signal, args.signal_in_final_wait))
            flush()

        writer.flush = signalled_flush
    runner.train()
    if args.out:
        torch.save(final_state(runner), args.out)


if __name__ == "__main__":
    main()


class Explode(Hook):
    """Raises after a given number of training iterations (1-based ``at_iter``)."""

    def __init__(self, at_iter: int) -> None:
        self.at_iter = at_iter

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        if runner.iter + 1 == self.at_iter:
            raise RuntimeError("boom")
