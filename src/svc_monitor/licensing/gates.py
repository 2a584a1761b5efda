"""The FastAPI side of feature gates: a route that needs a paid feature says

    @router.get(..., dependencies=[RequireFeature(Feature.ANOMALY_DETECTION).depends],
                responses=error_responses(403))

and answers 403 naming the feature and the tier it needs when this install's tier
does not include it. Which tier unlocks what lives in tiers.py, nowhere else.
"""

from typing import Any

from fastapi import Depends, Request

from svc_monitor.errors import Forbidden
from svc_monitor.licensing.tiers import Feature, Tier


class FeatureLocked(Forbidden):
    def __init__(self, feature: Feature, current: Tier) -> None:
        needed = feature.tier
        higher = " or Enterprise" if needed is Tier.PRO else ""
        super().__init__(
            f"{feature.label} needs the {needed.label}{higher} tier; this install runs "
            f"{current.label} (see Settings, License)"
        )
        self.extra = {
            "feature": feature.value,
            "requiredTier": needed.value,
            "currentTier": current.value,
        }


class RequireFeature:
    """A route dependency; `feature` is kept so tests and docs can list gated routes."""

    def __init__(self, feature: Feature) -> None:
        self.feature = feature

    async def __call__(self, request: Request) -> None:
        license = request.app.state.services.license
        if not license.allows(self.feature):
            raise FeatureLocked(self.feature, license.tier)

    @property
    def depends(self) -> Any:
        return Depends(self)
