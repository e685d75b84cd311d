"""The worker process's side of the ctypes isolation: load the library, call it on guarded buffers.

Why a module of its own: this is all that runs in the worker (a fresh interpreter running
``sl1conf.adapters.isolation``, or a fork of the fork server), one case per request over a
pair of pipes; the parent's side is :mod:`sl1conf.adapters.isolation`. Before each call the
worker writes where the guard pages of that call lie into the stage's header, so a fault
reported by the shim's signal handler is named after the array it hit.

A call must have finished when it returns. After each call the worker keeps dx1's mapping out
of reuse for ``WATCH_S`` seconds with a copy of what the call returned (:class:`_Watch`); a
mapping that changed in that time was written after the call returned (a core or thread the
library did not wait for, a DMA still in flight), and the worker says so with a later answer
(or when the parent asks it to settle): direct evidence, named after the call that did it.
The call's inputs are kept mapped, unchanged, for the same time: a thread not waited for still
reads them, and had they been let go (a later call's mapping, or unmapped) it would read another
call's data or fault in a later call, a crash that call would be blamed for ("read outside every
buffer") while the write that is the defect went unseen.
"""

from __future__ import annotations

import ctypes
import os
import struct
import time

import numpy as np

from .guard import CANARY, PAGE, GuardedArray
from .stage import Stage

__all__ = ["SYMBOLS", "WATCH_S", "WATCH_MAX", "serve"]

SYMBOLS = ("fp_smoothl1lossgrad_s", "fp_smoothl1lossgrad_p", "hp_smoothl1lossgrad_s", "hp_smoothl1lossgrad_p")
WATCH_S = 0.1  # how long a call's dx1 is watched after the call returned
WATCH_MAX = 512  # calls watched at once (the oldest is checked and let go early past it)


class _Watch:
    """The dx1 mappings of the latest calls, kept out of reuse for WATCH_S after each call
    returned, each with a copy of its bytes (data and canaries) as the call left them. Why:
    a library that returns before its last core (or thread, or DMA) has written dx1 changes
    memory the suite has already read back; the copy shows it, and names the call."""

    def __init__(self):
        # [seq, due, dx1's buffer, its bytes as returned, itemsize, {slot in _SPARE: buffer} of the call's mappings]
        self.items: list = []

    def add(self, seq: int, buffers: dict, itemsize: int) -> None:
        """Watch call ``seq``'s dx1 (``buffers["dx1"]``), holding every mapping of the call (its
        inputs too) out of reuse and mapped until it is due."""
        held = {}
        for b in {id(b): b for b in buffers.values()}.values():
            slot = next((k for k, v in _SPARE.items() if v is b), None)
            if slot is not None:
                del _SPARE[slot]  # no later call may reuse it (or unmap it) while it is watched
            held[slot if slot is not None else ("unkept", id(b))] = b
        buffer = buffers["dx1"]
        snapshot = bytes(buffer._map[PAGE:PAGE + buffer.body])
        self.items.append([seq, time.monotonic() + WATCH_S, buffer, snapshot, itemsize, held])

    def due(self, settle: bool = False) -> list:
        """(seq, what changed) of every watched call let go now: those watched WATCH_S (all of
        them when ``settle``, after waiting for the last to be due), and the oldest past WATCH_MAX."""
        if settle and self.items:
            time.sleep(max(0.0, self.items[-1][1] - time.monotonic()))
        now, late = time.monotonic(), []
        while self.items and (settle or self.items[0][1] <= now or len(self.items) > WATCH_MAX):
            seq, _, buffer, snapshot, itemsize, held = self.items.pop(0)
            text = _changed_since(buffer, snapshot, itemsize)
            if text:
                late.append((seq, text))
            for slot, b in held.items():
                if slot[0] != "unkept" and slot not in _SPARE and len(_SPARE) < _SPARE_MAX:
                    _SPARE[slot] = b
                else:
                    b.close()
        return late


def _changed_since(b: GuardedArray, snapshot: bytes, itemsize: int) -> "str | None":
    """What of a watched dx1 mapping differs from its copy taken when the call returned."""
    now = b._map[PAGE:PAGE + b.body]
    if now == snapshot:
        return None
    lo, hi = b.offset - PAGE, b.offset - PAGE + b.nbytes
    parts = []
    if now[lo:hi] != snapshot[lo:hi]:
        before = np.frombuffer(snapshot[lo:hi], f"u{itemsize}")
        after = np.frombuffer(now[lo:hi], f"u{itemsize}")
        changed = np.flatnonzero(before != after)
        parts.append(f"{changed.size:,} of its {before.size:,} elements (first [{changed[0]}], last "
                     f"[{changed[-1]}])" if changed.size else "the padding of its elements")
    if now[:lo] != snapshot[:lo]:
        parts.append("bytes before its start")
    if now[hi:] != snapshot[hi:]:
        parts.append("bytes past its end")
    return f"dx1 written after the call returned ({WATCH_S * 1000:g} ms watch): {' and '.join(parts)}"


