"""The framing between the host and the session child: a one-line JSON header
``{"size": n, ...}`` then exactly *n* bytes of JSON body, in both directions.

Standard library only: the session child loads it beside ``runner.py``, the host as
``agents.sandbox.protocol``.
"""

from __future__ import annotations

import json
import os

MAX_HEADER_BYTES = 4096


def read_frame(stream):
    """One ``{"size": n, ...}\\n`` header line and its *n*-byte body; None at end of input."""
    line = stream.readline(MAX_HEADER_BYTES)
    if not line:
        return None, None
    header = json.loads(line)
    body = stream.read(header["size"]) if header["size"] else b""
    if len(body) != header["size"]:
        return None, None
    return header, body


def read_frame_fd(fd):
    """:func:`read_frame` from a file descriptor, unbuffered: it reads no byte past the
    frame's end (the host sends the next frame only after the answer), so another process
    can read the next frame from the same pipe. None, None at end of input."""
    buf = bytearray()
    while True:
        newline = buf.find(b"\n")
        if newline >= 0:
            break
        if len(buf) > MAX_HEADER_BYTES:
            raise ValueError("frame header too long")
        chunk = os.read(fd, 65536)
        if not chunk:
            return None, None
        buf += chunk
    header = json.loads(buf[:newline])
    size = header["size"]
    del buf[: newline + 1]
    while len(buf) < size:
        chunk = os.read(fd, size - len(buf))
        if not chunk:
            return None, None
        buf += chunk
    if len(buf) != size:
        raise ValueError("more than one frame")
    return header, bytes(buf)


def write_frame(fd, body, **header):
    header["size"] = len(body)
    data = memoryview(json.dumps(header).encode("ascii") + b"\n" + body)
    while data:
        data = data[os.write(fd, data) :]


def frame(body):
    """The frame the host sends: ``{"size": n}`` and *body*."""
    return b'{"size": %d}\n' % len(body) + body
