import copy
import functools

import pytest

from hookline.core import ConfigError, Registry
from hookline.core.registry import SCOPE_MODULES, default_scope, using_scope


def make_registry():
    shapes = Registry("shape")

    @shapes.register()
    class Square:
        def __init__(self, side=1.0, *, color="red"):
            self.side, self.color = side, color

    @shapes.register(name="Disc")
    class Circle:
        def __init__(self, radius):
            self.radius = radius

    return shapes, Square, Circle


# -- registration ---------------------------------------------------------------------
def test_register_decorator_keeps_the_object_and_uses_its_name():
    shapes, square, circle = make_registry()
    assert square.__name__ == "Square"  # returned unchanged
    assert shapes.get("Square") is square
    assert shapes.get("Disc") is circle
    assert "Circle" not in shapes


def test_register_called_directly_and_bare_decorator():
    registry = Registry("fn")

    def relu(x):
        return max(x, 0)

    assert registry.register(relu) is relu

    @registry.register
    def identity(x):
        return x

    assert registry.names() == ["identity", "relu"]


def test_contains_and_names_are_sorted():
    shapes, _, _ = make_registry()
    assert "Square" in shapes and "Triangle" not in shapes
    assert shapes.names() == ["Disc", "Square"]
    assert list(shapes) == ["Disc", "Square"] and len(shapes) == 2


def test_a_duplicate_name_is_a_config_error():
    shapes, square, _ = make_registry()

    class Square:
        pass

    with pytest.raises(ConfigError, match="already registered.*force=True"):
        shapes.register(Square)
    with pytest.raises(ConfigError):
        shapes.register(name="Disc")(Square)
    assert shapes.get("Square") is square


def test_force_replaces_a_registered_name():
    shapes, _, _ = make_registry()

    class Square:
        pass

    shapes.register(Square, force=True)
    assert shapes.get("Square") is Square


def test_objects_without_a_name_need_one():
    def power(base, exp):
        return base**exp

    registry = Registry("fn")
    unnamed = functools.partial(power, exp=2)
    with pytest.raises(ConfigError, match="name="):
        registry.register(unnamed)
    registry.register(unnamed, name="square")
    assert registry.build({"type": "square", "base": 3}) == 9


def test_get_unknown_suggests_the_closest_names():
    shapes, _, _ = make_registry()
    with pytest.raises(ConfigError) as info:
        shapes.get("Sqare")
    assert "unknown shape type 'Sqare'" in str(info.value)
    assert "did you mean 'Square'" in str(info.value)


def test_a_dotted_name_of_an_unloaded_scope_says_so():
    shapes, _, _ = make_registry()
    with pytest.raises(ConfigError, match="no shape registry of scope 'geo' is loaded"):
        shapes.get("geo.Square")


def test_a_misspelt_dotted_flat_name_suggests_it_without_the_scope_hint():
    """Bridges register names like 'keras.callbacks.EarlyStopping' flat: a typo in one is a
    typo, not a scope that is not loaded."""
    shapes, _, _ = make_registry()
    shapes.register(lambda: "x", name="geo.Square")
    with pytest.raises(ConfigError) as info:
        shapes.get("geo.Sqare")
    assert "did you mean 'geo.Square'" in str(info.value)
    assert "is loaded" not in str(info.value)


def test_repr():
    shapes, _, _ = make_registry()
    assert repr(shapes) == "<Registry 'shape': 2 entries>"


# -- build ------------------------------------------------------------------------------
def test_build_calls_the_type_with_the_other_keys():
    shapes, square, _ = make_registry()
    built = shapes.build({"type": "Square", "side": 3, "color": "blue"})
    assert isinstance(built, square)
    assert (built.side, built.color) == (3, "blue")


def test_build_fills_defaults_that_the_config_overrides():
    shapes, _, _ = make_registry()
    built = shapes.build({"type": "Square", "side": 2}, side=9, color="green")
    assert (built.side, built.color) == (2, "green")