def serve(conn_in, conn, library: str, shim: "str | None", report_path: str, log_path: str,
          stage_fd: int) -> None:
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log, 1)  # whatever the library prints goes to the worker's log, not the terminal
    os.dup2(log, 2)
    report = os.open(report_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    me = os.getpid()
    try:
        lib = ctypes.CDLL(library)
    except OSError as exc:
        conn.send(("error", f"cannot load {library}: {exc}"))
        return
    if os.getpid() != me:  # the library's constructor forked: the copy must not serve
        os._exit(0)
    shim_lib = ctypes.CDLL(shim) if shim else None
    symbols = {name: ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
               for name in SYMBOLS if hasattr(lib, name)}
    stage = Stage(stage_fd)
    watch = _Watch()
    conn.send(("ready", sorted(symbols)))
    while True:
        try:
            request = conn_in.recv()
        except EOFError:
            return
        if request is None:
            return
        if request.get("settle"):  # the parent collects the last calls' late writes
            conn.send(("settled", request["seq"], watch.due(settle=True)))
            continue
        late = watch.due()
        os.ftruncate(report, 0)
        os.lseek(report, 0, os.SEEK_SET)
        if shim_lib is not None:  # (re)armed before every call: the library may have replaced it
            shim_lib.sl1shim_install_fault_reporter(report)
        stage.resize(request["stage_size"])
        result, buffers = _call(request, {k: stage.view(v) for k, v in request["arrays"].items()}, stage, lib,
                            symbols, shim_lib)
        if os.getpid() != me:  # the library forked during the call: only the original answers
            os._exit(0)
        watch.add(request["seq"], buffers, 2 if request["dtype"] == "fp16" else 4)
        conn.send(("done", request["seq"], *result, late))


def _call(req: dict, staged: dict, stage: Stage, lib, symbols: dict, shim_lib):
    """Lay out guarded buffers (filled from the stage), announce them, call with the stage out
    of reach, check what changed (against the stage, which still holds the inputs), and put
    the result where the fill came in."""
    itemsize = 2 if req["dtype"] == "fp16" else 4
    buffers, arrays = {}, {}
    alias = req["out_alias"]
    for name, source in (("dy", "dy"), ("x1", "x1"), ("x2", "x2"), ("dx1", "initial_out")):
        if name == "dx1" and alias:
            buffers["dx1"], arrays["dx1"] = buffers[alias], arrays[alias]
            continue
        buffers[name] = _guarded(name, staged[source].nbytes, req["align"], req["layout"])
        arrays[name] = buffers[name].array(staged[source].dtype)
        arrays[name][:] = staged[source]
    stage.write_regions({name: (b.lo_guard, b.hi_guard) for name, b in buffers.items()})
    addr = {name: ctypes.c_void_p(buffers[name].address) for name in ("dy", "dx1", "x1", "x2")}
    fn = symbols[req["symbol"]]
    args = [addr["dy"], addr["dx1"], addr["x1"], addr["x2"], ctypes.c_int(req["length"])]
    extra = [ctypes.c_int(req["core_mask"])] if req["symbol"].endswith("_s") else []
    stage.protect(False)
    t0 = time.perf_counter()
    if shim_lib is not None:
        entry = getattr(shim_lib, f"sl1shim_{req['symbol'][:2]}_{req['symbol'][-1]}")
        beta = (ctypes.c_uint16 if itemsize == 2 else ctypes.c_uint32)(req["beta"])
        entry(ctypes.c_void_p(fn), *args, beta, *extra)
    else:  # fp32 without a C compiler: a c_float made from the bits (not via a double, which quiets sNaN)
        beta = ctypes.c_float.from_buffer_copy(struct.pack("<I", req["beta"]))
        ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 4), ctypes.c_int, ctypes.c_float,
                         *([ctypes.c_int] * len(extra)))(fn)(*args, beta, *extra)
    seconds = time.perf_counter() - t0
    stage.protect(True)
    sides = _canaries_hit(buffers)
    wrote_outside = bool(sides)
    changed = tuple(name for name in ("dy", "x1", "x2") if name != alias and not np.array_equal(staged[name], arrays[name]))
    staged["initial_out"][:] = arrays["dx1"]
    fault = " and ".join(sides) + " (canary changed)" if sides else None
    return (wrote_outside, changed, seconds, fault), buffers


def _canaries_hit(buffers: dict) -> list:
    """Where a call wrote into the canaries of its guarded buffers, each named by its array and
    side ("wrote past the end of dx1"); dx1 first, an aliased input under dx1's name only."""
    out, seen = [], set()
    for name in ("dx1", "dy", "x1", "x2"):
        b = buffers.get(name)
        if b is None or id(b) in seen:
            continue
        seen.add(id(b))
        if b.canaries_intact():
            continue
        before = b._map[PAGE:b.offset]
        after = b._map[b.offset + b.nbytes:PAGE + b.body]
        if before.count(CANARY) != len(before):
            out.append(f"wrote before the start of {name}")
        if after.count(CANARY) != len(after):
            out.append(f"wrote past the end of {name}")
    return out


_SPARE: dict = {}  # (array name, mapping size) -> a guarded mapping kept for later calls
_SPARE_MAX = 16


def _guarded(name: str, nbytes: int, align: int, layout: str) -> GuardedArray:
    """The guarded mapping for array ``name`` of this call: an earlier call's of the same size,
    laid out again (new canaries; the caller overwrites the data), else a new one (the oldest
    kept mapping is let go past _SPARE_MAX)."""
    slot = (name, GuardedArray.body_for(nbytes, align))
    old = _SPARE.pop(slot, None)
    _SPARE[slot] = old.place(nbytes, align, layout) if old is not None else GuardedArray(nbytes, align, layout)
    while len(_SPARE) > _SPARE_MAX:
        _SPARE.pop(next(iter(_SPARE))).close()
    return _SPARE[slot]
