"""ModelSummary and LayerRecord: what :func:`hookline.inspect.summary` returns, and its table.

Example::

    >>> from torch import nn
    >>> from hookline.inspect import summary
    >>> s = summary(nn.Sequential(nn.Linear(4, 8), nn.ReLU()), input_size=(2, 4))
    >>> s.total_params, s.total_flops, [layer.name for layer in s.layers]
    (40, 128, ['', '0', '1'])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._options import COLUMNS, DEFAULT_COLUMNS, NEED_FORWARD

_DASH = "--"


@dataclass
class LayerRecord:
    """One row of a summary: one call of a module (or a container that has no forward call).

    Attributes:
        name: the module's name in ``named_modules()`` (``""`` for the model).
        type_name: the module's class name.
        depth: the row's depth in the call tree (the model is 0).
        output_shape: the output's shape as a list of ints, a list of those for
            several tensors, or None (no tensor output, or a container row).
        params: parameters of the module and its children (each tensor once).
        trainable_params: those of ``params`` that require grad.
        own_params: parameters of the module that none of its child rows holds: its own,
            and those of children that never ran (the row's count when its children
            have rows, as torchinfo shows them, so the column adds up to the total).
        own_trainable: those of ``own_params`` that require grad.
        flops: FLOPs of this call including its children (``FlopCounterMode``: 2 per multiply-add).
        output_bytes: bytes of the output tensors that are new memory (not views or in-place results).
        reused: the module already ran earlier in this forward (a shared module).
        container: a module that never ran itself (ModuleList, ModuleDict) but whose children did.
        has_children: the module has submodules.
        input_shape: the shape(s) of the call's positional inputs (of its keyword ones when it had none).
        kernel_size: the module's ``kernel_size`` (conv and pooling layers), as a list or an int; else None.
        param_shapes: ``(name, shape, numel)`` of the module's parameters (its children's included,
            named ``child.weight``).
        param_sizes: ``id(parameter) -> (numel, trainable numel)`` of every parameter of ``params``
            (the table uses it to count a tied parameter in one row only).
        own_ids: the ids (keys of ``param_sizes``) of the parameters of ``own_params``.
    """

    name: str
    type_name: str
    depth: int
    output_shape: Any = None
    params: int = 0
    trainable_params: int = 0
    own_params: int = 0
    own_trainable: int = 0
    flops: int = 0
    output_bytes: int = 0
    reused: bool = False
    container: bool = False
    has_children: bool = False
    parent: LayerRecord | None = field(default=None, repr=False, compare=False)
    input_shape: Any = None
    kernel_size: Any = None
    param_shapes: list[tuple[str, list[int], int]] = field(default_factory=list, repr=False)
    param_sizes: dict[int, tuple[int, int]] = field(default_factory=dict, repr=False, compare=False)
    own_ids: frozenset[int] = field(default_factory=frozenset, repr=False, compare=False)

    @property
    def macs(self) -> int:
        """Multiply-accumulates: ``flops // 2``."""
        return self.flops // 2

    @property
    def label(self) -> str:
        """The last part of the name and the type, e.g. ``conv1 (Conv2d)``."""
        short = self.name.rsplit(".", 1)[-1]
        return f"{short} ({self.type_name})" if short else self.type_name

    # -- torchinfo's LayerInfo names, for code written against it ------------------------------
    @property
    def class_name(self) -> str:
        """torchinfo's name for :attr:`type_name`."""
        return self.type_name

    @property
    def var_name(self) -> str:
        """The last part of :attr:`name` (torchinfo's attribute name of the module; the
        model's class name for the model's row, as torchinfo gives it)."""
        return self.name.rsplit(".", 1)[-1] or self.type_name

    @property
    def num_params(self) -> int:
        """torchinfo's name for :attr:`params`."""
        return self.params

    @property
    def output_size(self) -> Any:
        """torchinfo's name for :attr:`output_shape`."""
        return self.output_shape

    @property
    def input_size(self) -> Any:
        """torchinfo's name for :attr:`input_shape`."""
        return self.input_shape

    @property
    def is_recursive(self) -> bool:
        """torchinfo's name for :attr:`reused`."""
        return self.reused

    @property
    def trainable(self) -> str:
        """torchinfo's ``"True"``, ``"False"``, ``"Partial"`` or ``"--"`` (no parameters)."""
        if not self.params:
            return _DASH
        if self.trainable_params == self.params:
            return "True"
        return "False" if not self.trainable_params else "Partial"


def readable(num: float, unit: str = "") -> str:
    """``1234567`` -> ``"1.23 M"`` (K, M, G, T)."""
    for suffix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(num) >= scale:
            return f"{num / scale:.2f} {suffix}{unit}"
    return f"{num:g} {unit}".rstrip()


def _shape_text(shape: Any, limit: int = 36) -> str:
    if shape is None:
        return _DASH
    several = bool(shape) and isinstance(shape[0], list)
    text = ", ".join(str(s) for s in shape) if several else str(shape)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _num(n: int) -> str:
    return f"{n:,}" if n else _DASH


