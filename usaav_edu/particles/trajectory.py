"""The result of a simulation: a small frozen record of arrays.

A :class:`Trajectory` holds three groups, each also readable as one record: its data
(``traj.data``: the frames ``t``, ``x``, the labels ``xi``, the ``energy`` and the ``frozen``
tokens), its step statistics (``traj.stats``: the steps accepted and rejected, the velocity
evaluations and the RK4 step) and its provenance (``traj.provenance``: the model, the method
and its tolerances, the noise, the summation, the seed and the version); and how the run ended,
its ``status`` (:class:`~usaav_edu.dynamics.integrate.loop.Status`) and ``message``.
"""

import contextlib
import json
import math
import os
import stat
import tempfile
import warnings
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from numpy.lib import format as npformat

from .. import _validate as v
from ..dynamics.integrate.loop import Status
from ..models.model import Model

MAX_BYTES = 2**30  # default cap of ``load`` on the decompressed size of a file's arrays (1 GiB)
UNIT_TOL = 1e-9  # rows of a loaded x must have norm 1 within this
READ_CHUNK = 1 << 24  # bytes read from an archive member at once (16 MB)
ARRAYS = ("t", "x", "xi", "energy", "frozen", "metadata")
OPTIONAL_ARRAYS = ("radius",)
"""Arrays written only where they exist (``radius``: pre-LN runs); older files have none."""
METADATA = ("model", "method", "dt", "rtol", "atol", "seed", "n_rhs", "version")
OPTIONAL_METADATA = ("steps_accepted", "steps_rejected", "summation", "degree", "error_bound",
                     "status", "message", "noise")
"""Metadata written since the step statistics (then the summation, the status, the noise)
were recorded; older files load without them (a file without ``summation`` was summed
directly, a file without ``status`` holds a run that completed: failed runs were not returned
then; a file without ``noise`` holds a run without noise)."""
METHODS = ("rk4", "dopri5", "heun")
SUMMATIONS = ("direct", "fast")
"""How a run's velocity was summed (see :func:`usaav_edu.simulate`)."""
TEMP_PREFIX = ".tmp-"
TEMP_NAME_LENGTH = len(TEMP_PREFIX) + 8
"""``save`` writes to ``.tmp-XXXXXXXX`` (eight random characters) beside the target, whatever
the target's name, so a name the folder accepts never makes the temporary name too long."""
PARTICLE_STATUSES = ("COMPLETED", "MAX_STEPS", "FAILED")
"""The statuses a particle run can end with (``UNRESOLVED`` is the density solver's)."""
NAME_MAX, PATH_MAX = 255, 4096
"""The limits assumed where ``os.pathconf`` cannot tell (POSIX systems' usual values)."""


class Data(NamedTuple):
    """The data of a run: frame times, frames, labels, energies, frozen tokens."""

    t: np.ndarray
    x: np.ndarray
    xi: np.ndarray
    energy: np.ndarray
    frozen: np.ndarray | None


class StepStats(NamedTuple):
    """The step statistics of a run (None where a file written before them does not say)."""

    steps_accepted: int | None
    steps_rejected: int | None
    n_rhs: int
    dt: float | None


class Provenance(NamedTuple):
    """What produced a run: the model, the method and its settings, the summation, the version."""

    model: Model
    method: str
    rtol: float | None
    atol: float | None
    summation: str
    degree: int | None
    error_bound: float | None
    seed: int | None
    version: str
    noise: float = 0.0


