"""The ``usaav-edu`` command (:mod:`.main`) and the throughput measurements it reports (:mod:`.bench`)."""

from . import bench
from .main import main

__all__ = ["bench", "main"]
