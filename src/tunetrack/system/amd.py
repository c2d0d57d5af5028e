"""AMD GPUs through ``amdsmi`` (ROCm), when it is importable: utilization, VRAM, temperature, power.

Keys follow the NVIDIA ones (``gpu.{i}.util``, ``gpu.{i}.memory.used_bytes``, ...) so charts and
alerts work unchanged on either vendor.
"""

from __future__ import annotations

import logging
from typing import Any

from .base import FieldReader

log = logging.getLogger("tunetrack.system")
_MB = 1024 * 1024


class AmdSource:
    name = "amd"

    def __init__(self, smi: Any, handles: list[Any]) -> None:
        self.smi = smi
        self.handles = handles
        self._fields = FieldReader(self.name)

    @classmethod
    def create(cls) -> AmdSource | None:
        try:
            import amdsmi as smi
        except ImportError:
            return None  # the common case on NVIDIA or CPU machines: not worth a line
        try:
            smi.amdsmi_init()
            handles = list(smi.amdsmi_get_processor_handles())
        except Exception as exc:
            log.info("tunetrack: amdsmi unavailable (%s); no AMD GPU metrics", exc)
            return None
        return cls(smi, handles) if handles else None

    def sample(self) -> dict[str, float | int | None]:
        out: dict[str, Any] = {}
        smi, read = self.smi, self._fields.read
        for i, h in enumerate(self.handles):
            raw: dict[str, Any] = {}
            read(raw, "activity", smi.amdsmi_get_gpu_activity, h, field=f"{i}.activity")
            read(raw, "vram", smi.amdsmi_get_gpu_vram_usage, h, field=f"{i}.vram")
            read(raw, "power", smi.amdsmi_get_power_info, h, field=f"{i}.power")
            read(
                out,
                f"gpu.{i}.temp_c",
                smi.amdsmi_get_temp_metric,
                h,
                smi.AmdSmiTemperatureType.EDGE,
                smi.AmdSmiTemperatureMetric.CURRENT,
                field=f"{i}.temp",
            )
            if "activity" in raw:
                out[f"gpu.{i}.util"] = raw["activity"].get("gfx_activity")
                out[f"gpu.{i}.mem_util"] = raw["activity"].get("umc_activity")
            if "vram" in raw:
                used, total = raw["vram"]["vram_used"] * _MB, raw["vram"]["vram_total"] * _MB
                out.update(
                    {
                        f"gpu.{i}.memory.used_bytes": used,
                        f"gpu.{i}.memory.total_bytes": total,
                        f"gpu.{i}.memory.percent": 100.0 * used / total if total else None,
                    }
                )
            if "power" in raw:
                power = raw["power"]
                out[f"gpu.{i}.power_w"] = power.get("current_socket_power", power.get("average_socket_power"))
                out[f"gpu.{i}.power_limit_w"] = power.get("power_limit")
        return out

    def close(self) -> None:
        try:
            self.smi.amdsmi_shut_down()
        except Exception as exc:
            log.debug("amdsmi shutdown failed: %s", exc)