@dataclass
class ModelSummary:
    """The result of :func:`~hookline.inspect.summary`; ``str()`` gives the table.

    Attributes:
        model_name: the model's class name.
        layers: the rows of the table (records down to ``depth``), in call order.
        total_params: parameters of the model, each tensor counted once (tied
            or shared weights included once).
        trainable_params: those that require grad.
        total_flops: FLOPs of the whole forward (``FlopCounterMode``, 2 per
            multiply-add; includes functional ops such as matmul and attention).
        param_bytes: bytes of the parameters.
        input_bytes: bytes of the inputs.
        activation_bytes: an estimate of activation memory: the bytes of every
            output of a leaf module in one forward that is new memory (views and
            in-place results are not counted twice). Training keeps roughly this
            much alive for backward.
        depth: the depth the table shows.
        forward: whether a forward pass ran. Without one (``summary(model)``
            with no input) the rows have no output shapes and no FLOPs.
        uninitialized: names of parameters not counted because they are
            uninitialized (a lazy module such as ``nn.LazyLinear`` before its
            first forward pass).
        columns: the table's columns (torchinfo's ``col_names``; see ``_options.COLUMNS``).
        row_settings: torchinfo's ``row_settings`` (None: rows labelled ``name (Type)``).
        verbose: 2 adds a row per parameter under its layer (torchinfo's ``verbose=2``).
    """

    model_name: str
    layers: list[LayerRecord]
    total_params: int
    trainable_params: int
    total_flops: int
    param_bytes: int
    input_bytes: int
    activation_bytes: int
    depth: int
    all_layers: list[LayerRecord] = field(default_factory=list, repr=False)
    forward: bool = True
    uninitialized: list[str] = field(default_factory=list)
    columns: tuple[str, ...] = DEFAULT_COLUMNS
    row_settings: tuple[str, ...] | None = None
    verbose: int = 1

    @property
    def total_macs(self) -> int:
        """Multiply-accumulates of the forward: ``total_flops // 2``."""
        return self.total_flops // 2

    @property
    def non_trainable_params(self) -> int:
        return self.total_params - self.trainable_params

    # -- torchinfo's ModelStatistics names, for code written against it -------------------------
    @property
    def summary_list(self) -> list[LayerRecord]:
        """Every row, whatever ``depth`` shows (torchinfo's ``summary_list``)."""
        return self.all_layers or self.layers

    @property
    def total_mult_adds(self) -> int:
        """torchinfo's name for :attr:`total_macs`."""
        return self.total_macs

    @property
    def total_input(self) -> int:
        """torchinfo's name for :attr:`input_bytes`."""
        return self.input_bytes

    @property
    def total_param_bytes(self) -> int:
        """torchinfo's name for :attr:`param_bytes`."""
        return self.param_bytes

    @property
    def total_output_bytes(self) -> int:
        """torchinfo's forward/backward estimate: twice :attr:`activation_bytes`."""
        return 2 * self.activation_bytes

    @property
    def total_bytes(self) -> int:
        """Input, activation-estimate and parameter bytes together."""
        return self.input_bytes + self.activation_bytes + self.param_bytes

    @staticmethod
    def _param_cells(row: LayerRecord, expanded: bool, counted: set[int]) -> tuple[int, int, bool] | None:
        """Parameters, trainable ones, and whether some are tied, shown for ``row``.

        None: a reused module, counted where it ran. A parameter already in ``counted`` (shown in
        an earlier row: a tied weight) is left out and marks the row tied; the row's own are added.
        """
        if row.reused and row.params:
            return None
        if not row.param_sizes:  # built by hand: the plain counts
            return (row.own_params, row.own_trainable, False) if expanded else \
                (row.params, row.trainable_params, False)
        ids = row.own_ids if expanded else row.param_sizes.keys()
        new = [i for i in ids if i not in counted]
        counted.update(new)
        chosen = [row.param_sizes[i] for i in new]
        return sum(n for n, _ in chosen), sum(t for _, t in chosen), len(new) < len(ids)

    def _cell(self, column: str, row: LayerRecord, counts: tuple[int, int, bool] | None,
              expanded: bool = False) -> str:
        if column in ("num_params", "trainable_params", "params_percent") and counts is None:
            return "(reused)"
        if counts and counts[2] and column in ("num_params", "trainable_params"):
            count = counts[0] if column == "num_params" else counts[1]
            return f"{count:,} (+tied)" if count else "(tied)"  # the rest counted in an earlier row
        if column == "num_params":  # torchinfo's: a frozen layer's count in parentheses
            if counts and counts[0] and not counts[1] and not expanded:
                return f"({counts[0]:,})"
            return _num(counts[0]) if counts else _DASH
        if column == "trainable_params":
            return _num(counts[1]) if counts else _DASH
        if column == "params_percent":
            share = counts[0] / self.total_params if counts and self.total_params else 0.0
            return f"{100 * share:.2f}%" if share else _DASH
        if column == "trainable":  # torchinfo's: of all the module's parameters
            return row.trainable
        if column == "kernel_size":
            return _DASH if row.kernel_size is None else str(row.kernel_size)
        if column == "input_size":
            return _shape_text(row.input_shape)
        if column == "output_size":
            return _shape_text(row.output_shape)
        return _num(row.macs if column == "mult_adds" else row.flops)

    def _label(self, row: LayerRecord, index: dict[int, str]) -> str:
        settings = self.row_settings
        label = row.label if settings is None or "var_names" in settings else row.type_name
        if settings is not None and "depth" in settings and row.depth:
            label += f": {index[id(row)]}"
        return label

    def _visible(self, hide_recursive: bool) -> list[LayerRecord]:
        """The rows shown. ``hide_recursive``: no rows for a module's later calls, except those
        with a shown row under them (a container's next stretch), so every row stays under its own.
        """
        if not hide_recursive:
            return list(self.layers)
        keep: set[int] = set()
        for row in reversed(self.layers):  # children come after their parent
            if not row.reused or id(row) in keep:
                keep.add(id(row))
                if row.parent is not None:
                    keep.add(id(row.parent))
        return [r for r in self.layers if id(r) in keep]

    def table(self, ascii_only: bool = False) -> str:
        """The summary as text, like torchinfo's (``columns``, ``row_settings`` and ``verbose`` apply)."""
        settings = self.row_settings or ()
        ascii_only = ascii_only or "ascii_only" in settings
        layers = self._visible("hide_recursive_layers" in settings)
        shown_parents = {id(r.parent) for r in layers if r.parent is not None}
        seen: dict[int, int] = {}
        index: dict[int, str] = {}
        for record in self.all_layers or self.layers:  # torchinfo's depth-idx: call order within a depth
            seen[record.depth] = seen.get(record.depth, 0) + 1
            index[id(record)] = f"{record.depth}-{seen[record.depth]}"
        branch, last = ("|-", "`-") if ascii_only else ("├─", "└─")
        pipe = "| " if ascii_only else "│ "
        naming = "name (type)" if self.row_settings is None or "var_names" in settings else "type"
        depth_idx = ":depth-idx" if "depth" in settings else ""
        columns = self.columns if self.forward else tuple(c for c in self.columns if c not in NEED_FORWARD)
        header = (f"Layer ({naming}{depth_idx})", *(COLUMNS[c] for c in columns))
        rows: list[tuple[str, ...]] = []
        counted: set[int] = set()  # parameters shown in a row above
        for row in layers:
            indent = (pipe + "   ") * max(row.depth - 1, 0) + (branch if row.depth == 1 else last)
            expanded = id(row) in shown_parents
            counts = self._param_cells(row, expanded, counted)
            rows.append(((indent if row.depth else "") + self._label(row, index),
                         *(self._cell(c, row, counts, expanded) for c in columns)))
            if self.verbose == 2 and not row.reused:  # own parameters; children's when they have no rows
                inner = (pipe + "   ") * row.depth + last
                for name, shape, numel in row.param_shapes:
                    if "." in name and id(row) in shown_parents:
                        continue
                    rows.append((f"{inner}{name} {shape}",
                                 *(_num(numel) if c == "num_params" else "" for c in columns)))
        widths = [max(len(h), *(len(r[i]) for r in rows)) + 2 for i, h in enumerate(header)]
        widths[0] = max(widths[0], 40)

        def line(cells: tuple[str, ...]) -> str:
            first = cells[0].ljust(widths[0])
            rest = "".join(c.rjust(w) for c, w in zip(cells[1:], widths[1:]))
            return (first + rest).rstrip()

        rule = "=" * sum(widths)
        mb = 1e6
        totals = [f"Total params: {self.total_params:,}",
                  f"Trainable params: {self.trainable_params:,}",
                  f"Non-trainable params: {self.non_trainable_params:,}"]
        if self.uninitialized:
            shown = ", ".join(self.uninitialized[:5]) + (", ..." if len(self.uninitialized) > 5 else "")
            totals.append(f"Uninitialized (lazy) params, not counted: {shown}")
        if not self.forward:
            totals.append("Parameters only: no forward pass (input_size or input_data give shapes and FLOPs)")
            return "\n".join([rule, line(header), rule, *(line(r) for r in rows), rule, *totals,
                              f"Params size (MB): {self.param_bytes / mb:.2f}", rule])
        parts = [rule, line(header), rule, *(line(r) for r in rows), rule, *totals,
                 f"Total FLOPs: {self.total_flops:,} ({readable(self.total_flops, 'FLOPs')}, "
                 f"{readable(self.total_macs, 'MACs')})",
                 rule,
                 f"Input size (MB): {self.input_bytes / mb:.2f}",
                 f"Forward activations, estimate (MB): {self.activation_bytes / mb:.2f}",
                 f"Params size (MB): {self.param_bytes / mb:.2f}",
                 f"Estimated total size (MB): {self.total_bytes / mb:.2f}",
                 rule]
        return "\n".join(parts)

    def __str__(self) -> str:
        return self.table()
