"""GradientMonitorHook and ActivationStatsHook on real short CPU runs: log.txt lines at the
interval only, TensorBoard scalars read back with EventAccumulator and checked against values
measured independently, alerts naming parameters and iterations, hooks taken off the model,
no host-device sync between log steps, AMP loss scaling, configuration errors."""

from __future__ import annotations

import doctest
import math
import re
from pathlib import Path

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import hookline.hooks.activation_stats
import hookline.hooks.inspect_hooks
from hookline import HOOKS, ConfigError, Hook, HookError, Runner
from hookline.engine import AmpOptimWrapper
from hookline.hooks import ActivationStatsHook, GradientMonitorHook, TensorboardLoggerHook
from hookline.inspect import GradientMonitor
from hookline.inspect.plots import plot_activation_histograms
from tests.inspect.models import hook_state as inspect_hook_state

from ._toy import one_thread  # noqa: F401  (autouse fixture)

GRAD_LINE = re.compile(r"gradients at iter (\d+): total norm (\S+)")
ACT_LINE = re.compile(r"activations at iter (\d+):")


def mlp(scale_last: float = 1.0) -> nn.Sequential:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.Sigmoid(), nn.Linear(16, 3))
    with torch.no_grad():
        net[4].weight.mul_(scale_last)
    return net


def data(n: int = 48, nan_batch: int | None = None) -> TensorDataset:
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(n, 6, generator=generator)
    if nan_batch is not None:
        x[nan_batch * 8:(nan_batch + 1) * 8] = float("nan")
    return TensorDataset(x, torch.randint(0, 3, (n,), generator=generator))


def runner_for(work_dir: Path, hooks, *, model: nn.Module | None = None, lr: float = 0.05,
               dataset: TensorDataset | None = None, val: bool = True, **kwargs) -> Runner:
    return Runner(model if model is not None else mlp(), optimizer={"type": "SGD", "lr": lr},
                  loss_fn=nn.CrossEntropyLoss(),
                  train_dataloader=DataLoader(dataset or data(), batch_size=8, shuffle=False),
                  val_dataloader=DataLoader(data(32), batch_size=8) if val else None,
                  metrics={"accuracy": "accuracy"}, work_dir=work_dir, hooks=hooks, device="cpu",
                  default_hooks={"progress": None, "checkpoint": None,
                                 **kwargs.pop("default_hooks", {})}, **kwargs)


def log_lines(work_dir: Path, level: str = "INFO") -> list[str]:
    text = (work_dir / "log.txt").read_text(encoding="utf-8")
    return [line.split(f" - {level} - ", 1)[1] for line in text.splitlines() if f" - {level} - " in line]


def events(work_dir: Path) -> EventAccumulator:
    accumulator = EventAccumulator(str(work_dir / "tf_logs"), size_guidance={"scalars": 0})
    accumulator.Reload()
    return accumulator


def scalars(acc: EventAccumulator, tag: str) -> list[tuple[int, float]]:
    return [(e.step, e.value) for e in acc.Scalars(tag)]


def hook_state(model: nn.Module) -> dict:
    """Every hook table of the model's modules and parameters, as comparable values."""
    return inspect_hook_state(model)


def grad_hooks_cleared(model: nn.Module) -> bool:
    """torch's remove() leaves an empty dict on a parameter; the hooks put back None."""
    return all(tables[1] is None for name, tables in hook_state(model).items()
               if name.startswith("param:"))


