"""The files of the simulator protocol (docs/simulator-protocol.md), as bytes in and out.

Version 1: a case file (``SL1C``) and its results file (``SL1R``, perhaps followed by a memory
report, ``SL1M``). Version 2: a batch file (``SL1B``) of case records and its results file
(``SL1S``) of one result record per case, read as it grows (:class:`ResultsReader`). Nothing
here runs a command: :mod:`sl1conf.adapters.simulator` does, with these encoders and decoders.
"""

from __future__ import annotations

import struct
from typing import Optional

import numpy as np

from .base import Case

__all__ = [
    "PROTOCOL_VERSION", "BATCH_VERSION", "CASE_MAGIC", "RESULT_MAGIC", "MEMORY_MAGIC", "BATCH_MAGIC", "STREAM_MAGIC",
    "STATUS", "UNSUPPORTED_STATUSES", "MEMORY_FLAGS", "WRITE_FLAGS", "INPUT_FLAGS", "BATCH_HEADER_BYTES",
    "EMPTY_RESULTS", "encode_case", "encode_batch", "record_bytes", "decode_results", "decode_records",
    "ResultsReader", "ProtocolError",
]

PROTOCOL_VERSION = 1  # one case per run (every harness speaks it)
BATCH_VERSION = 2  # many cases per run, one results record per case (docs/simulator-protocol.md)
CASE_MAGIC = b"SL1C"
RESULT_MAGIC = b"SL1R"
MEMORY_MAGIC = b"SL1M"
BATCH_MAGIC = b"SL1B"
STREAM_MAGIC = b"SL1S"
_CASE_HEADER = struct.Struct("<4sHBBiIII")  # magic, version, dtype, variant, length, n, beta, core_mask
_RESULT_HEADER = struct.Struct("<4sHHI")  # magic, version, status, n
_MEMORY_REPORT = struct.Struct("<4sI")  # magic, flags
_BATCH_HEADER = struct.Struct("<4sHHII")  # magic, version, reserved, count, reserved
_RECORD_HEADER = struct.Struct("<4sHHIIII")  # magic, version, status, index, n, has report, memory flags
BATCH_HEADER_BYTES = _BATCH_HEADER.size
EMPTY_RESULTS = _BATCH_HEADER.pack(STREAM_MAGIC, BATCH_VERSION, 0, 0, 0)
"""The version 2 results file of an empty batch: the answer to the protocol question of a
harness that speaks version 2."""

STATUS = {
    0: "ok",
    1: "the harness was built without this dtype",
    2: "the harness was built without this variant",
    3: "length exceeds the number of elements: the harness did not make the call",
}
"""Results-file status values (anything else nonzero: the harness could not call)."""
UNSUPPORTED_STATUSES = (1, 2)
"""Statuses that say the harness was built without the case's dtype or variant."""

MEMORY_FLAGS = {
    1: "wrote before the start of dx1",
    2: "wrote past the end of dx1",
    4: "dy",
    8: "x1",
    16: "x2",
    32: "wrote before the start of dy",
    64: "wrote past the end of dy",
    128: "wrote before the start of x1",
    256: "wrote past the end of x1",
    512: "wrote before the start of x2",
    1024: "wrote past the end of x2",
}
"""Bits of the optional memory report: writes into the guard zones around dx1 (1, 2) and
around each input (32 to 1024, newer harnesses), and inputs changed (4, 8, 16)."""
WRITE_FLAGS = (1, 2, 32, 64, 128, 256, 512, 1024)
INPUT_FLAGS = (4, 8, 16)

_ELEMENT = {"fp16": np.dtype("<u2"), "fp32": np.dtype("<u4")}
_DTYPE_CODE = {"fp16": 16, "fp32": 32}


class ProtocolError(ValueError):
    """A results file that does not follow the protocol (the message names the problem)."""


def encode_case(case: Case, version: int = PROTOCOL_VERSION) -> bytes:
    """The case file of ``case`` (protocol version 1), or its record in a batch (version 2)."""
    length = case.call_length
    if not -(1 << 31) <= length < (1 << 31):
        raise ValueError(f"length {length} does not fit the API's int (i32)")
    if case.n >= 1 << 32:
        raise ValueError(f"{case.n} elements do not fit the case file's u32 count")
    fmt = case.format
    if not 0 <= case.beta < (1 << fmt.bits):
        raise ValueError(f"beta bit pattern {case.beta:#x} does not fit {fmt.name}")
    header = _CASE_HEADER.pack(CASE_MAGIC, version, _DTYPE_CODE[case.dtype], ord(case.variant),
                               length, case.n, case.beta, case.core_mask & 0xFFFFFFFF)
    el = _ELEMENT[case.dtype]
    arrays = (case.dy, case.x1, case.x2, case.initial_out())
    return header + b"".join(np.ascontiguousarray(a).astype(el).tobytes() for a in arrays)


def encode_batch(cases: list) -> bytes:
    """The batch file of ``cases`` (protocol version 2): a header, then per case its byte count
    (u32) and its case record (a version 1 case file with version 2 in its header)."""
    records = [encode_case(c, BATCH_VERSION) for c in cases]
    return _BATCH_HEADER.pack(BATCH_MAGIC, BATCH_VERSION, 0, len(cases), 0) + b"".join(
        struct.pack("<I", len(r)) + r for r in records)


