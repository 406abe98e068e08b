"""Checkpoint I/O with real files: atomic saves, safe loads, resumable search."""

from __future__ import annotations

import collections
import io
import logging
import os
import pickle
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from hookline.engine import checkpoint as ckpt_mod
from hookline.engine.checkpoint import (
    LATEST_FILENAME,
    CheckpointError,
    CheckpointNotFoundError,
    CheckpointWriteError,
    CheckpointWriter,
    check_weights_only,
    find_resumable,
    load_checkpoint_file,
    make_meta,
    read_latest,
    save_atomic,
    serialize,
    to_plain,
    write_latest,
)
from hookline.engine.checkpoint.integrity import seal, write_sealed


class Custom:
    """A class that weights_only loading refuses."""

    def __init__(self) -> None:
        self.value = 3


def make_ckpt(iteration: int, epoch: int = 0) -> dict:
    return {
        "meta": make_meta(epoch=epoch, iteration=iteration),
        "model": collections.OrderedDict(w=torch.full((4,), float(iteration))),
        "optimizer": {"state": {}, "param_groups": [{"lr": 0.1, "params": [0]}]},
    }


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# --------------------------------------------------------------------------- save_atomic


def test_save_atomic_round_trip_and_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "deeper" / "iter_10.pth"
    out = save_atomic(make_ckpt(10), target)
    assert out == target and target.is_file()
    assert leftovers(target.parent) == []
    loaded = load_checkpoint_file(target)
    assert loaded["meta"]["iter"] == 10
    assert torch.equal(loaded["model"]["w"], torch.full((4,), 10.0))
    # overwrite in place: still no temp files, new content
    save_atomic(make_ckpt(11), target)
    assert leftovers(target.parent) == []
    assert load_checkpoint_file(target)["meta"]["iter"] == 11


def test_save_atomic_respects_umask(tmp_path: Path) -> None:
    if os.name == "nt":
        pytest.skip("POSIX permissions")
    old = os.umask(0o027)
    try:
        path = save_atomic(make_ckpt(1), tmp_path / "a.pth")
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o640