class Reference(Hook):
    """Measures independently what the hooks report: each parameter's gradient norm after
    each iteration's backward, and each activation layer's zeros, elements and sum over the
    training forward passes (reads every iteration: test instrumentation only)."""

    priority = "HIGHEST"

    def __init__(self) -> None:
        self.norms: dict[int, dict[str, float]] = {}   # iteration (1-based) -> name -> norm
        self.acts: dict[int, dict[str, list[float]]] = {}  # iteration -> layer -> [zeros, n, sum]
        self.scale = 1.0
        self._handles: list = []
        self._iter = 0

    def before_train(self, runner) -> None:
        for name, param in runner.model.named_parameters():
            self._handles.append(param.register_post_accumulate_grad_hook(self._grad(name)))
        for name, module in runner.model.named_modules():
            if isinstance(module, (nn.ReLU, nn.Sigmoid)):
                self._handles.append(module.register_forward_hook(self._act(name)))

    def _grad(self, name):
        def record(param):
            self.norms.setdefault(self._iter, {})[name] = float(param.grad.norm()) / self.scale
        return record

    def _act(self, name):
        def record(module, args, out):
            if module.training:
                acc = self.acts.setdefault(self._iter, {}).setdefault(name, [0.0, 0.0, 0.0])
                acc[0] += float((out == 0).sum())
                acc[1] += out.numel()
                acc[2] += float(out.detach().double().sum())
        return record

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        self._iter = runner.iter + 1

    def after_train(self, runner) -> None:
        for handle in self._handles:
            handle.remove()
        for param in runner.model.parameters():  # torch's remove() leaves an empty dict
            param._post_accumulate_grad_hooks = None  # noqa: SLF001  (torch has no public reset)

    def window(self, iterations, layer: str) -> tuple[float, float]:
        """(dead ratio, mean) of ``layer`` over ``iterations``."""
        zeros = sum(self.acts[i][layer][0] for i in iterations)
        count = sum(self.acts[i][layer][1] for i in iterations)
        total = sum(self.acts[i][layer][2] for i in iterations)
        return zeros / count, total / count


