"""Parameter sweeps on one machine or a Dask cluster, stored in Zarr (:mod:`.run`); the noisy
model's phase diagram (:mod:`.phase`)."""

from . import phase, run
from .phase import critical_noise, noise_phase_diagram
from .run import (
                  DESCRIPTIONS,
                  FINAL,
                  FORMAT,
                  MAX_POINTS,
                  SERIES,
                  TEXT,
                  WORKER_START_TIMEOUT,
                  SchedulerUnreachable,
                  point_checksum,
                  read_store,
                  stored_points,
                  sweep,
)

__all__ = ["run", "phase", "critical_noise", "noise_phase_diagram", "DESCRIPTIONS", "FINAL", "FORMAT", "MAX_POINTS", "SERIES", "TEXT",
           "WORKER_START_TIMEOUT", "SchedulerUnreachable", "point_checksum", "read_store",
           "stored_points", "sweep"]
