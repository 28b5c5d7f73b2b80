"""Time integration: Butcher tableaus (:mod:`.tableaus`), one step-size controller
(:mod:`.controller`), fixed and adaptive steppers with the field's retraction (:mod:`.steppers`)
and one frame loop (:mod:`.loop`), shared by the particle and the density solvers."""

from . import controller, loop, steppers, tableaus
from .controller import EPS, Controller
from .loop import FrameRun, run_frames
from .steppers import (
    METHODS,
    AdaptiveStepper,
    Advance,
    Control,
    FixedStepper,
    GaugeField,
    Outcome,
    Workspace,
    velocity,
)
from .tableaus import DOPRI5, RK4, ButcherTableau

__all__ = ["controller", "loop", "steppers", "tableaus", "DOPRI5", "EPS", "METHODS", "RK4",
           "AdaptiveStepper", "Advance", "ButcherTableau", "Control", "Controller",
           "FixedStepper", "FrameRun", "GaugeField", "Outcome", "Workspace", "run_frames",
           "velocity"]