def test_build_accepts_a_callable_as_type():
    shapes, _, _ = make_registry()

    def triangle(base, height):
        return base * height / 2

    assert shapes.build({"type": triangle, "base": 4, "height": 3}) == 6


def test_build_does_not_mutate_the_config():
    shapes, _, _ = make_registry()
    cfg = {"type": "Square", "side": 2, "color": "blue"}
    before = copy.deepcopy(cfg)
    shapes.build(cfg, color="red")
    shapes.build(cfg)
    assert cfg == before


def test_build_passes_anything_to_a_callable_taking_kwargs():
    registry = Registry("fn")
    registry.register(lambda **kwargs: kwargs, name="collect")
    assert registry.build({"type": "collect", "a": 1}, b=2) == {"a": 1, "b": 2}


def make_spy():
    registry = Registry("spy")
    calls = []

    @registry.register()
    def spy(alpha, beta=2):
        calls.append((alpha, beta))

    return registry, calls


@pytest.mark.parametrize(
    ("cfg", "expected"),
    [
        ({"alpha": 1}, "has no 'type' key; registered types: spy"),
        ({"type": "sp", "alpha": 1}, "unknown spy type 'sp'; did you mean 'spy'?"),
        ({"type": "spy", "alpha": 1, "btea": 3}, "unexpected argument(s) 'btea' (did you mean 'beta'?)"),
        ({"type": "spy", "alpha": 1, "gamma": 3}, "it accepts: alpha, beta"),
        ({"type": "spy", "beta": 3}, "missing a required argument: 'alpha'"),
        ({"type": 42}, "must be a name or a callable"),
    ],
    ids=["no-type", "unknown-type", "misspelt-argument", "unknown-argument", "missing-argument",
         "bad-type"],
)
def test_bad_configs_are_config_errors_raised_before_the_call(cfg, expected):
    registry, calls = make_spy()
    with pytest.raises(ConfigError) as info:
        registry.build(cfg)
    assert expected in str(info.value)
    assert calls == []


def test_unknown_default_arguments_are_rejected_too():
    registry, calls = make_spy()
    with pytest.raises(ConfigError, match="'runner'"):
        registry.build({"type": "spy", "alpha": 1}, runner=None)
    assert calls == []


@pytest.mark.parametrize("cfg", [None, "spy", ["type", "spy"]])
def test_a_config_must_be_a_mapping(cfg):
    registry, _ = make_spy()
    with pytest.raises(ConfigError, match="'type' key"):
        registry.build(cfg)


def test_build_of_a_target_without_a_signature_is_left_to_the_target():
    registry = Registry("builtin")
    registry.register(dict, name="dict")
    assert registry.build({"type": "dict", "a": 1}) == {"a": 1}


# -- registry trees (MMEngine's parent / scope) ------------------------------------------------
def make_tree():
    root = Registry("hook", scope="core")
    child = Registry("hook", parent=root, scope="proj")
    other = Registry("hook", parent=root, scope="other")

    @root.register()
    class Shared:
        pass

    @child.register_module(name="Shared")
    class ChildShared:
        pass

    @child.register_module()
    class OnlyChild:
        pass

    @other.register_module(name=["Twin", "OtherAlias"])
    class OtherTwin:
        pass

    child.register_module(module=type("Twin", (), {}))
    return root, child, other, Shared, ChildShared, OnlyChild, OtherTwin


def test_a_child_sees_its_ancestors_and_a_scope_prefix_picks_a_registry():
    root, child, other, shared, child_shared, only_child, other_twin = make_tree()
    assert child.get("Shared") is child_shared and root.get("Shared") is shared
    assert other.get("Shared") is shared  # from the parent
    assert root.get("proj.Shared") is child_shared and other.get("proj.OnlyChild") is only_child
    assert root.get("OnlyChild") is only_child  # one descendant has it
    assert other.get("OtherAlias") is other_twin and child.root is root
    assert "OnlyChild" in root and "proj.Missing" not in root


