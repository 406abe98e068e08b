"""Config files and ``--set`` values read booleans as YAML 1.2 does: only true / false
(True, TRUE, False, FALSE); yes, no, on, off, y and n stay strings."""

from __future__ import annotations

import pytest

from hookline.core import ConfigError
from hookline.engine.config_file import load_config, parse_value


@pytest.mark.parametrize("text", ["true", "True", "TRUE"])
def test_true_in_every_case_yaml_12_allows(text):
    assert parse_value(text) is True


@pytest.mark.parametrize("text", ["false", "False", "FALSE"])
def test_false_in_every_case_yaml_12_allows(text):
    assert parse_value(text) is False


@pytest.mark.parametrize("text", ["yes", "no", "on", "off", "Yes", "NO", "On", "OFF", "y", "n"])
def test_yaml_11_words_stay_strings(text):
    assert parse_value(text) == text


def test_a_config_file_keeps_no_as_a_string(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("name: no\nflags: [on, off, true]\nshuffle: yes\n")
    assert load_config(path) == {"name": "no", "flags": ["on", "off", True], "shuffle": "yes"}


def test_an_empty_file_says_so(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("# nothing yet\n")
    with pytest.raises(ConfigError, match="cannot parse|must hold a mapping"):
        load_config(path)
    path.write_text("")
    with pytest.raises(ConfigError, match=r"config file '.*run.yaml' is empty"):
        load_config(path)


def test_yaml_in_a_json_file_says_json_was_expected(tmp_path):
    path = tmp_path / "run.json"
    path.write_text("model: {type: Net}\n")
    with pytest.raises(ConfigError, match=r"as JSON \(a \.json file must hold JSON; name a YAML "):
        load_config(path)