@dataclass(frozen=True, eq=False)
class Trajectory:
    """Frames of a run of USA-AV.

    The attributes come in three groups, each also one record: ``data`` (:class:`~usaav_edu.particles.trajectory.Data`:
    ``t``, ``x``, ``xi``, ``energy``, ``frozen``), ``stats`` (:class:`~usaav_edu.particles.trajectory.StepStats`:
    ``steps_accepted``, ``steps_rejected``, ``n_rhs``, ``dt``) and ``provenance``
    (:class:`~usaav_edu.particles.trajectory.Provenance`: ``model``, ``method``, ``rtol``, ``atol``, ``summation``,
    ``degree``, ``error_bound``, ``seed``, ``version``, ``noise``); with ``status`` and
    ``message``.

    Attributes
    ----------
    t
        (F,) frame times, from 0 to t_max (to the last frame reached if the run did not
        complete).
    x
        (F, n, d) token contents x_i(t) on the sphere.
    xi
        (n,) the frozen labels (positions or prompt ids).
    energy
        (F,) the energy E_h at each frame.
    model
        The Model that was simulated.
    method
        "rk4", "dopri5" or "heun".
    dt
        The step used by RK4 or Heun (None for dopri5).
    rtol, atol
        The dopri5 tolerances (None for rk4 and heun).
    frozen
        (n,) bool, tokens that attend but never move.
    seed
        The seed recorded by the caller for the initial state (or None); for a run with
        noise also the seed of its Brownian motions (drawn by ``simulate`` if none was
        given), so that ``simulate(..., seed=traj.seed)`` repeats the run.
    n_rhs
        Number of right-hand-side evaluations.
    steps_accepted, steps_rejected
        Steps the integrator accepted and rejected (RK4 rejects none); None for a trajectory
        loaded from a file written before they were recorded.
    version
        The usaav_edu version that produced it.
    summation
        ``"direct"`` (the ``n^2`` pair sums; also every file written before the summation
        was recorded) or ``"fast"`` (the truncated expansion of
        :mod:`usaav_edu.dynamics.fastsum`).
    degree
        The degree ``L`` of the expansion (None for direct summation).
    error_bound
        The guaranteed bound of the velocity's relative error,
        ``max_i |v_hat_i - v_i| / max_i m_i`` with the row mass ``m_i`` (the FastKernel's
        ``bound``; None for direct summation, exact to rounding).
    status
        How the run ended (:class:`~usaav_edu.dynamics.integrate.loop.Status`): ``Status.COMPLETED`` (also every file written
        before the status was recorded), ``Status.MAX_STEPS`` or ``Status.FAILED`` (returned
        by ``simulate(..., on_failure="return")``).
    message
        What happened, in a sentence or two (where and why a run stopped); by default the
        status's own ``message``.
    radius
        (F, n) the radii ``|z_i(t)|`` of a pre-LN run, whose ``x`` are the directions
        ``z_i / |z_i|`` (:mod:`usaav_edu.dynamics.prenorm`); None for post-LN, whose tokens
        stay on the sphere.
    noise
        The noise amplitude ``sigma`` of ``dx_i = v_i dt + sigma P_{x_i} o dW_i`` (0: none;
        also every file written before the noise was recorded).
    """

    t: np.ndarray
    x: np.ndarray
    xi: np.ndarray
    energy: np.ndarray
    model: Model
    method: str
    dt: float | None = None
    rtol: float | None = None
    atol: float | None = None
    frozen: np.ndarray | None = field(default=None, repr=False)
    seed: object = None
    n_rhs: int = 0
    steps_accepted: int | None = None
    steps_rejected: int | None = None
    version: str = ""
    summation: str = "direct"
    degree: int | None = None
    error_bound: float | None = None
    status: Status = Status.COMPLETED
    message: str | None = None
    radius: np.ndarray | None = field(default=None, repr=False)
    noise: float = 0.0

    def __post_init__(self):
        if not isinstance(self.status, Status):
            raise TypeError(f"status must be a Status ({', '.join(s.name for s in Status)}), got "
                            f"{type(self.status).__name__}")
        if self.message is None:
            object.__setattr__(self, "message", self.status.message)
        elif not isinstance(self.message, str):
            raise TypeError(f"message must be a str, got {type(self.message).__name__}")
        object.__setattr__(self, "noise", v.real_scalar("noise", self.noise, minimum=0.0))

    @property
    def data(self):
        """The frames, labels, energies and frozen tokens (:class:`~usaav_edu.particles.trajectory.Data`)."""
        return Data(self.t, self.x, self.xi, self.energy, self.frozen)

    @property
    def stats(self):
        """The step statistics (:class:`~usaav_edu.particles.trajectory.StepStats`)."""
        return StepStats(self.steps_accepted, self.steps_rejected, self.n_rhs, self.dt)

    @property
    def provenance(self):
        """The model, method, settings, summation, seed and version (:class:`~usaav_edu.particles.trajectory.Provenance`)."""
        return Provenance(self.model, self.method, self.rtol, self.atol, self.summation,
                          self.degree, self.error_bound, self.seed, self.version, self.noise)

    @property
    def completed(self):
        """True if the run reached ``t_max`` (``status is Status.COMPLETED``)."""
        return self.status is Status.COMPLETED

    @property
    def n(self):
        """Number of tokens."""
        return self.x.shape[1]

    @property
    def d(self):
        """Ambient dimension (tokens live on S^{d-1})."""
        return self.x.shape[2]

    @property
    def y(self):
        """Gauge coordinates ``y_i = G(xi_i) x_i`` at every frame, (F, n, d)."""
        return self.model.to_gauge(self.x, self.xi)

    @property
    def final(self):
        """The last frame of x, (n, d)."""
        return self.x[-1]

    def metadata(self):
        """The provenance record stored with the arrays.

        Returns
        -------
        dict
            JSON-serializable: the model's parameters, the method and its step or
            tolerances, the seed, the step statistics, the summation (with the degree and
            the error bound of fast summation), the version, the status (its name) and
            message, and for a run with noise its ``noise`` (absent: 0).
        """
        meta = {
            "model": self.model.params(), "method": self.method, "dt": self.dt,
            "rtol": self.rtol, "atol": self.atol, "seed": self.seed,
            "n_rhs": self.n_rhs, "steps_accepted": self.steps_accepted,
            "steps_rejected": self.steps_rejected, "version": self.version,
            "summation": self.summation, "degree": self.degree, "error_bound": self.error_bound,
            "status": self.status.name, "message": self.message,
        }
        if self.noise != 0.0:  # a run without noise is written as before the noise was recorded
            meta["noise"] = self.noise
        return meta

    def save(self, path):
        """Write the arrays and the metadata (model parameters, seed, version) to ``path``.

        The file is an uncompressed NumPy ``.npz`` archive written to exactly
        ``path`` (a str or ``os.PathLike``; any name is accepted and no suffix is
        added).  It is first written to a temporary file ``.tmp-XXXXXXXX`` in the
        same folder and then renamed over ``path`` with ``os.replace``, so an
        interrupted save leaves any previous file at ``path`` intact and no partial
        file behind.  The trajectory is first checked as :meth:`load` checks a
        file, so nothing is written that would not load back.  Everything
        ``check_target`` refuses (an empty path, a directory, a FIFO, a device
        or a socket, a read-only file, a missing or read-only folder, a name too
        long for the folder, too little free space for the file) is refused with
        ValueError before anything is written.  A symbolic link stays a link: the file it points
        to is replaced (and is what is checked).

        Parameters
        ----------
        path : str or os.PathLike
            The file to write.

        Raises
        ------
        TypeError
            If the model has a user-defined gauge or bias (named in the message): its
            parameters cannot be written; or if ``model`` is not a Model.  Nothing is written
            and the trajectory is unchanged.
        ValueError
            For a path that cannot be written, or a trajectory that :meth:`load` would refuse
            (its arrays are checked as ``load`` checks them, before anything is written).

        Examples
        --------
        >>> import os, tempfile
        >>> import numpy as np
        >>> import usaav_edu as ue
        >>> x0 = ue.sphere.uniform(8, 3, seed=0)
        >>> model = ue.models.rope(beta=1.0)
        >>> traj = ue.simulate(model, x0, xi=np.arange(8.0), t_max=1.0,
        ...                    n_frames=3)
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = os.path.join(folder, "run.npz")
        ...     traj.save(path)
        ...     back = ue.Trajectory.load(path)
        >>> back.model.gauge, back.x.shape
        (RopeGauge(omegas=(1.0,), d=3), (3, 8, 3))
        >>> bool((back.x == traj.x).all())
        True
        """
        arrays = _savable(self)
        target = check_target(path, nbytes=sum(a.nbytes for a in arrays.values()) + (1 << 16))
        folder = os.path.dirname(target) or os.curdir
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=TEMP_PREFIX)
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, **arrays)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, _new_file_mode(target))
            _still_regular(target, "path", path)  # nothing else took the name meanwhile
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _sync_folder(folder)

    @classmethod
    def load(cls, path, *, max_bytes=MAX_BYTES):
        """Read a Trajectory written by ``save``, checking everything in the file.

        ``path`` is a str or ``os.PathLike`` (or an open binary file).  Anything
        that is not a valid trajectory raises one ``ValueError`` starting "not a
        valid usaav-edu trajectory": a file that is not a NumPy archive, a missing
        or malformed array (shape, dtype, NaN, rows of ``x`` off the unit sphere
        by more than ``UNIT_TOL``, times not increasing), malformed metadata, or a
        model that its constructors refuse.  Arrays holding Python objects are
        never unpickled.  Before anything is decompressed, the sizes in the
        archive's directory are checked: the arrays together may hold at most
        ``max_bytes`` bytes (default ``MAX_BYTES`` = 2**30, 1 GiB: about 4,400
        frames of 10,000 tokens in d = 3), so a small compressed file cannot
        inflate to exhaust memory; pass a larger ``max_bytes`` to read a larger
        trajectory that you trust.  Arrays or metadata
        keys this version does not know (a file from a newer version) are
        ignored with a warning naming them.  A missing or unreadable file raises
        the ``OSError`` of opening it.  A path that is not a regular file (a FIFO, a
        device such as ``/dev/zero``, a socket, a directory, or a link to one) is refused
        with the ``ValueError`` before anything is read: it is checked before it is opened
        and again on the open file, which is opened without blocking.  Files written
        before the step statistics were recorded load with ``steps_accepted = steps_rejected = None``, files written before
        the summation was recorded as ``summation = "direct"`` (then the only one), with
        ``degree = error_bound = None``; models written in the flat layout of version 1 are
        read too (:meth:`usaav_edu.models.model.Model.from_params`).  The summation is checked
        with its fields: ``"direct"`` has no degree or bound, ``"fast"`` has both (an
        integer degree >= 0, a finite bound >= 0).  Files written before the status was recorded
        load as ``Status.COMPLETED`` with its message (only completed runs were returned then).

        Parameters
        ----------
        path : str, os.PathLike or binary file
            The file.
        max_bytes : int
            The most bytes the arrays may take once decompressed.

        Returns
        -------
        Trajectory

        Raises
        ------
        ValueError
            "not a valid usaav-edu trajectory: ..." for anything wrong in the file.
        OSError
            If the file cannot be opened.
        TypeError
            For a ``path`` that is neither a path nor an open file.

        Examples
        --------
        See :meth:`save`.
        """
        max_bytes = v.integer("max_bytes", max_bytes, minimum=1)
        if not hasattr(path, "read") and (isinstance(path, bytes) or
                                          not isinstance(path, (str, os.PathLike))):
            raise TypeError(f"path must be a file path (str or os.PathLike) or an open binary "
                            f"file, got {type(path).__name__}")
        where = path if hasattr(path, "read") else os.fspath(path)
        if not hasattr(where, "read") and not isinstance(where, str):
            raise TypeError(f"path must be a file path (str or os.PathLike) or an open binary "
                            f"file, got a path of {type(where).__name__}")
        try:
            with contextlib.ExitStack() as stack:
                fh = where if hasattr(where, "read") else stack.enter_context(_open_regular(where))
                zf = stack.enter_context(zipfile.ZipFile(fh))
                arrays = _read_arrays(zf, max_bytes)
            meta = _metadata(arrays.pop("metadata"))
            return _build(cls, arrays, meta)
        except _Invalid as exc:
            raise ValueError(f"not a valid usaav-edu trajectory: {exc} (file {where!r})") from None
        except (ValueError, TypeError) as exc:
            raise ValueError(f"not a valid usaav-edu trajectory: {exc} (file {where!r})") from None
        except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError) as exc:
            raise ValueError(f"not a valid usaav-edu trajectory: not a readable .npz archive ({exc}) "
                             f"(file {where!r})") from None