def record_bytes(case: Case) -> int:
    """The bytes ``case`` adds to a batch file: its byte count (u32) and its case record."""
    return 4 + _CASE_HEADER.size + 4 * case.n * _ELEMENT[case.dtype].itemsize


def decode_records(data: bytes, cases: list) -> tuple[list, "str | None"]:
    """The complete result records at the start of a version 2 results file, and the problem
    that stopped the reading (None: the data ends at a record boundary, perhaps mid-write). Each
    record is (status, dx1 bits or None, memory flags or None); records must come in order."""
    records: list = []
    problem, _ = _decode_from(data, cases, records, 0)
    return records, problem


def _decode_from(data, cases: list, records: list, at: int) -> tuple:
    """Append to ``records`` the complete records of ``data`` from offset ``at`` (0: the file's
    start, header included): (the problem that stopped the reading or None, the offset reached),
    so that a growing file is read once, not from its start at every look."""
    if at == 0:
        if len(data) < _BATCH_HEADER.size:
            return None, 0
        magic, version, _, count, _ = _BATCH_HEADER.unpack_from(data)
        if magic != STREAM_MAGIC or version != BATCH_VERSION:
            return f"the results file does not start with a version 2 {STREAM_MAGIC.decode()} header", 0
        if count != len(cases):
            return f"the results file announces {count} cases, the batch has {len(cases)}", 0
        at = _BATCH_HEADER.size
    while len(records) < len(cases) and len(data) - at >= _RECORD_HEADER.size:
        magic, version, status, index, n, has_report, flags = _RECORD_HEADER.unpack_from(data, at)
        case = cases[len(records)]
        if magic != RESULT_MAGIC or version != BATCH_VERSION:
            return f"malformed result record (no version 2 {RESULT_MAGIC.decode()} header)", at
        if index != len(records):
            return f"result record {index} where record {len(records)} was due", at
        if status != 0:
            if n or has_report:
                return f"result record with status {status} carries data", at
            records.append((status, None, None))
            at += _RECORD_HEADER.size
            continue
        if n != case.n:
            return f"the result record holds {n} elements, the case has {case.n}", at
        el = _ELEMENT[case.dtype]
        end = at + _RECORD_HEADER.size + n * el.itemsize
        if len(data) < end:
            return None, at  # still being written (or cut short: the caller decides)
        dx1 = np.frombuffer(bytes(data[at + _RECORD_HEADER.size:end]), dtype=el).astype(el.newbyteorder("="))
        records.append((0, dx1, flags if has_report else None))
        at = end
    if len(records) == len(cases) and at != len(data):
        return f"the results file has {len(data) - at} trailing bytes after the last record", at
    return None, at


class ResultsReader:
    """The records of a results file being written, read as it grows (each byte read once)."""

    def __init__(self, path: str, cases: list):
        self.path, self.cases, self.data, self.at = path, cases, bytearray(), 0
        self.records, self.problem = [], None

    def update(self) -> None:
        if self.problem:
            return
        try:
            with open(self.path, "rb") as f:
                f.seek(len(self.data))
                more = f.read()
        except FileNotFoundError:
            return
        if more or not self.at:
            self.data += more
            self.problem, self.at = _decode_from(self.data, self.cases, self.records, self.at)


def decode_results(data: bytes, dtype: str, n: int) -> tuple[int, Optional[np.ndarray], Optional[int]]:
    """(status, dx1 bits or None, memory-report flags or None) of a results file.

    Raises :class:`ProtocolError` naming the problem when the file breaks the protocol.
    """
    if len(data) == 0:
        raise ProtocolError("the results file is empty")
    if len(data) < _RESULT_HEADER.size:
        raise ProtocolError(f"the results file is truncated: {len(data)} bytes, "
                           f"shorter than the {_RESULT_HEADER.size}-byte header")
    magic, version, status, count = _RESULT_HEADER.unpack_from(data)
    if magic != RESULT_MAGIC:
        raise ProtocolError(f"the results file does not start with {RESULT_MAGIC.decode()} (it starts with {magic!r})")
    if version != PROTOCOL_VERSION:
        raise ProtocolError(f"the results file has protocol version {version}; this suite reads {PROTOCOL_VERSION}")
    rest = data[_RESULT_HEADER.size:]
    if status != 0:
        if count != 0 or rest:
            raise ProtocolError(f"the results file has status {status} but carries data")
        return status, None, None
    if count != n:
        raise ProtocolError(f"the results file holds {count} elements, the case has {n}")
    el = _ELEMENT[dtype]
    nbytes = n * el.itemsize
    if len(rest) < nbytes:
        raise ProtocolError(f"the results file is truncated: {len(rest)} of {nbytes} bytes of dx1")
    out = np.frombuffer(rest[:nbytes], dtype=el).astype(el.newbyteorder("="))
    tail = rest[nbytes:]
    if not tail:
        return 0, out, None
    if len(tail) == _MEMORY_REPORT.size and tail[:4] == MEMORY_MAGIC:
        return 0, out, _MEMORY_REPORT.unpack(tail)[1]
    if tail[:4] == MEMORY_MAGIC:
        raise ProtocolError(f"the results file's memory report is {len(tail)} bytes, not {_MEMORY_REPORT.size}")
    raise ProtocolError(f"the results file has {len(tail)} trailing bytes after dx1")
