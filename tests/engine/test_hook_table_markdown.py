"""The hook table as Markdown (``hookline hooks CONFIG --markdown``) and how priorities are worded."""

from __future__ import annotations

from hookline import Hook
from hookline.cli import main
from hookline.core import Priority
from hookline.demo.registry import demo_config_path
from hookline.engine.hook_table import HookTable
from hookline.hooks.catalog import PRIORITY_ORDER, hook_catalog


class Early(Hook):
    priority = "VERY_HIGH"

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None: ...


class Late(Hook):
    priority = "LOW"

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None: ...

    def after_train_epoch(self, runner) -> None: ...


def test_markdown_table_lists_stages_in_call_order_with_priority_numbers():
    table = HookTable()
    table.add(Late())
    table.add(Early())
    table.add(Late(), priority=45)  # an int that is no name stays a number
    lines = table.table(markdown=True).splitlines()
    assert lines[:2] == ["| stage | hooks in call order (smaller priority number first) |", "|---|---|"]
    assert lines[2:] == [
        "| `before_train_iter` | `Early` VERY_HIGH (10), `Late` 45, `Late` LOW (70) |",
        "| `after_train_epoch` | `Late` 45, `Late` LOW (70) |",
    ]
    # the text form keeps MMEngine's startup-log shape
    assert table.table().splitlines()[0].split(None, 1)[1] == "Early(VERY_HIGH), Late(45), Late(LOW)"


def test_hooks_config_markdown_prints_the_run_table(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["hooks", str(demo_config_path()), "--markdown"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].startswith("| stage | hooks in call order")
    rows = {line.split(" | ")[0].strip("| `"): line for line in out[2:]}
    assert "`CheckpointHook` VERY_LOW (90)" in rows["after_train_epoch"]
    assert rows["after_train_iter"].index("IterTimerHook") < rows["after_train_iter"].index(
        "ParamSchedulerHook")
    assert list(tmp_path.iterdir()) == []  # built in a scratch dir, nothing written here


def test_catalog_says_a_smaller_number_runs_first_with_every_name_and_value():
    head = hook_catalog().splitlines()[:2]
    assert "a smaller priority number runs first" in head[0]
    assert "lower priority" not in "\n".join(head)
    assert head[1] == PRIORITY_ORDER + "."
    for member in Priority:
        assert f"{member.name} {int(member)}" in PRIORITY_ORDER
