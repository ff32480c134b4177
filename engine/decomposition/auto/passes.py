"""What the automatic decomposition models of a scenario: its forward passes are the hand decomposition's
(engine/decomposition/phases.py `forward_passes`, one definition); parallelism and chunked-prefill
schedules are not modelled automatically yet, and `check_supported` names the field.
"""

from __future__ import annotations

from engine.decomposition.phases import forward_passes  # noqa: F401  (re-exported for the automatic decomposition)

UNSUPPORTED_SETTINGS = {   # Scenario field -> value the automatic decomposition models
    "tp": 1, "pp": 1, "dp": 1, "ep": 1, "chunked_prefill": False,
}


def check_supported(scenario) -> None:
    """Raise ValueError naming a scenario setting the automatic decomposition does not model yet."""
    for name, plain in UNSUPPORTED_SETTINGS.items():
        value = getattr(scenario, name, plain)
        if value is not None and value != plain:
            raise ValueError(f"scenario {name}={value!r} is not modelled by the automatic decomposition yet "
                             f"(only {name}={plain!r}); use a hand-modelled model or drop the setting")
