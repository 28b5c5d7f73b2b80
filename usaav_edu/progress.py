"""Progress of a run in simulated time, shown with ``tqdm``.

``tqdm.auto`` picks the bar: a widget in a notebook, text on stderr in a terminal.
The bar appears once a run has lasted ``DELAY`` seconds and is redrawn at most
every ``INTERVAL`` seconds, so short runs print nothing.
"""

import sys

from tqdm.auto import tqdm

DELAY = 1.0
"""Seconds a run lasts before its bar appears."""
INTERVAL = 0.5
"""Least seconds between two redraws."""
BAR_FORMAT = "{percentage:5.1f}%|{bar}| t = {n:.4g}/{total:.4g} [{elapsed}]"
"""The percentage with a decimal, the bar, the simulated time and the wall time."""


class Progress:
    """A bar of the simulated time ``t`` out of ``t_max``; a no-op when not enabled.

    Parameters
    ----------
    enabled : bool
        Show the bar.
    t_max : float
        The final time, > 0.
    file : file-like or None
        Where a text bar goes (default ``sys.stderr``, read when the bar is made).

    Use it as a context manager, calling :meth:`update` with the time reached.
    """

    def __init__(self, enabled, t_max, file=None):
        self.t_max = float(t_max)
        self.bar = None
        if enabled:
            self.bar = tqdm(total=self.t_max, delay=DELAY, mininterval=INTERVAL, miniters=0,
                            file=sys.stderr if file is None else file, leave=True, unit="t",
                            bar_format=BAR_FORMAT)

    def update(self, t):
        """Show the time ``t`` reached (cheap when nothing is drawn).

        Parameters
        ----------
        t : float
            The simulated time, in ``[0, t_max]``.
        """
        if self.bar is not None:
            self.bar.update(min(t, self.t_max) - self.bar.n)

    def close(self):
        """End the bar (a final redraw if it was shown)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