# ---------------------------------------------------------------------- file checks
def _savable(traj):
    """The arrays ``save`` writes, after the checks ``load`` makes on them (TypeError, ValueError)."""
    if not isinstance(traj.model, Model):
        raise TypeError(f"the trajectory's model must be a usaav_edu Model, got "
                        f"{type(traj.model).__name__}")
    meta = traj.metadata()
    x = np.asarray(traj.x)
    frozen = np.zeros(x.shape[1] if x.ndim == 3 else 0, dtype=bool) if traj.frozen is None \
        else np.asarray(traj.frozen)
    arrays = {"t": np.asarray(traj.t), "x": x, "xi": np.asarray(traj.xi),
              "energy": np.asarray(traj.energy), "frozen": frozen}
    if traj.radius is not None:
        arrays["radius"] = np.asarray(traj.radius)
    text = np.array(json.dumps(meta))
    try:
        _build(Trajectory, dict(arrays), _metadata(text))
    except _Invalid as exc:
        raise ValueError(f"the trajectory cannot be saved, it would not load back: {exc}") from None
    return dict(arrays, metadata=text)


def check_target(path, *, name="path", nbytes=None):
    """Check that a trajectory can be saved to ``path``; return the file that ``save`` replaces.

    :meth:`usaav_edu.Trajectory.save` calls it before it writes anything, and the ``usaav-edu`` command
    before the run, so that a run is never computed only to be lost.  Refused, with a message
    naming ``name`` and the reason:

    * what ``usaav_edu._validate.output_path`` refuses: an empty path, a path ending in a
      separator or naming a directory, a folder that is missing or not writable;
    * a symbolic link is resolved (all the way) and its target checked: a link into a missing
      or read-only folder, or a loop of links, is refused like the path itself;
    * an existing target that is not a regular file: a FIFO, a character or block device
      (``/dev/null``), a socket;
    * an existing target that is read-only: without any write permission bit
      (``mode & 0o222 == 0``; checked from the mode, since for root every file is writable) or
      not writable by this user;
    * a file name longer than the folder's ``PC_NAME_MAX`` bytes, or a path (of the target or
      of the temporary ``.tmp-XXXXXXXX`` beside it) longer than its ``PC_PATH_MAX``;
    * with ``nbytes``: fewer than ``nbytes`` bytes free (for this user) on the folder's file
      system.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write.
    name : str
        How the message names it (``"--out"`` for the command).
    nbytes : int, optional
        The size of the file to write (:func:`saved_bytes`).

    Returns
    -------
    str
        The path to replace: ``path`` itself, or the file a symbolic link points to.

    Raises
    ------
    TypeError
        For a path that is not a str or ``os.PathLike``.
    ValueError
        For a path that cannot be written, with the reason.
    """
    path = v.output_path(name, path)
    target = path
    if os.path.islink(path):
        target = os.path.realpath(path)
        if os.path.islink(target):
            raise ValueError(f"{name} {path!r}: its symbolic links form a loop")
        seps = tuple(s for s in (os.sep, os.altsep) if s)
        if os.path.isdir(target) or target.endswith(seps):
            raise ValueError(f"{name} {path!r} is a link to the directory {target!r}")
        folder = os.path.dirname(target) or os.curdir
        if not os.path.isdir(folder):
            raise ValueError(f"{name} {path!r} is a link into the folder {folder!r}, which does not "
                             f"exist")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise ValueError(f"{name} {path!r} is a link into the folder {folder!r}, which is not "
                             f"writable")
    folder = os.path.dirname(target) or os.curdir
    name_max, path_max = _limits(folder)
    base = len(os.fsencode(os.path.basename(target)))
    if base > name_max:
        raise ValueError(f"{name} {path!r}: the file name is {base} bytes long, more than the "
                         f"{name_max} its folder allows")
    longest = max(len(os.fsencode(target)),
                  len(os.fsencode(os.path.join(folder, "x" * TEMP_NAME_LENGTH))))
    if longest >= path_max:
        raise ValueError(f"{name} {path!r}: the path is {longest} bytes long (with the temporary "
                         f"file beside it), more than the {path_max - 1} the system allows")
    _still_regular(target, name, path)
    if nbytes is not None:
        nbytes = v.integer("nbytes", nbytes, minimum=0)
        try:
            fs = os.statvfs(folder)
        except (OSError, AttributeError):
            return target
        free = fs.f_bavail * fs.f_frsize
        if free < nbytes:
            raise ValueError(f"{name} {path!r}: the file will take about {_size(nbytes)}, but only "
                             f"{_size(free)} are free in {folder!r}")
    return target


