"""Time integration on the sphere: Butcher tableaus, fixed and adaptive steppers (:mod:`.steppers`)."""

from . import steppers
from .steppers import (DOPRI5, EPS, METHODS, RK4, AdaptiveStepper, Advance, ButcherTableau, Control,
                       FixedStepper, GaugeField, Outcome, velocity)

__all__ = ["steppers", "DOPRI5", "EPS", "METHODS", "RK4", "AdaptiveStepper", "Advance",
           "ButcherTableau", "Control", "FixedStepper", "GaugeField", "Outcome", "velocity"]
