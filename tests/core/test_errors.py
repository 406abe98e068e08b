import pickle

import pytest

from hookline.core import ConfigError, HookError
from hookline.core.errors import closest_names, qualified_name


def module_level_hook():
    return None


class Greeter:
    def greet(self):
        return "hi"

    def __call__(self):
        return "called"


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)


def test_hook_error_is_a_runtime_error():
    assert issubclass(HookError, RuntimeError)


def test_hook_error_names_hook_point_and_original():
    original = KeyError("missing")
    err = HookError(module_level_hook, "saved", original)
    assert err.hook is module_level_hook
    assert err.point == "saved"
    assert err.original is original
    assert "test_errors.module_level_hook" in str(err)
    assert "at saved" in str(err)
    assert "KeyError" in str(err) and "missing" in str(err)


def test_hook_error_survives_pickling():
    err = HookError(module_level_hook, "saved", ValueError("bad"))
    copy = pickle.loads(pickle.dumps(err))
    assert str(copy) == str(err)
    assert copy.point == "saved" and copy.hook is module_level_hook


def test_qualified_name_of_functions_methods_lambdas_objects_and_builtins():
    assert qualified_name(module_level_hook).endswith("test_errors.module_level_hook")
    assert qualified_name(Greeter().greet).endswith("test_errors.Greeter.greet")
    assert qualified_name(lambda: None).endswith(
        "test_qualified_name_of_functions_methods_lambdas_objects_and_builtins.<locals>.<lambda>"
    )
    assert qualified_name(Greeter()).endswith("test_errors.Greeter")
    assert qualified_name(print) == "print"


def test_unknown_suggests_the_closest_names_and_lists_the_accepted_ones():
    err = ConfigError.unknown("hook type", "ChekpointHook", ["EMAHook", "CheckpointHook"])
    assert isinstance(err, ConfigError)
    message = str(err)
    assert "unknown hook type 'ChekpointHook'" in message
    assert "did you mean 'CheckpointHook'" in message
    assert "accepted: CheckpointHook, EMAHook" in message


def test_unknown_without_a_close_name_makes_no_suggestion():
    message = str(ConfigError.unknown("event", "zzz", ["start", "stop"]))
    assert "did you mean" not in message
    assert "accepted: start, stop" in message


def test_unknown_counts_instead_of_listing_many_names():
    names = [f"name{i}" for i in range(40)]
    assert "40 names" in str(ConfigError.unknown("thing", "other", names))


@pytest.mark.parametrize(
    ("name", "choices", "expected"),
    [
        ("strat", ["start", "stop"], ["start"]),
        ("START", ["start", "stop"], ["start"]),
        ("ckpt", ["CheckpointHook", "ckpt_interval"], ["ckpt_interval"]),
        ("Logger", ["LoggerHook", "EMAHook"], ["LoggerHook"]),
        ("xyz", ["start", "stop"], []),
    ],
)
def test_closest_names(name, choices, expected):
    assert closest_names(name, choices) == expected


def test_brief_shows_small_values_whole_and_names_big_ones():
    assert ConfigError.brief({"type": "SGD", "lr": 0.01}) == "{'type': 'SGD', 'lr': 0.01}"
    assert ConfigError.brief("abc") == "'abc'"
    big = ConfigError.brief([list(range(100))] * 1000)
    assert big.startswith("list [[0, 1, 2") and big.endswith("...]") and len(big) < 200
    assert "\n" not in ConfigError.brief(["line\n" * 50])
