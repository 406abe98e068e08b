import pytest

from hookline.core import Event, HandleGroup, HookHandle


def counting_handle():
    calls = []
    return HookHandle(lambda: calls.append("removed")), calls


def test_remove_is_idempotent():
    handle, calls = counting_handle()
    handle.remove()
    handle.remove()
    assert calls == ["removed"]


def test_removed_tells_whether_the_hook_is_gone():
    handle, _ = counting_handle()
    assert handle.removed is False
    handle.remove()
    assert handle.removed is True


def test_handle_is_a_context_manager_that_removes_on_exit():
    handle, calls = counting_handle()
    with handle as entered:
        assert entered is handle
        assert calls == []
    assert calls == ["removed"] and handle.removed


def test_handle_removes_on_exit_when_the_block_raises():
    handle, calls = counting_handle()
    with pytest.raises(ZeroDivisionError), handle:
        raise ZeroDivisionError
    assert calls == ["removed"]


def test_handle_calls_its_hook():
    handle = HookHandle(lambda: None, hook=lambda x: x * 2, point="double")
    assert handle(21) == 42
    assert handle.point == "double"


def test_handle_repr_tells_point_and_state():
    event = Event("tick")
    handle = event.register(print)
    assert repr(handle) == "<HookHandle tick active>"
    handle.remove()
    assert repr(handle) == "<HookHandle tick removed>"


def test_group_add_returns_the_handle():
    group = HandleGroup()
    handle, _ = counting_handle()
    assert group.add(handle) is handle
    assert len(group) == 1


def test_group_remove_removes_every_handle_and_empties_the_group():
    group = HandleGroup()
    handles = [group.add(counting_handle()[0]) for _ in range(3)]
    group.remove()
    assert all(handle.removed for handle in handles)
    assert len(group) == 0
    group.remove()  # nothing left: a no-op


def test_group_removes_newest_first():
    order = []
    group = HandleGroup()
    for name in "abc":
        group.add(HookHandle(lambda name=name: order.append(name)))
    group.remove()
    assert order == ["c", "b", "a"]


def test_group_is_a_context_manager():
    event = Event("tick")
    with HandleGroup() as group:
        group.add(event.register(print))
        group.add(event.register(repr))
        assert len(event) == 2
    assert len(event) == 0 and len(group) == 0


def test_group_accepts_initial_handles_and_iterates_them():
    first, _ = counting_handle()
    second, _ = counting_handle()
    group = HandleGroup([first, second])
    assert list(group) == [first, second]


def test_group_accepts_any_object_with_remove():
    class Torch:  # e.g. torch.utils.hooks.RemovableHandle
        removed = False

        def remove(self):
            self.removed = True

    group = HandleGroup()
    torch_handle = group.add(Torch())
    group.remove()
    assert torch_handle.removed


def test_group_rejects_objects_without_remove():
    with pytest.raises(TypeError, match="remove"):
        HandleGroup().add(object())
