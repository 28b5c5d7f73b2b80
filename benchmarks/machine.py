"""The machine a benchmark ran on, for the figures it prints (imported by the scripts here)."""

import platform


def cpu_name():
    """The CPU's model name from ``/proc/cpuinfo`` (or what ``platform`` knows)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"
