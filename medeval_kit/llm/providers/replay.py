"""``replay/<provider>/<model>``: answers from the cache only; any call that reaches it is a miss."""

from __future__ import annotations

from ..errors import CacheMissError
from ..registry import REPLAY, provider
from ..types import Request
from .base import Completion, Provider


@provider(REPLAY)
class ReplayProvider(Provider):
    """Answers from the cache only; any call that reaches it is a miss."""

    default_concurrency = 64
    uses_network = False

    async def acomplete(self, request: Request) -> Completion:
        raise CacheMissError(f"replay: no cached answer for {self.spec.id}: {request.preview()!r}")
