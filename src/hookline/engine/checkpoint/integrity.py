"""A checksum in every checkpoint file: the sha256 of its payload, kept in the zip's comment.

``torch.save`` writes a zip archive whose last record (the "end of central
directory") ends with a 2-byte comment length, always 0. A sealed file is that
payload with the length set and an 80-byte comment appended::

    payload[:-2]  |  comment length (2 bytes, 80)  |  b"hookline-sha256:" + 64 hex digits

where the digits are the sha256 of ``payload[:-2]``, i.e. of every byte before
the length field. A zip comment is ignored by every zip reader, ``torch.load``
(also with ``mmap=True``) included, so a sealed file loads anywhere; the seal
lives inside the one file that is written atomically, so it can never be out
of step with the data. :func:`verify_file` re-hashes the file (sha256 runs at
about 1.5 GB/s with the CPU's SHA instructions) and raises
:class:`~hookline.engine.checkpoint.CheckpointError` when a byte changed.
Files without a seal (written by earlier hookline versions, or re-saved with
``torch.save``) are reported as unsealed and load as before.

Example::

    >>> import io, tempfile, torch
    >>> from pathlib import Path
    >>> buffer = io.BytesIO(); torch.save({"w": torch.ones(2)}, buffer)
    >>> path = Path(tempfile.mkdtemp()) / "a.pth"
    >>> path.write_bytes(seal(buffer.getvalue())) > 0
    True
    >>> verify_file(path), torch.load(path, weights_only=True)["w"].sum().item()
    (True, 2.0)
    >>> data = bytearray(path.read_bytes()); data[100] ^= 1; _ = path.write_bytes(bytes(data))
    >>> try:
    ...     verify_file(path)
    ... except CheckpointError as exc:
    ...     print(exc.reason[:37])
    damaged: its sha256 checksum does not
"""

from __future__ import annotations

import hashlib
import struct
import threading
from pathlib import Path
from typing import IO

from .errors import CheckpointError, PathLike

#: The start of the comment that carries the checksum.
MARKER = b"hookline-sha256:"
_EOCD = b"PK\x05\x06"  # signature of the zip's end-of-central-directory record (22 bytes + comment)
_EOCD_SIZE = 22
_COMMENT_SIZE = len(MARKER) + 64
_TRAILER = _EOCD_SIZE + _COMMENT_SIZE
_CHUNK = 1 << 20
_PARALLEL = 4 << 20  # payloads from this size on are hashed on a thread while they are written


def _check_payload(payload: bytes | memoryview) -> None:
    if len(payload) < _EOCD_SIZE or bytes(payload[-_EOCD_SIZE:-_EOCD_SIZE + 4]) != _EOCD \
            or bytes(payload[-2:]) != b"\0\0":
        raise ValueError("seal: the payload is not a torch.save zip archive without a comment")


def write_sealed(stream: IO[bytes], payload: bytes) -> None:
    """Write ``payload`` (``torch.save`` bytes) to ``stream`` with its checksum, without copying it.

    From 4 MiB on, the hash is computed on a second thread while the bytes are
    written (both release the GIL), so a sealed write takes about as long as
    the slower of the two rather than their sum. Raises :class:`ValueError`
    for bytes that are not a ``torch.save`` zip.
    """
    _check_payload(payload)
    body = memoryview(payload)[:-2]
    if len(body) < _PARALLEL:
        digest = hashlib.sha256(body).hexdigest()
        stream.write(body)
    else:
        hasher = hashlib.sha256()
        thread = threading.Thread(target=hasher.update, args=(body,), name="hookline-sha256")
        thread.start()
        try:
            stream.write(body)
        finally:
            thread.join()
        digest = hasher.hexdigest()
    stream.write(struct.pack("<H", _COMMENT_SIZE) + MARKER + digest.encode("ascii"))


def seal(payload: bytes) -> bytes:
    """``payload`` with its checksum (a copy; :func:`write_sealed` writes without one).

    Example::

        >>> import io, torch
        >>> buffer = io.BytesIO(); torch.save([1], buffer)
        >>> seal(buffer.getvalue())[-80:-64]
        b'hookline-sha256:'
    """
    _check_payload(payload)
    digest = hashlib.sha256(memoryview(payload)[:-2]).hexdigest().encode("ascii")
    return payload[:-2] + struct.pack("<H", _COMMENT_SIZE) + MARKER + digest


def verify_file(path: PathLike) -> bool:
    """Check a file's checksum: True when it matches, False when the file has none.

    Raises :class:`CheckpointError` naming the file when the checksum does not
    match (a byte changed after the file was written: bit rot, a bad copy, an
    edit) or its checksum record is damaged. Reads the whole file once.

    Example::

        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "old.pth"
        >>> _ = path.write_bytes(b"no checksum here")
        >>> verify_file(path)
        False
    """
    path = Path(path)
    with open(path, "rb") as stream:
        size = stream.seek(0, 2)
        stream.seek(max(0, size - _TRAILER))
        tail = stream.read(_TRAILER)
        at = tail.rfind(_EOCD)
        if at < 0 or at + _EOCD_SIZE > len(tail):
            return False  # no zip end record: not a zip, or cut inside it (torch.load says which)
        declared = struct.unpack("<H", tail[at + _EOCD_SIZE - 2:at + _EOCD_SIZE])[0]
        comment = tail[at + _EOCD_SIZE:]
        if not (comment.startswith(MARKER) or (declared == _COMMENT_SIZE
                                                and MARKER.startswith(comment[:len(MARKER)]))):
            return False  # no comment (an unsealed file), or one hookline did not write
        if declared != _COMMENT_SIZE or len(comment) != _COMMENT_SIZE:
            raise CheckpointError(path, "truncated or corrupt (its checksum record, the last "
                                        f"{_COMMENT_SIZE} bytes, is cut short or damaged)")
        recorded = comment[len(MARKER):].decode("ascii", errors="replace")
        stream.seek(0)
        digest = hashlib.sha256()
        remaining = size - _COMMENT_SIZE - 2
        buffer = bytearray(_CHUNK)
        view = memoryview(buffer)
        while remaining > 0:
            count = stream.readinto(view[:min(_CHUNK, remaining)])
            if not count:
                break
            digest.update(view[:count])
            remaining -= count
    computed = digest.hexdigest()
    if computed != recorded:
        raise CheckpointError(path, f"damaged: its sha256 checksum does not match its content (recorded "
                                    f"{recorded[:12]}..., computed {computed[:12]}...); the file "
                                    "changed after hookline wrote it (bit rot, a bad copy or an edit)")
    return True
