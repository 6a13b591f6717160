"""The ``team`` network's calc: the ``multiply`` network's CodedTool (runs inside neuro-san)."""

from __future__ import annotations

from coded_tools.multiply.calculator import Calculator

__all__ = ["Calculator"]
