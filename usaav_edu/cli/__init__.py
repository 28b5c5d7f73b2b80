"""The ``usaav-edu`` command (:mod:`.command`) and the throughput measurements it reports (``usaav_edu.cli.bench``)."""

from . import bench
from .command import main

__all__ = ["bench", "main"]