# --------------------------------------------------------------------------- a normal run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """2 epochs of 6 iterations, validation after each; both hooks at interval 4 (by epoch:
    log steps at iterations 4, 6, 10 and 12)."""
    work_dir = tmp_path_factory.mktemp("inspect_run")
    grads, acts, ref = GradientMonitorHook(interval=4), ActivationStatsHook(interval=4), Reference()
    runner = runner_for(work_dir, [grads, acts, TensorboardLoggerHook(interval=4), ref], max_epochs=2,
                        default_hooks={"logger": {"type": "LoggerHook", "interval": 4}})
    before = hook_state(runner.model)
    runner.train()
    return work_dir, runner, grads, acts, ref, before


def test_logs_at_the_interval_only(run) -> None:
    work_dir, *_ = run
    lines = log_lines(work_dir)
    assert [int(m[1]) for m in map(GRAD_LINE.match, lines) if m] == [4, 6, 10, 12]
    assert [int(m[1]) for m in map(ACT_LINE.match, lines) if m] == [4, 6, 10, 12]
    # each summary comes right after LoggerHook's training line of the same iteration
    grad = [i for i, line in enumerate(lines) if GRAD_LINE.match(line)]
    assert [lines[i - 1].split("]")[1] for i in grad] == ["[4/6", "[6/6", "[4/6", "[6/6"]
    assert not log_lines(work_dir, "WARNING")  # nothing vanished or exploded


def test_gradient_norms_match_an_independent_measurement(run) -> None:
    work_dir, runner, grads, _, ref, _ = run
    acc = events(work_dir)
    names = [n for n, _ in runner.model.named_parameters()]
    assert {f"grad_norm/{n}" for n in names} | {"grad_norm/total"} <= set(acc.Tags()["scalars"])
    total = scalars(acc, "grad_norm/total")
    assert [step for step, _ in total] == [4, 6, 10, 12]
    for step, value in total:
        assert value == pytest.approx(math.sqrt(sum(v * v for v in ref.norms[step].values())), rel=1e-5)
    for name in names:
        for step, value in scalars(acc, f"grad_norm/{name}"):
            assert value == pytest.approx(ref.norms[step][name], rel=1e-5)
    # the text line shows the same total
    logged = [float(m[2]) for m in map(GRAD_LINE.match, log_lines(work_dir)) if m]
    assert logged == pytest.approx([v for _, v in total], rel=1e-3)
    assert [s for s, v in scalars(acc, "grad_alerts/nan")] == [4, 6, 10, 12]
    info = runner.message_hub.info["grad_stats"]
    assert info["iter"] == 12 and set(info["norms"]) == set(names) and info["alerts"] == []
    assert not runner.message_hub.keys("train/grad")  # LoggerHook's train/ keys are left alone


def test_activation_windows_leave_validation_out(run) -> None:
    work_dir, runner, _, acts, ref, _ = run
    acc = events(work_dir)
    windows = {4: range(1, 5), 6: range(5, 7), 10: range(7, 11), 12: range(11, 13)}
    for layer in ("1", "3"):
        dead, mean = scalars(acc, f"activations/dead/{layer}"), scalars(acc, f"activations/mean/{layer}")
        assert [s for s, _ in dead] == [s for s, _ in mean] == [4, 6, 10, 12]
        for (step, d), (_, m) in zip(dead, mean):
            want_dead, want_mean = ref.window(windows[step], layer)
            assert d == pytest.approx(want_dead, abs=1e-6)
            assert m == pytest.approx(want_mean, rel=1e-5)
    tags = set(acc.Tags()["scalars"])
    assert "activations/saturated/3" in tags and "activations/saturated/1" not in tags  # ReLU: unbounded
    assert {"activations/std/1", "activations/std/3"} <= tags
    # the reference counts training calls only, so the values above already leave validation
    # out (iterations 7-10 follow the first one); the window after the second has 2 calls
    layers = runner.message_hub.info["activation_stats"]["layers"]
    assert layers["1"]["calls"] == 2  # iterations 11 and 12
    text = (work_dir / "log.txt").read_text(encoding="utf-8")
    block = text.split("activations at iter 10:\n", 1)[1].splitlines()[:2]
    assert re.fullmatch(r"  1 \(ReLU\)     mean \S+  std \S+  dead \d+\.\d%", block[0]), block
    assert re.fullmatch(r"  3 \(Sigmoid\)  mean \S+  std \S+  dead 0\.0%  saturated \d+\.\d%", block[1])


def test_hook_tables_are_as_before_after_training(run) -> None:
    _, runner, grads, acts, _, before = run
    assert hook_state(runner.model) == before
    assert grad_hooks_cleared(runner.model)
    assert not grads.monitor.attached and not acts.stats.attached
    assert sorted(grads.monitor.report()) == sorted(n for n, _ in runner.model.named_parameters())
    assert grads.monitor.step == 12  # one backward per iteration, none in validation


# --------------------------------------------------------------------------- alerts


class FailAt(Hook):
    priority = "LOWEST"

    def __init__(self, iteration: int) -> None:
        self.iteration = iteration

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        if runner.iter + 1 == self.iteration:
            raise RuntimeError("stop here")


def test_exploding_layer_is_named_and_pending_alerts_are_logged_on_failure(tmp_path: Path) -> None:
    """The last layer's weights x1e5 make the gradients of the layers below it explode (not its
    own). Log steps at 3; the run fails at 5, and iterations 4-5 are reported then."""
    grads, acts = GradientMonitorHook(interval=3, explode=1e3, by_epoch=False), ActivationStatsHook(3)
    runner = runner_for(tmp_path, [grads, acts, TensorboardLoggerHook(interval=3), FailAt(5)],
                        model=mlp(scale_last=1e5), lr=1e-12, max_iters=6, val=False,
                        default_hooks={"logger": None})
    before = hook_state(runner.model)
    with pytest.raises(HookError, match="stop here"):
        runner.train()
    warnings = log_lines(tmp_path, "WARNING")
    exploding = [w for w in warnings if w.startswith("exploding gradients (norm > 1000)")]
    assert len(exploding) == 2, warnings
    assert "2.weight (iters 1-3, 3 times)" in exploding[0] and "0.weight (iters 1-3, 3 times)" in exploding[0]
    assert "2.weight (iters 4-5, 2 times)" in exploding[1]
    assert "4.weight" not in "".join(exploding)  # its own gradient is small
    counts = scalars(events(tmp_path), "grad_alerts/exploding")
    assert [s for s, _ in counts] == [3] and counts[0][1] >= 6  # 2 parameters x 3 iterations at least
    assert hook_state(runner.model) == before  # taken off by on_exception too


def test_nan_gradients_name_the_first_bad_iteration(tmp_path: Path) -> None:
    grads = GradientMonitorHook(interval=4, by_epoch=False)
    runner = runner_for(tmp_path, [grads], dataset=data(nan_batch=1), max_iters=4, val=False,
                        default_hooks={"logger": None})
    runner.train()
    (warning,) = log_lines(tmp_path, "WARNING")
    assert warning.startswith("nan gradients (NaN values) in 6 parameter(s): 0.weight (iters 2-4, 3 times)")
    alerts = runner.message_hub.info["grad_stats"]["alerts"]
    assert min(i for i, _, kind in alerts if kind == "nan") == 2
    assert ("nan" in log_lines(tmp_path)[-1]) and "total norm nan" in log_lines(tmp_path)[-1]


def test_a_resumed_run_logs_where_an_uninterrupted_one_would(tmp_path: Path) -> None:
    """Checkpoints every 3 iterations, a failure at 7: the resumed run (from 6) logs at 8 and 10,
    and TensorBoard holds each step once."""
    def hooks():
        return [GradientMonitorHook(interval=4, by_epoch=False), ActivationStatsHook(4, by_epoch=False),
                TensorboardLoggerHook(interval=4, by_epoch=False)]
    checkpoint = {"checkpoint": {"type": "CheckpointHook", "interval": 3, "by_epoch": False},
                  "logger": None}
    with pytest.raises(HookError):
        runner_for(tmp_path, [*hooks(), FailAt(7)], max_iters=10, val=False,
                   default_hooks=checkpoint).train()
    runner = runner_for(tmp_path, hooks(), max_iters=10, val=False, resume="auto",
                        default_hooks=checkpoint)
    runner.train()
    lines = log_lines(tmp_path)
    assert [int(m[1]) for m in map(GRAD_LINE.match, lines) if m] == [4, 8, 10]
    assert [int(m[1]) for m in map(ACT_LINE.match, lines) if m] == [4, 8, 10]
    acc = events(tmp_path)
    assert [s for s, _ in scalars(acc, "grad_norm/total")] == [4, 8, 10]
    assert [s for s, _ in scalars(acc, "activations/dead/1")] == [4, 8, 10]
    assert runner.message_hub.info["activation_stats"]["layers"]["1"]["calls"] == 2


# --------------------------------------------------------------------------- costs and options


def test_no_host_sync_between_log_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """12 iterations at interval 5 (log steps 5, 10, 12): device values are read in exactly
    those iterations, and GradientMonitor.report runs once per log step."""
    where = {"iter": None}
    reads: list[int] = []
    for attr in ("item", "tolist", "__float__", "__bool__", "cpu", "numpy"):
        original = getattr(torch.Tensor, attr)

        def counted(self, *args, _original=original, **kwargs):
            if where["iter"] is not None:
                reads.append(where["iter"])
            return _original(self, *args, **kwargs)
        monkeypatch.setattr(torch.Tensor, attr, counted)
    reports: list[int] = []
    original_report = GradientMonitor.report
    monkeypatch.setattr(GradientMonitor, "report",
                        lambda self: reports.append(where["iter"]) or original_report(self))

    class Where(Hook):
        priority = "HIGHEST"

        def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
            where["iter"] = runner.iter + 1

    class Done(Hook):
        priority = "LOWEST"

        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
            where["iter"] = None

    hooks = [GradientMonitorHook(interval=5, by_epoch=False), ActivationStatsHook(5, by_epoch=False),
             Where(), Done()]
    runner_for(tmp_path, hooks, max_iters=12, val=False,
               default_hooks={"logger": None, "timer": None}).train()
    assert sorted(set(reads)) == [5, 10, 12]
    assert reports == [5, 10, 12]


def test_every_samples_iterations_and_keeps_the_log_steps(tmp_path: Path) -> None:
    """every=3, interval=4 over 8 iterations: iterations 3, 4, 6 and 8 are recorded."""
    grads = GradientMonitorHook(interval=4, vanish=0.0, explode=1e-9, every=3, by_epoch=False)
    acts, ref = ActivationStatsHook(interval=4, every=3, by_epoch=False), Reference()
    runner = runner_for(tmp_path, [grads, acts, ref], max_iters=8, val=False,
                        default_hooks={"logger": None})
    runner.train()
    assert grads.monitor.step == 4
    warnings = log_lines(tmp_path, "WARNING")  # every recorded norm is above explode=1e-9
    assert [w.split("0.weight ", 1)[1].split(")")[0] for w in warnings] == [
        "(iters 3-4, 2 times", "(iters 6-8, 2 times"]
    for name, norm in runner.message_hub.info["grad_stats"]["norms"].items():
        assert norm == pytest.approx(ref.norms[8][name], rel=1e-5)
    layers = runner.message_hub.info["activation_stats"]["layers"]
    assert layers["1"]["calls"] == 2
    assert layers["1"]["dead"] == pytest.approx(ref.window([6, 8], "1")[0], abs=1e-6)
    assert layers["3"]["mean"] == pytest.approx(ref.window([6, 8], "3")[1], rel=1e-5)


def test_layers_select_modules_and_parameters(tmp_path: Path) -> None:
    grads = GradientMonitorHook(interval=2, layers=["2", "0.bias"], by_epoch=False)
    runner = runner_for(tmp_path, [grads], max_iters=2, val=False, default_hooks={"logger": None})
    runner.train()
    assert set(runner.message_hub.info["grad_stats"]["norms"]) == {"2.weight", "2.bias", "0.bias"}
    assert grads.monitor.names == ["2.weight", "2.bias", "0.bias"]
    assert grad_hooks_cleared(runner.model)

    bad = runner_for(tmp_path / "bad", [GradientMonitorHook(layers=["2.wieght"])], max_iters=1, val=False)
    with pytest.raises(HookError) as info:
        bad.train()
    assert isinstance(info.value.__cause__, ConfigError)
    assert "did you mean '2.weight'" in str(info.value.__cause__)


def test_amp_loss_scale_is_divided_out(tmp_path: Path) -> None:
    """A GradScaler multiplies the gradients by 2**16: the logged norms are unscaled, and the
    exploding check (explode=50, far below the scaled norms) runs on them at log steps."""
    def scaled_run(work_dir: Path, explode: float):
        grads, ref = GradientMonitorHook(interval=2, explode=explode, by_epoch=False), Reference()
        runner = runner_for(work_dir, [grads, ref], max_iters=4, val=False,
                            default_hooks={"logger": None})
        runner.optim_wrapper = AmpOptimWrapper(optimizer=runner.optimizer)
        runner.optim_wrapper.loss_scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
        ref.scale = 2.0**16
        runner.train()
        return runner, ref

    runner, ref = scaled_run(tmp_path / "a", explode=50.0)
    info = runner.message_hub.info["grad_stats"]
    assert info["alerts"] == [] and not log_lines(tmp_path / "a", "WARNING")
    assert max(info["norms"].values()) < 50 < max(info["norms"].values()) * 2.0**16
    for name, norm in info["norms"].items():
        assert norm == pytest.approx(ref.norms[4][name], rel=1e-5)

    runner, ref = scaled_run(tmp_path / "b", explode=1e-6)  # now every norm is above it
    (warning,) = log_lines(tmp_path / "b", "WARNING")[-1:]
    assert warning.startswith("exploding gradients (norm > 1e-06) in 6 parameter(s): 0.weight (iter 4)")


def test_arguments_are_checked_early() -> None:
    for kwargs, message in (({"interval": 0}, "interval must be an int >= 1"),
                            ({"vanish": 1.0, "explode": 1.0}, "0 <= vanish < explode"),
                            ({"explode": "big"}, "explode must be a number"),
                            ({"layers": []}, "layers must be None or a non-empty list"),
                            ({"top": -1}, "top must be an int >= 0")):
        with pytest.raises(ConfigError, match=re.escape(message)):
            GradientMonitorHook(**kwargs)
    with pytest.raises(ConfigError, match="did you mean 'ReLU'"):
        ActivationStatsHook(types=["Relu"])
    with pytest.raises(ConfigError, match="saturation must be a finite number in \\[0, 0.5\\)"):
        ActivationStatsHook(saturation=0.5)
    with pytest.raises(ConfigError, match="types must be nn.Module classes"):
        ActivationStatsHook(types=[int])
    hook = HOOKS.build({"type": "ActivationStatsHook", "types": ["GELU", nn.ReLU], "interval": 7})
    assert hook.types == (nn.GELU, nn.ReLU) and hook.interval == 7
    assert HOOKS.build({"type": "GradientMonitorHook", "layers": "0"}).layers == ["0"]


def test_no_activation_layer_is_a_config_error(tmp_path: Path) -> None:
    runner = runner_for(tmp_path, [ActivationStatsHook(types=["Tanh"])], max_iters=1, val=False)
    with pytest.raises(HookError) as info:
        runner.train()
    assert isinstance(info.value.__cause__, ConfigError) and "Tanh" in str(info.value.__cause__)


def test_doctests() -> None:
    for module in (hookline.hooks.inspect_hooks, hookline.hooks.activation_stats):
        assert doctest.testmod(module).failed == 0


def test_activation_histograms_plot_after_training(tmp_path: Path) -> None:
    """``samples`` keeps the latest call's values for ``plot_activation_histograms(hook.stats)``
    after training: the log steps' resets clear the statistics, not the samples."""
    acts = ActivationStatsHook(interval=4, samples=64)
    runner_for(tmp_path, [acts], max_epochs=1).train()
    assert acts.stats.report() == {}  # reset at the last log step
    kept = acts.stats.latest_samples()
    assert kept and all(0 < values.numel() <= 64 for values in kept.values())
    plot_activation_histograms(acts.stats, tmp_path / "acts.png")
    assert (tmp_path / "acts.png").stat().st_size > 0
