"""The ``hookline inspect`` command, called through add_arguments/run."""

import argparse
import json

import pytest
import torch

from hookline.app import inspect_command as command
from hookline.cli import main
from hookline.core import ConfigError

from ..inspect import models


def _run(argv, capsys):
    parser = argparse.ArgumentParser(prog="hookline inspect")
    command.add_arguments(parser)
    status = command.run(parser.parse_args(argv))
    return status, capsys.readouterr().out


def test_default_model_summary_runs_on_real_demo_images(capsys):
    status, out = _run([], capsys)
    assert status == 0
    assert out.startswith("inputs: 16 real demo images (DigitsDataset('val')")
    assert "DigitsCNN" in out and "Total params: 38,282" in out and "[16, 10]" in out
    assert "gradients" not in out
    _, out = _run(["--input-size", "1,1,8,8"], capsys)  # a size given: synthetic inputs, and it says so
    assert out.startswith("inputs: synthetic [1, 1, 8, 8] float32") and "[1, 10]" in out


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
    ("DigitCNN", "did you mean 'DigitsCNN'"),
    ("a:b:c", "must look like 'package.module:ClassOrFactory'"),
    ("torch:zeros", "cannot be called with no arguments|not an nn.Module"),
    ("json:dumps", "cannot be called with no arguments"),
])
def test_bad_model_strings_are_config_errors(spec, message, capsys):
    with pytest.raises(ConfigError, match=message):
        _run([spec], capsys)


def test_bad_input_size_and_option_combinations(capsys):
    for size in ("1,a", "", "0,3", "2;", "1,1,8,8x", "1,,8,8"):
        with pytest.raises(ConfigError, match="--input-size"):
            _run(["--input-size", size], capsys)
    with pytest.raises(ConfigError, match="--metrics needs --plot-dir"):
        _run(["--metrics", "m.jsonl"], capsys)
    with pytest.raises(ConfigError, match="--depth"):
        _run(["--depth", "-1"], capsys)


def test_what_fails_only_later_is_one_error_before_the_summary_prints(tmp_path, capsys):
    with pytest.raises(ConfigError, match=r"--metrics '.*nope.jsonl' is not a file"):
        _run(["--metrics", str(tmp_path / "nope.jsonl"), "--plot-dir", str(tmp_path)], capsys)
    with pytest.raises(ConfigError, match=r"--plot-dir '/proc/hookline' cannot be written"):
        _run(["--grad", "--plot-dir", "/proc/hookline"], capsys)
    assert capsys.readouterr().out == ""  # nothing ran
    with pytest.raises(ConfigError, match=r"DigitsCNN cannot run on the input .*\[1, 3, 8, 8\].*"
                                          r"expected input\[1, 3, 8, 8\] to have 1 channels"):
        _run(["--input-size", "1,3,8,8"], capsys)


def test_through_the_hookline_command(capsys):
    assert main(["inspect", "--depth", "1"]) == 0
    assert "Total params: 38,282" in capsys.readouterr().out
    assert main(["inspect", "hookline.demo.model:DigitCNN"]) == 2
    assert "did you mean 'DigitsCNN'" in capsys.readouterr().err


def test_an_embedding_model_with_integer_inputs_and_model_args(tmp_path, capsys):
    argv = ["tests.inspect.models:TinyTransformer", "--model-args", '{"vocab": 30, "classes": 3}',
            "--input-size", "2,7", "--dtypes", "long", "--grad"]
    status, out = _run(argv, capsys)
    assert status == 0
    assert out.startswith("inputs: synthetic [2, 7] int64 (floats: randn seeded 0; integers: zeros)")
    assert "embed (Embedding)" in out and "[2, 7, 32]" in out and "[2, 3]" in out
    total = sum(p.numel() for p in models.TinyTransformer(vocab=30, classes=3).parameters())
    assert f"Total params: {total:,}" in out
    assert "embed.weight" in out  # its gradient statistics: the backward pass reached the embedding
    _, out = _run(["tests.inspect.models:TwoInputNet", "--input-size", "2,1,6,6;2,3", "--dtypes", "float"],
                  capsys)  # one dtype for every input
    assert out.splitlines()[0] == ("inputs: synthetic [2, 1, 6, 6] float32; [2, 3] float32 "
                                   "(floats: randn seeded 0; integers: zeros)")


def test_registry_name_model_args_and_demo_images_for_the_gradient_report(tmp_path, capsys):
    status, out = _run(["DigitsCNN", "--model-args", '{"num_classes": 10}', "--grad", "--plot-dir",
                        str(tmp_path)], capsys)
    assert status == 0 and out.startswith("inputs: 16 real demo images")
    assert "[16, 10]" in out and "features.0.weight" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["activations.png", "feature_maps.png",
                                                          "gradient_flow.png"]


@pytest.mark.parametrize("argv, message", [
    (["--model-args", "{num_classes: 5}"],
     r"--model-args must be a JSON object .* like '\{\"num_classes\": 5\}'; .* is not JSON"),
    (["--model-args", "[5]"], "--model-args must be a JSON object .* got a JSON list"),
    (["--model-args", '{"num_clases": 5}'], "unexpected argument.*'num_clases' .did you mean 'num_classes'"),
    (["--model-args", '{"num_classes": 0}'], "num_classes must be an int >= 1"),
    (["--dtypes", "lng"], "--dtypes: unknown dtype 'lng'; accepted names: float, float32"),
    (["--input-size", "2,3;2,3", "--dtypes", "float,long,long"], "--dtypes gives 3 dtypes for 2 input"),
    (["--dtypes", "float,"], "--dtypes must be dtype names separated by commas"),
])
def test_bad_model_args_and_dtypes_are_one_config_error(argv, message, capsys):
    with pytest.raises(ConfigError, match=message):
        _run(argv, capsys)


def test_bad_model_args_through_the_command_is_one_error_line(capsys):
    assert main(["inspect", "--model-args", "{oops"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --model-args must be a JSON object") and "\n" not in err


def test_the_demo_inputs_are_the_first_validation_images_and_labels():
    from hookline.demo.registry import DigitsDataset  # noqa: PLC0415

    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    model = command.load_model("DigitsCNN", {"num_classes": 10})
    inputs, labels, line = command._inputs(model, parser.parse_args([]))  # noqa: SLF001
    images, expected = DigitsDataset("val").tensors
    assert torch.equal(inputs[0], images[:16]) and torch.equal(labels, expected[:16]) and "real demo" in line
    inputs, labels, line = command._inputs(model, parser.parse_args(["--dtypes", "float"]))  # noqa: SLF001
    assert labels is None and list(inputs[0].shape) == [1, 1, 8, 8] and "synthetic" in line


def test_grad_on_an_output_without_grad_fn_is_one_config_error(capsys):
    with pytest.raises(ConfigError, match=r"--grad: the output of ArgMaxNet does not require grad.*"
                                          r"needs a float output"):
        _run(["tests.inspect.models:ArgMaxNet", "--input-size", "2,4", "--grad"], capsys)
    assert main(["inspect", "tests.inspect.models:ArgMaxNet", "--input-size", "2,4", "--grad"]) == 2
    assert "Traceback" not in capsys.readouterr().err
