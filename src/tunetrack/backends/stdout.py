"""A backend that prints one compact line per logged row, for jobs whose only UI is a log file:

    [2026-01-02 10:00:00] step 100 | loss 2.150 | lr 2.0e-04 | gpu mem 8.2 GB

It imports nothing beyond the standard library: it is loaded with the tracker, before any framework.
"""

from __future__ import annotations

import math
import numbers
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from .. import metric_keys
from ..values import is_finite_number
from .base import Row, RunInfo

#: Well-known keys: printed first, in this order, under these labels.
LABELS = {
    **{k: k for k in metric_keys.LOSS_LIKE},
    **dict.fromkeys(metric_keys.LEARNING_RATE, "lr"),
    **dict.fromkeys(metric_keys.GRAD_NORM, "grad"),
    "epoch": "epoch",
}
#: Pseudo-key for ``keys=``: the fullest GPU's used memory, from the system metrics.
GPU_MEM = "gpu_mem"


def format_number(x: float) -> str:
    """Four significant digits: ``2.150``, ``0.5000``, ``1234``; scientific below 1e-3 and from 1e5.

    Scientific mantissas drop trailing zeros (down to one decimal), so a learning rate set to 2e-4
    reads ``2.0e-04`` and a decayed one ``1.988e-04``.
    """
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    a = abs(x)
    if a != 0 and (a < 1e-3 or a >= 1e5):
        mantissa, exponent = f"{x:.3e}".split("e")
        mantissa = mantissa.rstrip("0")
        return f"{mantissa}{'0' if mantissa.endswith('.') else ''}e{exponent}"
    if a >= 1000:
        return f"{x:.0f}"
    return f"{x:#.4g}".rstrip(".")  # 999.96 rounds to "1000."


def format_value(value: Any) -> str:
    """Numbers as above (integers exact), ``None``, ``True``, strings quoted and cut at 30 characters."""
    if value is None or isinstance(value, bool):
        return str(value)
    if getattr(getattr(value, "dtype", None), "kind", None) == "b":  # numpy.bool_ is no numbers.Integral
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return format_number(float(value))
    text = value if isinstance(value, str) else str(value)
    return repr(text if len(text) <= 30 else text[:27] + "...")


def format_bytes(n: float) -> str:
    return f"{n / 1e9:.1f} GB" if abs(n) >= 1e8 else f"{n / 1e6:.0f} MB"


def _bytes_label(key: str, value: Any) -> str | None:
    """The label of a byte count shown in GB (``..._bytes`` keys, or ``mem`` keys over 1 MiB), else None.

    A ``mem`` key with a small value is already in GB or a percentage (torchtune logs GiB).
    """
    if not is_finite_number(value):
        return None
    low = key.lower()
    if low.endswith("bytes"):
        return key[:-5].rstrip("._-/") or key
    return key if "mem" in low and abs(float(value)) >= 2**20 else None


class ConsoleBackend:
    """Print rows as compact lines on ``stream`` (default: stdout, looked up at each write).

    stdout, not stderr: it is where training scripts print their metrics (the Transformers Trainer
    prints its log dicts there), the file ``nohup`` and ``sbatch --output`` keep, and it stays apart
    from warnings and tqdm's carriage-return progress bars on stderr.

    ``keys`` restricts and orders the printed keys (``"gpu_mem"`` is the system metrics' GPU memory);
    by default the well-known keys come first, then the rest in logged order. ``every=N`` prints the
    first row and then every Nth.
    """

    def __init__(
        self, stream: TextIO | None = None, keys: Sequence[str] | None = None, every: int = 1
    ) -> None:
        self.stream = stream
        self.keys = list(keys) if keys is not None else None
        self.every = max(int(every), 1)
        self._rows = 0
        self._last_step: int | None = None
        self._gpu_mem: float | None = None
        self._run = ""

    def _write(self, lines: list[str]) -> None:
        stream = self.stream or sys.stdout
        if stream is None or not lines:  # pythonw, a daemonized process
            return
        text = "\n".join(lines) + "\n"
        try:
            stream.write(text)
        except UnicodeEncodeError:  # a quoted string the log's encoding lacks must not disable us
            encoding = getattr(stream, "encoding", None) or "ascii"
            stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
        stream.flush()

    def start(self, run: RunInfo) -> None:
        self._run = f"{run.name} ({run.id})" if run.name and run.name != run.id else run.id
        where = f" in {run.dir}" if run.dir else ""
        self._write([f"tunetrack: {'resumed' if run.resumed else 'started'} run {self._run}{where}"])

    def log_config(self, config: dict[str, Any]) -> None:
        """Configs are long; the console shows metrics only (the run folder keeps the config)."""

    def log_system(self, rows: Sequence[Row]) -> None:
        """Keep the fullest GPU's used memory: that GPU is the one that runs out first."""
        for _, _, values in rows:
            used = [
                v
                for k, v in values.items()
                if k.endswith(".memory.used_bytes") and isinstance(v, (int, float)) and math.isfinite(v)
            ]
            if used:
                self._gpu_mem = float(max(used))

    def log(self, rows: Sequence[Row]) -> None:
        lines = []
        for step, unix_time, values in rows:
            self._rows += 1
            self._last_step = step
            if (self._rows - 1) % self.every == 0:
                lines.append(self.line(step, unix_time, values))
        self._write(lines)

    def line(self, step: int, unix_time: float, values: dict[str, Any]) -> str:
        """``[local time] step N | label value | ...`` for one row."""
        if self.keys is not None:
            order = self.keys
        else:
            order = [k for k in LABELS if k in values] + [k for k in values if k not in LABELS]
            order += [] if GPU_MEM in values else [GPU_MEM]
        parts, labels = [f"step {step}"], set()
        for key in order:
            if key == GPU_MEM and key not in values:
                if self._gpu_mem is not None:
                    parts.append(f"gpu mem {format_bytes(self._gpu_mem)}")
                continue
            if key not in values:
                continue
            value, label = values[key], LABELS.get(key)
            if label is not None:
                if label in labels:  # both learning_rate and lr: print the first
                    continue
                labels.add(label)
            elif (short := _bytes_label(key, value)) is not None:
                parts.append(f"{short} {format_bytes(value)}")
                continue
            parts.append(f"{label or key} {format_value(value)}")
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(unix_time))
        return f"[{stamp}] " + " | ".join(parts)

    def finish(self, state: str) -> None:
        run = f"run {self._run}" if self._run else "run"
        at = f" at step {self._last_step}" if self._last_step is not None else ""
        self._write([f"tunetrack: {run} {state}{at}"])