def test_a_name_in_several_scopes_must_be_scoped():
    root, *_ = make_tree()
    with pytest.raises(ConfigError, match="several scopes; name one of 'proj.Twin', 'other.Twin'"):
        root.get("Twin")


def test_default_scope_and_the_scope_key_of_a_config():
    root, child, _, shared, child_shared, *_ = make_tree()
    with using_scope("proj"):
        assert default_scope() == "proj" and root.get("Shared") is child_shared
    assert default_scope() is None and root.get("Shared") is shared
    assert isinstance(root.build({"type": "Shared", "_scope_": "proj"}), child_shared)
    with pytest.raises(ConfigError, match="_scope_ 'nope'"):
        root.build({"type": "Shared", "_scope_": "nope"})


def test_tree_construction_errors_are_config_errors():
    root = Registry("hook", scope="core2")
    Registry("hook", parent=root, scope="taken")
    with pytest.raises(ConfigError, match="already has a child of scope 'taken'"):
        Registry("hook", parent=root, scope="taken")
    with pytest.raises(ConfigError, match="needs a scope"):
        Registry("hook", parent=root)
    with pytest.raises(ConfigError, match="force must be True or False"):
        root.register_module(force="yes")
    with pytest.raises(ConfigError, match="only callables"):
        root.register_module(module=3)
    with pytest.raises(ConfigError, match=r"write @register_module\(\) with parentheses"):
        root.register_module(type("Bare", (), {}))  # @root.register_module, no parentheses


def test_a_bare_name_built_with_another_scopes_arguments_names_that_scope():
    """A ported config's ``{"type": "EMAHook", "momentum": ...}`` builds the unscoped EMAHook;
    when the arguments are those of the same name in another scope, the error says which."""
    root = Registry("hook", scope="core")
    legacy = Registry("hook", parent=root, scope="legacy")
    loose = Registry("hook", parent=root, scope="loose")

    @root.register(name="Averager")
    def averager(decay=0.9):
        return ("core", decay)

    @loose.register(name="Averager")
    def loose_averager(**kwargs):
        return ("loose", kwargs)

    @legacy.register(name="Averager")
    def legacy_averager(momentum=0.1, warm_up=100):
        return ("legacy", momentum)

    with pytest.raises(ConfigError, match=r"unexpected argument\(s\) 'momentum'.*; legacy.Averager "
                                          r"takes these arguments: give \{'type': 'legacy.Averager'\}"):
        root.build({"type": "Averager", "momentum": 0.2})
    assert root.build({"type": "legacy.Averager", "momentum": 0.2}) == ("legacy", 0.2)
    with pytest.raises(ConfigError, match=r"'stride'.*; loose.Averager takes these arguments"):
        root.build({"type": "Averager", "stride": 2})  # only a **kwargs one takes it
    with pytest.raises(ConfigError, match=r"it accepts: decay$"):
        root.build({"type": "core.Averager", "stride": 2})  # a scoped name: no other scope


def test_a_scope_named_in_scope_modules_is_imported_from_there(tmp_path, monkeypatch):
    """``SCOPE_MODULES`` maps a scope to the module that makes its registries (how
    ``"mmengine.LinearLR"`` finds hookline's port): imported the first time the scope is named."""
    (tmp_path / "made_here.py").write_text(
        "from tests.core.test_registry import ROOT_FOR_SCOPES\n"
        "from hookline.core import Registry\n"
        "child = Registry('things', parent=ROOT_FOR_SCOPES, scope='elsewhere')\n"
        "child.register(len, name='Counter')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(SCOPE_MODULES, "elsewhere", "made_here")
    assert ROOT_FOR_SCOPES.get("elsewhere.Counter") is len


ROOT_FOR_SCOPES = Registry("things")
