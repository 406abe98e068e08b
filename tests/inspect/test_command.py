"""The ``hookline inspect`` command, called through add_arguments/run."""

import argparse
import json

import pytest

from hookline.cli import main
from hookline.core import ConfigError
from hookline.inspect import command


def _run(argv, capsys):
    parser = argparse.ArgumentParser(prog="hookline inspect")
    command.add_arguments(parser)
    status = command.run(parser.parse_args(argv))
    return status, capsys.readouterr().out


def test_default_model_summary(capsys):
    status, out = _run([], capsys)
    assert status == 0
    assert "DigitsCNN" in out and "Total params: 38,282" in out and "[1, 10]" in out
    assert "gradients" not in out


def test_own_model_with_input_size_and_depth(capsys):
    status, out = _run(["tests.inspect.models:MLP", "--input-size", "4,16", "--depth", "0"], capsys)
    assert status == 0 and "MLP" in out and "[4, 4]" in out and "0 (Linear)" not in out
    _, out = _run(["tests.inspect.models:TwoInputNet", "--input-size", "2,1,6,6;2,3"], capsys)
    assert "side (Linear)" in out


def test_grad_prints_statistics_and_writes_plots(tmp_path, capsys):
    metrics = tmp_path / "metrics.jsonl"
    records = [{"mode": "train", "iter": i, "loss": 1 / i} for i in range(1, 6)]
    metrics.write_text("\n".join(json.dumps(r) for r in records))
    status, out = _run(["--input-size", "2,1,8,8", "--grad", "--plot-dir", str(tmp_path / "plots"),
                        "--metrics", str(metrics)], capsys)
    assert status == 0
    assert "features.0.weight" in out and "norm" in out and "dead" in out and "classifier.2" in out
    written = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert written == ["activations.png", "feature_maps.png", "gradient_flow.png", "training_curves.png"]


def test_plot_dir_alone_implies_grad_and_a_model_without_convs(tmp_path, capsys):
    argv = ["tests.inspect.models:MLP", "--input-size", "3,16", "--plot-dir", str(tmp_path)]
    status, out = _run(argv, capsys)
    assert status == 0 and "0.weight" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["activations.png", "gradient_flow.png"]


@pytest.mark.parametrize("spec, message", [
    ("hookline.demo.model", "must look like 'package.module:ClassOrFactory'"),
    ("hookline.demo.modle:DigitsCNN", "cannot import module 'hookline.demo.modle'"),
    ("hookline.demo.model:DigitCNN", "did you mean 'DigitsCNN'"),
    ("hookline.demo.model:__all__", "not a class or factory"),
    ("torch.nn:Linear", "cannot be called with no arguments"),
    ("torch:zeros", "cannot be called with no arguments|not an nn.Module"),
    ("json:dumps", "cannot be called with no arguments"),
])
def test_bad_model_strings_are_config_errors(spec, message, capsys):
    with pytest.raises(ConfigError, match=message):
        _run([spec], capsys)


def test_bad_input_size_and_option_combinations(capsys):
    for size in ("1,a", "", "0,3", "2;"):
        with pytest.raises(ConfigError, match="--input-size"):
            _run(["--input-size", size], capsys)
    with pytest.raises(ConfigError, match="--metrics needs --plot-dir"):
        _run(["--metrics", "m.jsonl"], capsys)
    with pytest.raises(ConfigError, match="--depth"):
        _run(["--depth", "-1"], capsys)


def test_through_the_hookline_command(capsys):
    assert main(["inspect", "--depth", "1"]) == 0
    assert "Total params: 38,282" in capsys.readouterr().out
    assert main(["inspect", "hookline.demo.model:DigitCNN"]) == 2
    assert "did you mean 'DigitsCNN'" in capsys.readouterr().err
