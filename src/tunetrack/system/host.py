"""Host metrics through psutil: CPU, memory, disk and network, cgroup-aware.

In a container the host-wide numbers mislead (a job limited to 8 CPUs of a 128-CPU host looks idle),
so when a cgroup v2 limit is set, ``cpu.percent`` and ``mem.*`` are reported against the limit.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

from .base import FieldReader

CGROUP = Path("/sys/fs/cgroup")


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().split()[0]
    except (OSError, IndexError):
        return None
    return None if text == "max" else int(text)


def cgroup_cpu_limit(root: Path = CGROUP) -> float | None:
    """CPUs this cgroup may use (``cpu.max`` quota / period), or None when unlimited."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        return None
    return None if quota == "max" else int(quota) / int(period)


def cgroup_cpu_usage_us(root: Path = CGROUP) -> int | None:
    try:
        for line in (root / "cpu.stat").read_text().splitlines():
            if line.startswith("usage_usec "):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def _each(procs: list[Any], read: Any) -> list[Any]:
    """``read(p)`` of each process still there (one that exited since it was listed is left out)."""
    import psutil

    out = []
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            out.append(read(proc))
    return out


class HostSource:
    """CPU, memory, disk and network of this machine (or its cgroup), and this process's share; with
    ``tree``, the share of this process and every process it started (``tunetrack run``: the command
    it runs, and the workers a launcher starts), summed."""

    name = "host"

    def __init__(
        self, disk_path: str | os.PathLike[str] | None = None, cgroup_root: Path = CGROUP, tree: bool = False
    ) -> None:
        import psutil

        self._psutil = psutil
        self._proc = psutil.Process()
        self._tree = tree
        self._known: dict[
            int, Any
        ] = {}  # the processes of the tree, kept: cpu_percent counts since the last call
        self._fields = FieldReader(self.name)
        self._disk_path = str(disk_path or os.getcwd())
        self._cgroup = cgroup_root
        self._cpu_limit = cgroup_cpu_limit(cgroup_root)
        self._mem_limit = _read_int(cgroup_root / "memory.max")
        self._last: dict[str, Any] = {}
        psutil.cpu_percent(None)  # prime the since-last-call counters
        self._proc.cpu_percent(None)
        self._rates()

    def _rates(self) -> dict[str, float]:
        """Bytes per second since the previous sample, for disk and network counters."""
        now = time.monotonic()
        counters: dict[str, float] = {}
        disk = self._psutil.disk_io_counters()
        if disk is not None:
            counters["disk.read_bytes_per_s"], counters["disk.write_bytes_per_s"] = (
                disk.read_bytes,
                disk.write_bytes,
            )
        net = self._psutil.net_io_counters()
        if net is not None:
            counters["net.sent_bytes_per_s"], counters["net.recv_bytes_per_s"] = (
                net.bytes_sent,
                net.bytes_recv,
            )
        usage = cgroup_cpu_usage_us(self._cgroup) if self._cpu_limit else None
        if usage is not None:
            counters["_cgroup_cpu_us"] = usage
        last, self._last = self._last, {"t": now, **counters}
        if not last:
            return {}
        dt = max(now - last["t"], 1e-6)
        rates = {k: max(v - last[k], 0) / dt for k, v in counters.items() if k in last}
        if "_cgroup_cpu_us" in rates and self._cpu_limit:
            rates["cpu.percent"] = rates.pop("_cgroup_cpu_us") / 1e6 / self._cpu_limit * 100.0
        return rates

    def sample(self) -> dict[str, float | int | None]:
        out: dict[str, Any] = {}
        read = self._fields.read
        read(out, "cpu.percent", self._psutil.cpu_percent, None)
        read(out, "cpu.count", self._psutil.cpu_count)
        procs = self._processes()
        read(out, "proc.cpu_percent", lambda: sum(_each(procs, lambda p: p.cpu_percent(None))))
        read(out, "proc.rss_bytes", lambda: sum(_each(procs, lambda p: p.memory_info().rss)))
        read(out, "proc.num_threads", lambda: sum(_each(procs, lambda p: p.num_threads())))
        read(out, "_vm", self._psutil.virtual_memory, field="mem")
        vm = out.pop("_vm", None)
        if vm is not None:
            used, total = vm.total - vm.available, vm.total
            if self._mem_limit:
                used = _read_int(self._cgroup / "memory.current") or used
                total = min(total, self._mem_limit)
            out.update(
                {"mem.used_bytes": used, "mem.total_bytes": total, "mem.percent": 100.0 * used / total}
            )
        read(out, "disk.used_percent", lambda: self._psutil.disk_usage(self._disk_path).percent)
        rates: dict[str, Any] = {}
        read(rates, "_rates", self._rates, field="rates")
        out.update(rates.get("_rates", {}))
        if self._cpu_limit:
            out["cpu.limit"] = self._cpu_limit
        return out

    def _processes(self) -> list[Any]:
        """This process, and with ``tree`` its descendants now; one seen for the first time has its CPU
        counter started (it counts from the next sample)."""
        if not self._tree:
            return [self._proc]
        try:
            found = [self._proc, *self._proc.children(recursive=True)]
        except self._psutil.Error:
            found = [self._proc]
        known = {}
        for proc in found:
            kept = self._known.get(proc.pid)
            if kept is None or kept != proc:  # new, or a pid reused by another process
                _each([proc], lambda p: p.cpu_percent(None))
                kept = proc
            known[proc.pid] = kept
        self._known = known
        return list(known.values())

    def close(self) -> None:
        """Nothing to release: psutil holds no handles between samples."""