def saved_bytes(n_frames, n, d):
    """An upper estimate of the size of a saved trajectory of ``n_frames`` frames of ``n`` tokens.

    ``8 F (n d + 2) + 9 n`` bytes of arrays (``x``, ``t``, ``energy``, ``xi``, ``frozen``) and
    64 KiB for the headers and the metadata.

    Parameters
    ----------
    n_frames, n, d : int
        Frames, tokens, dimension.

    Returns
    -------
    int
    """
    return 8 * n_frames * (n * d + 2) + 9 * n + (1 << 16)


def _size(nbytes):
    """``nbytes`` for a message: ``1.2 GB``, ``340 MB``, ``12 kB``."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes} bytes"


def _limits(folder):
    """``(PC_NAME_MAX, PC_PATH_MAX)`` of ``folder`` (the usual 255, 4096 where it cannot tell)."""
    limits = []
    for key, default in (("PC_NAME_MAX", NAME_MAX), ("PC_PATH_MAX", PATH_MAX)):
        try:
            value = os.pathconf(folder, key)
        except (OSError, ValueError, AttributeError):
            value = None
        limits.append(value if value is not None and value > 0 else default)
    return tuple(limits)


FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
              (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
              (stat.S_ISSOCK, "a socket"))


def _kind(mode):
    """What a file of mode ``mode`` is, for a message (``"a FIFO (named pipe)"``)."""
    return next((what for test, what in FILE_KINDS if test(mode)), "not a regular file")


def _still_regular(target, name, path):
    """Refuse an existing ``target`` that is not a regular file or is read-only."""
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ValueError(f"{name} {path!r} cannot be checked: {exc.strerror}") from None
    shown = repr(path) if target == path else f"{path!r} (a link to {target!r})"
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{name} {shown} is {_kind(st.st_mode)}, not a regular file; a trajectory "
                         f"is written only to a regular file or a new name")
    if not st.st_mode & 0o222 or not os.access(target, os.W_OK):
        raise ValueError(f"{name} {shown} is read-only; make it writable (chmod u+w) or choose "
                         f"another name")


def _open_regular(path):
    """An open binary file of ``path``, refused before reading unless it is a regular file.

    The path is stat'ed (following links) first, so a FIFO or a device is never opened; then it
    is opened without blocking (a FIFO put in its place meanwhile cannot block the open) and
    checked again on the open descriptor, so what is read is the file that was checked.
    """
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise _Invalid(f"it is {_kind(st.st_mode)}, not a regular file")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | \
        getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _Invalid(f"it is {_kind(st.st_mode)}, not a regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class _Invalid(Exception):
    """Something in a trajectory file is wrong (turned into one ValueError by ``load``)."""


def _new_file_mode(path):
    """Permissions for a saved file: those of the file it replaces, else the default for new files."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _sync_folder(folder):
    """Make the rename durable (POSIX); a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _read_arrays(zf, max_bytes):
    """The known arrays of an open .npz archive, after checking the sizes in its directory."""
    members = {}
    for info in zf.infolist():
        key = info.filename.removesuffix(".npy")
        if key in members:
            raise _Invalid(f"the archive holds {key!r} twice")
        members[key] = info
    missing = [k for k in ARRAYS if k not in members]
    if missing:
        raise _Invalid(f"missing arrays {missing}")
    unknown = sorted(k for k in members if k not in ARRAYS + OPTIONAL_ARRAYS)
    if unknown:
        warnings.warn(f"ignoring arrays this version does not know: {unknown} (a file from a newer version?)",
                      stacklevel=3)
    present = ARRAYS + tuple(k for k in OPTIONAL_ARRAYS if k in members)
    for k in present:
        info = members[k]
        if info.flag_bits & 0x1:
            raise _Invalid(f"array {k!r} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise _Invalid(f"array {k!r} uses zip compression method {info.compress_type}; NumPy archives are "
                           f"stored or deflated")
    total = sum(members[k].file_size for k in present)
    if total > max_bytes:
        raise _Invalid(f"its arrays would take {total} bytes once decompressed, more than "
                       f"max_bytes = {max_bytes} (pass a larger max_bytes to load a larger file you trust)")
    return {k: _read_member(zf, members[k], k) for k in present}


def _read_member(zf, info, key):
    """One .npy member, read without pickle and never beyond the size its directory entry states."""
    with zf.open(info) as fh:
        try:
            version = npformat.read_magic(fh)
            if version == (1, 0):
                shape, fortran, dtype = npformat.read_array_header_1_0(fh)
            elif version == (2, 0):
                shape, fortran, dtype = npformat.read_array_header_2_0(fh)
            else:
                raise _Invalid(f"array {key!r} uses .npy format version {version}, which is not supported")
        except (ValueError, EOFError) as exc:
            raise _Invalid(f"array {key!r} is not a .npy array ({exc})") from None
        if dtype.hasobject:
            raise _Invalid(f"array {key!r} holds Python objects (dtype {dtype}); a trajectory holds only numbers "
                           f"and text, and objects are never unpickled")
        count = math.prod(shape)
        nbytes = count * dtype.itemsize
        if nbytes > info.file_size:
            raise _Invalid(f"array {key!r} claims shape {shape} of {dtype} ({nbytes} bytes) but its member holds "
                           f"{info.file_size} bytes")
        buf = bytearray(nbytes)
        view, got = memoryview(buf), 0
        while got < nbytes:
            # in chunks: a zip member's readinto reads its whole request into a temporary
            more = fh.readinto(view[got:got + READ_CHUNK])
            if not more:
                raise _Invalid(f"array {key!r} is truncated")
            got += more
        view.release()
        if fh.read(1):
            raise _Invalid(f"array {key!r} has data beyond its shape {shape}")
    arr = np.frombuffer(buf, dtype=dtype, count=count)
    return arr.reshape(shape, order="F" if fortran else "C")


def _metadata(arr):
    """The metadata dict, with its entries checked."""
    if arr.ndim != 0 or arr.dtype.kind != "U":
        raise _Invalid(f"metadata must be a text scalar, got dtype {arr.dtype}, shape {arr.shape}")
    try:
        meta = json.loads(str(arr[()]))
    except json.JSONDecodeError as exc:
        raise _Invalid(f"metadata is not valid JSON ({exc})") from None
    except RecursionError:
        raise _Invalid("metadata nests deeper than JSON can be read") from None
    if not isinstance(meta, dict):
        raise _Invalid(f"metadata must be a JSON object, got {type(meta).__name__}")
    missing = [k for k in METADATA if k not in meta]
    if missing:
        raise _Invalid(f"metadata lacks the keys {missing}")
    unknown = sorted(k for k in meta if k not in METADATA + OPTIONAL_METADATA)
    if unknown:
        warnings.warn(f"ignoring metadata keys this version does not know: {unknown} (a file from a newer "
                      f"version?)", stacklevel=3)
    if meta["method"] not in METHODS:
        raise _Invalid(f"metadata: method must be one of {list(METHODS)}, got {v.shown(meta['method'])}")
    for key in ("dt", "rtol", "atol"):
        if meta[key] is not None:
            meta[key] = v.real_scalar(f"metadata {key}", meta[key], minimum=0.0, strict=True)
    if meta["seed"] is not None:
        meta["seed"] = v.integer("metadata seed", meta["seed"])
    meta["noise"] = v.real_scalar("metadata noise", meta.get("noise", 0.0), minimum=0.0)
    meta["n_rhs"] = v.integer("metadata n_rhs", meta["n_rhs"], minimum=0)
    for key in ("steps_accepted", "steps_rejected"):
        if meta.get(key) is not None:
            meta[key] = v.integer(f"metadata {key}", meta[key], minimum=0)
        else:
            meta[key] = None
    _summation(meta)
    _status(meta)
    if not isinstance(meta["version"], str):
        raise _Invalid(f"metadata: version must be a string, got {v.shown(meta['version'])}")
    if not isinstance(meta["model"], dict):
        raise _Invalid(f"metadata: model must be a JSON object, got {type(meta['model']).__name__}")
    try:
        meta["model"] = Model.from_params(meta["model"])
    except (TypeError, ValueError) as exc:
        raise _Invalid(f"metadata: model: {exc}") from None
    return meta


def _summation(meta):
    """Check ``summation``, ``degree`` and ``error_bound`` together (absent: direct summation)."""
    summation = meta.get("summation")
    if summation is None:
        summation = meta["summation"] = "direct"
    if summation not in SUMMATIONS:
        raise _Invalid(f"metadata: summation must be one of {list(SUMMATIONS)}, got {v.shown(summation)}")
    degree, bound = meta.get("degree"), meta.get("error_bound")
    if summation == "direct":
        if degree is not None or bound is not None:
            raise _Invalid(f"metadata: a run with direct summation has no degree or error_bound, "
                           f"got degree {v.shown(degree)}, error_bound {v.shown(bound)}")
        meta["degree"] = meta["error_bound"] = None
        return
    if degree is None or bound is None:
        raise _Invalid(f"metadata: a run with fast summation records its degree and error_bound, "
                       f"got degree {v.shown(degree)}, error_bound {v.shown(bound)}")
    meta["degree"] = v.integer("metadata degree", degree, minimum=0)
    meta["error_bound"] = v.real_scalar("metadata error_bound", bound, minimum=0.0)


def _status(meta):
    """Check ``status`` and ``message`` (absent: a run that completed, with its message)."""
    name = meta.get("status")
    if name is None:
        name = Status.COMPLETED.name
    if name not in PARTICLE_STATUSES:
        raise _Invalid(f"metadata: status must be one of {list(PARTICLE_STATUSES)}, got "
                       f"{v.shown(name)}")
    status = meta["status"] = Status[name]
    message = meta.get("message")
    if message is None:
        message = status.message
    if not isinstance(message, str):
        raise _Invalid(f"metadata: message must be a string, got {v.shown(message)}")
    meta["message"] = message


def _real(key, arr, shape):
    """``arr`` as float64 after checking its dtype (real floating point), shape and finiteness."""
    if arr.dtype.kind != "f":
        raise _Invalid(f"array {key!r} must hold real floating-point numbers, got dtype {arr.dtype}")
    if arr.shape != shape:
        raise _Invalid(f"array {key!r} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise _Invalid(f"array {key!r} must be finite (no NaN or inf)")
    # the array read from the file is private: no copy unless the dtype or the order differ
    return np.ascontiguousarray(arr, dtype=np.float64)


def _build(cls, arrays, meta):
    """The Trajectory, after checking the arrays against one another and against the model."""
    model = meta["model"]
    x = arrays["x"]
    if x.ndim != 3 or x.shape[0] < 1 or x.shape[1] < 1 or x.shape[2] < 2:
        raise _Invalid(f"array 'x' must have shape (F, n, d) with F >= 1, n >= 1, d >= 2, got {x.shape}")
    f, n, d = x.shape
    x = _real("x", x, (f, n, d))
    # a frame at a time: no temporary as large as x (240 MB at 100,000 tokens and 101 frames)
    err = max(float(np.max(np.abs(np.linalg.norm(xf, axis=1) - 1.0))) for xf in x)
    if err > UNIT_TOL:
        raise _Invalid(f"array 'x' must hold unit vectors (|x_i| = 1 within {UNIT_TOL:g}); the largest "
                       f"deviation is {err:.3g}")
    t = _real("t", arrays["t"], (f,))
    if np.any(np.diff(t) <= 0):
        raise _Invalid("array 't' must be strictly increasing")
    energy = _real("energy", arrays["energy"], (f,))
    frozen = arrays["frozen"]
    if frozen.dtype != bool or frozen.shape != (n,):
        raise _Invalid(f"array 'frozen' must be a boolean array of shape ({n},), got dtype {frozen.dtype}, "
                       f"shape {frozen.shape}")
    xi = arrays["xi"]
    if model.labels != "prompt" and xi.dtype.kind != "f":
        raise _Invalid(f"array 'xi' must hold real floating-point positions, got dtype {xi.dtype}")
    try:
        model.check_dimension(d)
        xi = model.check_labels(xi, n)
    except (TypeError, ValueError) as exc:
        raise _Invalid(f"the model and the arrays disagree: {exc}") from None
    radius = _radius(arrays.get("radius"), model, (f, n))
    return cls(t=t, x=x, xi=xi, energy=energy, model=model, method=meta["method"], dt=meta["dt"],
               rtol=meta["rtol"], atol=meta["atol"], frozen=frozen.copy() if frozen.any() else None,
               seed=meta["seed"], n_rhs=meta["n_rhs"], steps_accepted=meta["steps_accepted"],
               steps_rejected=meta["steps_rejected"], version=meta["version"],
               summation=meta["summation"], degree=meta["degree"], error_bound=meta["error_bound"],
               status=meta["status"], message=meta["message"], radius=radius,
               noise=meta["noise"])


def _radius(arr, model, shape):
    """The radii of a pre-LN run, checked (positive, shape ``(F, n)``); None for post-LN."""
    pre = model.layer_norm == "pre"
    if arr is None:
        if pre:
            raise _Invalid(f"a pre-LN run (model {model.name!r}) records its radii: array "
                           f"'radius' is missing")
        return None
    if not pre:
        raise _Invalid(f"array 'radius' belongs to a pre-LN run, but model {model.name!r} is "
                       f"post-LN (its tokens stay on the sphere)")
    radius = _real("radius", arr, shape)
    if np.any(radius <= 0.0):
        raise _Invalid("array 'radius' must hold positive radii")
    return radius
