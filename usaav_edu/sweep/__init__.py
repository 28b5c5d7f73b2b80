"""Parameter sweeps on one machine or a Dask cluster, stored in Zarr (:mod:`.run`)."""

from . import run
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

__all__ = ["run", "DESCRIPTIONS", "FINAL", "FORMAT", "MAX_POINTS", "SERIES", "TEXT",
           "WORKER_START_TIMEOUT", "SchedulerUnreachable", "point_checksum", "read_store",
           "stored_points", "sweep"]
