"""The version of usaav_edu (a leaf module, so that any module can read it)."""

__version__ = "0.1.0"