def test_crash_during_save_keeps_previous_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "model.pth"
    save_atomic(make_ckpt(1), target)
    before = target.read_bytes()
    real_save = torch.save

    def half_then_crash(obj, f, *args, **kwargs):
        buffer = io.BytesIO()
        real_save(obj, buffer, *args, **kwargs)
        data = buffer.getvalue()
        f.write(data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", half_then_crash)
    with pytest.raises(OSError, match="No space left"):
        save_atomic(make_ckpt(2), target)
    monkeypatch.undo()

    assert target.read_bytes() == before
    assert load_checkpoint_file(target)["meta"]["iter"] == 1
    assert leftovers(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.pth"]


def test_interrupt_during_save_removes_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(obj, f, *args, **kwargs):
        f.write(b"PK\x03\x04 partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save_atomic(make_ckpt(2), tmp_path / "new.pth")
    assert list(tmp_path.iterdir()) == []


def test_save_atomic_refuses_what_weights_only_would_refuse(tmp_path: Path) -> None:
    bad = make_ckpt(1)
    bad["hooks"] = [{"best": np.float64(0.5)}]
    with pytest.raises(TypeError, match=r"checkpoint\['hooks'\]\[0\]\['best'\] is a numpy.float64"):
        save_atomic(bad, tmp_path / "a.pth")
    assert list(tmp_path.iterdir()) == []
    # check=False writes it anyway; loading then fails with a CheckpointError
    save_atomic(bad, tmp_path / "a.pth", check=False)
    with pytest.raises(CheckpointError, match="numpy"):
        load_checkpoint_file(tmp_path / "a.pth")


def test_check_weights_only_agrees_with_torch_load(tmp_path: Path) -> None:
    accepted = [
        None,
        True,
        3,
        2.5,
        1 + 2j,
        "s",
        b"b",
        bytearray(b"x"),
        torch.Size([2]),
        torch.device("cpu"),
        torch.float16,
        collections.OrderedDict(a=1),
        collections.Counter("ab"),
        [1, (2, {3})],
        torch.nn.Parameter(torch.ones(2)),
        torch.zeros(2, dtype=torch.uint32),
    ]
    refused = [np.zeros(2), np.int64(1), frozenset([1]), collections.defaultdict(int), slice(1, 2), Custom()]
    for value in accepted:
        check_weights_only({"v": value})
        torch.save({"v": value}, tmp_path / "x.pth")
        torch.load(tmp_path / "x.pth", weights_only=True)
    for value in refused:
        with pytest.raises(TypeError, match="refuses"):
            check_weights_only({"v": value})
        torch.save({"v": value}, tmp_path / "x.pth")
        with pytest.raises(pickle.UnpicklingError):
            torch.load(tmp_path / "x.pth", weights_only=True)


def test_check_weights_only_handles_cycles_and_keys() -> None:
    loop: list = [1]
    loop.append(loop)
    check_weights_only(loop)
    with pytest.raises(TypeError, match="key"):
        check_weights_only({np.int64(1): 2})


def test_to_plain_converts_numpy() -> None:
    state = ("MT19937", np.arange(4, dtype=np.uint32), np.int64(2), {"x": [np.float32(1.5)]})
    plain = to_plain(state)
    check_weights_only(plain)
    assert plain[0] == "MT19937"
    assert plain[1].dtype == torch.uint32 and plain[1].tolist() == [0, 1, 2, 3]
    assert plain[2] == 2 and type(plain[2]) is int
    assert plain[3] == {"x": [1.5]}
    with pytest.raises(TypeError, match="dtype=object"):
        to_plain(np.array([object()]))


# --------------------------------------------------------------------------- load_checkpoint_file


def test_truncated_file_names_the_file(tmp_path: Path) -> None:
    path = save_atomic(make_ckpt(5), tmp_path / "iter_5.pth")
    data = path.read_bytes()
    for cut in (10, len(data) // 2, len(data) - 10):
        path.write_bytes(data[:cut])
        with pytest.raises(CheckpointError) as info:
            load_checkpoint_file(path)
        assert str(path) in str(info.value)
        assert "truncated or corrupt" in info.value.reason
        assert info.value.path == path
        # cut inside the checksum record (the file's last 80 bytes): hookline's own finding
        assert info.value.__cause__ is not None or "checksum record" in info.value.reason


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.pth"
    path.touch()
    with pytest.raises(CheckpointError, match=r"empty\.pth.*empty file"):
        load_checkpoint_file(path)


def test_missing_file_is_both_checkpoint_and_file_not_found_error(tmp_path: Path) -> None:
    path = tmp_path / "nope.pth"
    with pytest.raises(CheckpointNotFoundError) as info:
        load_checkpoint_file(path)
    assert isinstance(info.value, CheckpointError) and isinstance(info.value, FileNotFoundError)
    assert str(info.value) == f"cannot load checkpoint {str(path)!r}: no such file"
    assert info.value.filename == str(path)


def test_directory_is_not_a_checkpoint(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="directory"):
        load_checkpoint_file(tmp_path)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (torch.ones(3), "holds a Tensor, not a dict"),
        ({"state_dict": {"w": torch.ones(1)}}, "no 'meta' dict"),
        ({"meta": {"epoch": 1}, "state_dict": {}}, "no 'hookline_version'"),
        ([1, 2], "holds a list"),
    ],
)
def test_foreign_torch_files(tmp_path: Path, content: object, reason: str) -> None:
    path = tmp_path / "foreign.pth"
    torch.save(content, path)
    with pytest.raises(CheckpointError, match="not a hookline checkpoint") as info:
        load_checkpoint_file(path)
    assert reason in info.value.reason
    assert "foreign.pth" in str(info.value)


def test_custom_class_refused_by_weights_only(tmp_path: Path) -> None:
    path = tmp_path / "custom.pth"
    torch.save({"meta": make_meta(0, 0), "thing": Custom()}, path)
    with pytest.raises(CheckpointError) as info:
        load_checkpoint_file(path)
    assert "custom.pth" in str(info.value)
    assert "Custom" in info.value.reason and "weights_only" in info.value.reason
    assert isinstance(info.value.__cause__, pickle.UnpicklingError)


@pytest.mark.filterwarnings("ignore:Detected pickle protocol:UserWarning")
def test_plain_pickle_and_text_files(tmp_path: Path) -> None:
    pkl = tmp_path / "plain.pkl"
    pkl.write_bytes(pickle.dumps({"meta": {"hookline_version": "0"}}))
    text = tmp_path / "notes.pth"
    text.write_text("hello, not a checkpoint")
    for path in (pkl, text):
        with pytest.raises(CheckpointError, match=path.name):
            load_checkpoint_file(path)


def test_required_keys(tmp_path: Path) -> None:
    path = save_atomic(make_ckpt(1), tmp_path / "a.pth")
    assert set(load_checkpoint_file(path, required_keys=["model", "optimizer"])) >= {"model", "optimizer"}
    with pytest.raises(CheckpointError, match="missing keys: 'scheduler'"):
        load_checkpoint_file(path, required_keys=["model", "scheduler"])


def test_mmap_load_and_legacy_format(tmp_path: Path) -> None:
    path = save_atomic(make_ckpt(3), tmp_path / "a.pth")
    assert load_checkpoint_file(path, mmap=True)["meta"]["iter"] == 3
    legacy = tmp_path / "legacy.pth"
    torch.save(make_ckpt(4), legacy, _use_new_zipfile_serialization=False)
    assert load_checkpoint_file(legacy, mmap=True)["meta"]["iter"] == 4


def test_checkpoint_error_pickles() -> None:
    err = pickle.loads(pickle.dumps(CheckpointError("a.pth", "truncated")))
    assert isinstance(err, CheckpointError) and err.reason == "truncated" and str(err).startswith("cannot")
    nf = pickle.loads(pickle.dumps(CheckpointNotFoundError("b.pth")))
    assert isinstance(nf, FileNotFoundError) and "b.pth" in str(nf)


# --------------------------------------------------------------------------- latest pointer


def test_latest_pointer_round_trip(tmp_path: Path) -> None:
    assert read_latest(tmp_path) is None
    pointer = write_latest(tmp_path, "epoch_2.pth")
    assert pointer == tmp_path / LATEST_FILENAME
    assert pointer.read_text() == "epoch_2.pth\n"
    assert read_latest(tmp_path) == tmp_path / "epoch_2.pth"
    # absolute paths inside the folder are stored relative; subfolders allowed
    write_latest(tmp_path, (tmp_path / "best" / "model.pth").absolute())
    assert pointer.read_text() == "best/model.pth\n"
    assert read_latest(tmp_path) == tmp_path / "best" / "model.pth"
    assert leftovers(tmp_path) == []


def test_latest_pointer_rejects_outside_paths(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not inside"):
        write_latest(tmp_path / "a", tmp_path / "b" / "x.pth")
    with pytest.raises(ValueError, match="does not name a file"):
        write_latest(tmp_path, "../x.pth")
    (tmp_path / LATEST_FILENAME).write_text("../../etc/passwd\n")
    with pytest.raises(CheckpointError, match="relative file name"):
        read_latest(tmp_path)
    (tmp_path / LATEST_FILENAME).write_bytes(b"\xff\xfe\x00")
    with pytest.raises(CheckpointError, match="unreadable"):
        read_latest(tmp_path)
    (tmp_path / LATEST_FILENAME).write_bytes(b"epoch_3.pth\x00")  # junk a crash left
    with pytest.raises(CheckpointError, match="relative file name"):
        read_latest(tmp_path)
    (tmp_path / LATEST_FILENAME).write_text("  \n")
    assert read_latest(tmp_path) is None


# --------------------------------------------------------------------------- find_resumable


def _set_mtime(path: Path, seconds_ago: float) -> None:
    t = time.time() - seconds_ago
    os.utime(path, (t, t))


def test_find_resumable_empty_and_missing(tmp_path: Path) -> None:
    assert find_resumable(tmp_path) is None
    assert find_resumable(tmp_path / "does-not-exist") is None


def test_find_resumable_uses_latest_pointer(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    save_atomic(make_ckpt(10), tmp_path / "iter_10.pth")
    save_atomic(make_ckpt(20), tmp_path / "iter_20.pth")
    write_latest(tmp_path, "iter_10.pth")  # the pointer wins when it loads
    with caplog.at_level(logging.WARNING, logger="hookline"):
        path, loaded = find_resumable(tmp_path)
    assert path == tmp_path / "iter_10.pth" and loaded["meta"]["iter"] == 10
    assert caplog.records == []


def test_find_resumable_falls_back_from_truncated_newest(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    save_atomic(make_ckpt(10), tmp_path / "iter_10.pth")
    newest = save_atomic(make_ckpt(20), tmp_path / "iter_20.pth")
    write_latest(tmp_path, newest.name)
    data = newest.read_bytes()
    newest.write_bytes(data[: len(data) // 2])
    (tmp_path / ".iter_30.pth.abc123.tmp").write_bytes(b"half a save")  # an interrupted save: ignored
    (tmp_path / "notes.txt").write_text("not a checkpoint")

    with caplog.at_level(logging.WARNING, logger="hookline"):
        found = find_resumable(tmp_path)
    assert found is not None
    path, loaded = found
    assert path == tmp_path / "iter_10.pth"
    assert loaded["meta"]["iter"] == 10
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "iter_20.pth" in warnings[0] and "truncated" in warnings[0]


def test_find_resumable_without_pointer_orders_by_iter_then_mtime(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    a = save_atomic(make_ckpt(30), tmp_path / "a.pth")
    b = save_atomic(make_ckpt(20), tmp_path / "b.pth")
    c = save_atomic(make_ckpt(30), tmp_path / "c.pth")
    _set_mtime(a, 10)  # same iter as c but older
    _set_mtime(b, 0)  # newest on disk but a lower iter
    _set_mtime(c, 5)
    torch.save({"state_dict": {}}, tmp_path / "foreign.pth")
    (tmp_path / "empty.pth").touch()
    (tmp_path / "dir.pth").mkdir()

    logger = logging.getLogger("my.runner")
    with caplog.at_level(logging.WARNING, logger="my.runner"):
        path, loaded = find_resumable(tmp_path, logger=logger)
    assert path == c and loaded["meta"]["iter"] == 30
    messages = [r.getMessage() for r in caplog.records if r.name == "my.runner"]
    assert any("foreign.pth" in m and "not a hookline checkpoint" in m for m in messages)
    assert any("empty.pth" in m and "empty file" in m for m in messages)
    assert len(messages) == 2


def test_find_resumable_pointer_to_missing_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    save_atomic(make_ckpt(5), tmp_path / "iter_5.pth")
    write_latest(tmp_path, "iter_9.pth")
    with caplog.at_level(logging.WARNING, logger="hookline"):
        path, _ = find_resumable(tmp_path)
    assert path.name == "iter_5.pth"
    assert any("iter_9.pth" in r.getMessage() and "no such file" in r.getMessage() for r in caplog.records)


def test_find_resumable_none_when_all_broken(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "a.pth").write_bytes(b"garbage")
    torch.save(torch.ones(1), tmp_path / "b.pth")
    with caplog.at_level(logging.WARNING, logger="hookline"):
        assert find_resumable(tmp_path) is None
    assert len(caplog.records) == 2


def test_find_resumable_map_location(tmp_path: Path) -> None:
    save_atomic(make_ckpt(1), tmp_path / "a.pth")
    _, loaded = find_resumable(tmp_path, map_location=torch.device("cpu"))
    assert loaded["model"]["w"].device.type == "cpu"


def test_module_exports() -> None:
    for name in ckpt_mod.__all__:
        assert hasattr(ckpt_mod, name)


@pytest.mark.parametrize(("payload", "shown"), [(exec, "holds an exec object"),
                                                 (os.system, f"holds a {os.name}.system object")])
def test_a_pickled_function_is_named_with_the_right_article(tmp_path: Path, payload, shown) -> None:
    path = tmp_path / "evil.pth"
    torch.save({"meta": make_meta(0, 0), "x": payload}, path)
    with pytest.raises(CheckpointError, match=shown):
        load_checkpoint_file(path)


# --------------------------------------------------------------------------- checksum, writer


def test_the_checksum_seal_is_for_torch_zip_payloads_only(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a torch.save zip"):
        seal(b"plain bytes")
    with pytest.raises(ValueError, match="not a torch.save zip"), open(tmp_path / "x", "wb") as out:
        write_sealed(out, b"PK\x05\x06" + b"\0" * 16 + b"\x01\0" + b"!")  # has a comment already
    buffer = io.BytesIO()
    torch.save({"w": torch.arange(3)}, buffer)
    (tmp_path / "a.pth").write_bytes(seal(buffer.getvalue()))
    assert torch.load(tmp_path / "a.pth", weights_only=True, mmap=True)["w"].tolist() == [0, 1, 2]


def test_a_zip_with_a_comment_of_its_own_is_not_taken_for_a_sealed_file(tmp_path: Path) -> None:
    path = tmp_path / "other.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("a.txt", "hello")
        archive.comment = b"written by another tool"
    assert ckpt_mod.verify_file(path) is False


def test_a_failed_background_write_skips_the_deletions_queued_after_it(tmp_path: Path) -> None:
    keep = tmp_path / "epoch_1.pth"
    save_atomic(make_ckpt(1), keep)
    (tmp_path / "not_a_folder").write_text("a file")
    writer = CheckpointWriter()
    writer.write(tmp_path / "not_a_folder" / "epoch_2.pth", serialize(make_ckpt(2)))
    writer.remove(keep)  # keep-N's deletion, due only once epoch_2.pth is written
    with pytest.raises(CheckpointWriteError, match="epoch_2.pth"):
        writer.flush()
    assert keep.exists()
    writer.remove(keep)  # after the failure was reported, the writer works again
    writer.flush()
    assert not keep.exists()


def writer_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "hookline-checkpoints"}


def test_close_writes_everything_and_ends_the_thread(tmp_path: Path) -> None:
    before = writer_threads()
    writer = CheckpointWriter()
    writer.write(tmp_path / "epoch_1.pth", serialize(make_ckpt(1)))
    assert writer_threads() - before  # writing runs on a thread of its own
    writer.close()
    assert load_checkpoint_file(tmp_path / "epoch_1.pth")["meta"]["iter"] == 1
    assert writer_threads() <= before
    writer.write(tmp_path / "epoch_2.pth", serialize(make_ckpt(2)))  # a new thread starts
    writer.close()
    assert read_latest(tmp_path) == tmp_path / "epoch_2.pth"
    writer.close()  # nothing running: nothing to do


def test_a_large_checkpoint_is_hashed_while_it_is_written(tmp_path: Path) -> None:
    path = save_atomic({"w": torch.arange(2_000_000, dtype=torch.float32)}, tmp_path / "big.pth")
    assert path.stat().st_size > 4 << 20  # hashed on a second thread
    assert ckpt_mod.verify_file(path) is True
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 4
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="checksum does not match"):
        load_checkpoint_file(path)
