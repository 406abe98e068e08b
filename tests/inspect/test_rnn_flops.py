"""Recurrent layers' FLOPs against a hand count, on every path torch takes on the CPU.

fp32 LSTMs run ``aten.mkldnn_rnn_layer`` (no FlopCounterMode formula: 0 before
hookline added one); other dtypes, projections and packed sequences are
decomposed into ``addmm``. Both must give the hand count: per time step and
sequence, ``gates * H * (input + hidden)`` multiply-adds per layer and
direction, plus ``H * P`` for an LSTM's projection.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from hookline.inspect import summary
from hookline.inspect._flops import _cudnn_rnn_flops, flop_counter

GATES = {nn.LSTM: 4, nn.GRU: 3, nn.RNN: 1}


def hand_macs(rnn: nn.RNNBase, rows: int) -> int:
    """Multiply-adds of ``rnn`` over ``rows`` (time steps x sequences), counted by hand."""
    gates, hidden, proj = GATES[type(rnn)], rnn.hidden_size, getattr(rnn, "proj_size", 0)
    directions = 2 if rnn.bidirectional else 1
    state = proj or hidden
    total, width = 0, rnn.input_size
    for _ in range(rnn.num_layers):
        per_direction = gates * hidden * (width + state) + hidden * proj
        total += directions * per_direction
        width = directions * state
    return total * rows


def counted(module: nn.Module, *inputs) -> int:
    with torch.no_grad(), flop_counter() as counter:
        module(*inputs)
    return counter.get_total_flops()


CASES = [
    ("lstm", lambda: nn.LSTM(12, 16)),
    ("lstm 2 layers bidirectional", lambda: nn.LSTM(12, 16, num_layers=2, bidirectional=True)),
    ("lstm projection", lambda: nn.LSTM(12, 16, num_layers=2, proj_size=5)),
    ("lstm bidirectional projection", lambda: nn.LSTM(12, 16, num_layers=2, bidirectional=True, proj_size=5)),
    ("lstm no bias", lambda: nn.LSTM(12, 16, bias=False)),
    ("gru", lambda: nn.GRU(12, 16, num_layers=3)),
    ("gru bidirectional", lambda: nn.GRU(12, 16, bidirectional=True)),
    ("rnn tanh", lambda: nn.RNN(12, 16, num_layers=2)),
    ("rnn relu bidirectional", lambda: nn.RNN(12, 16, nonlinearity="relu", bidirectional=True)),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
@pytest.mark.parametrize("name, build", CASES, ids=[c[0] for c in CASES])
def test_padded_batches_match_the_hand_count(name, build, dtype):
    rnn = build().to(dtype)
    x = torch.randn(7, 3, 12, dtype=dtype)                # (T, B, I)
    assert counted(rnn, x) == 2 * hand_macs(rnn, 7 * 3)
    batch_first = type(rnn)(12, 16, batch_first=True).to(dtype)
    assert counted(batch_first, x.transpose(0, 1)) == 2 * hand_macs(batch_first, 21)


@pytest.mark.parametrize("name, build", CASES, ids=[c[0] for c in CASES])
def test_packed_sequences_count_only_the_real_steps(name, build):
    rnn = build()
    lengths = torch.tensor([7, 4, 2])
    packed = pack_padded_sequence(torch.randn(7, 3, 12), lengths)
    assert counted(rnn, packed) == 2 * hand_macs(rnn, int(lengths.sum()))


def test_the_float32_cpu_lstm_takes_the_kernel_flop_counter_mode_cannot_count():
    from torch.utils.flop_counter import FlopCounterMode  # noqa: PLC0415

    lstm = nn.LSTM(12, 16)
    with torch.no_grad(), FlopCounterMode(display=False) as plain:
        lstm(torch.randn(7, 3, 12))
    assert plain.get_total_flops() == 0                    # what summary() reported before
    assert counted(lstm, torch.randn(7, 3, 12)) == 2 * hand_macs(lstm, 21)


def test_torchinfo_lstm_net_in_summary():
    """torchinfo's LSTMNet: embedding, 2-layer LSTM 300 -> 512, decoder; 377,036,800 MACs by hand."""
    class LSTMNet(nn.Module):
        def __init__(self, vocab_size=20, embed_dim=300, hidden_dim=512, num_layers=2):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, embed_dim)
            self.encoder = nn.LSTM(embed_dim, hidden_dim, num_layers=num_layers, batch_first=True)
            self.decoder = nn.Linear(hidden_dim, vocab_size)

        def forward(self, x):
            out, hidden = self.encoder(self.embedding(x))
            return self.decoder(out), hidden

    s = summary(LSTMNet(), input_size=(1, 100), dtypes=torch.long)
    assert s.total_macs == 377_036_800
    encoder = next(layer for layer in s.layers if layer.name == "encoder")
    assert encoder.macs == hand_macs(nn.LSTM(300, 512, num_layers=2), 100) == 376_012_800


@pytest.mark.parametrize("name, build", CASES, ids=[c[0] for c in CASES])
def test_the_cudnn_formula_on_the_arguments_cudnn_gets(name, build):
    """``aten._cudnn_rnn`` takes the flat weight list (and batch_sizes when packed): no GPU needed."""
    rnn = build()
    weights = [w.shape for w in rnn._flat_weights]        # noqa: SLF001 - what nn.RNNBase passes
    hx = torch.Size([rnn.num_layers * (2 if rnn.bidirectional else 1), 3, 16])
    args = (4, None, hx, None, 2, 16, getattr(rnn, "proj_size", 0), rnn.num_layers, False, 0.0, False,
            rnn.bidirectional)
    assert _cudnn_rnn_flops(torch.Size([7, 3, 12]), weights, *args, [], None) == 2 * hand_macs(rnn, 21)
    packed_rows = [3, 3, 2, 2, 1, 1, 1]
    assert _cudnn_rnn_flops(torch.Size([13, 12]), weights, *args, packed_rows, None) == 2 * hand_macs(rnn, 13)
