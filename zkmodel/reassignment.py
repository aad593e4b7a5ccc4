"""KIP-455 replica-assignment arithmetic (``ControllerContext.ReplicaAssignment`` in Kafka).

Kept as pure functions so the controller, the reassign CLI and the Spark planner agree on what RS, AR
and RR become for any start state, including re-targeting and cancelling a move in flight.
"""

from collections.abc import Sequence
from dataclasses import dataclass

Replicas = tuple[int, ...]


@dataclass(frozen=True)
class ReplicaAssignment:
    """RS (all replicas, targets first while moving), AR (adding) and RR (removing)."""

    replicas: Replicas
    adding: Replicas = ()
    removing: Replicas = ()

    # Asked for again and again (a 100,000-partition move asks per partition in validation, the trigger, the
    # completion check and the epoch bump): a partition not moving answers with RS itself, a moving one computes
    # once into the instance's dict (functools.cached_property would do it under one lock shared by every
    # instance in Python 3.11, which cost more than the tuple).
    @property
    def origin(self) -> Replicas:
        """ORS = RS - AR: where the partition was before the move."""
        return self._without("_origin", self.adding)

    @property
    def target(self) -> Replicas:
        """TRS = RS - RR: where the partition will be after the move."""
        return self._without("_target", self.removing)

    def _without(self, slot: str, excluded: Replicas) -> Replicas:
        if not excluded:
            return self.replicas
        found: Replicas | None = self.__dict__.get(slot)
        if found is None:
            found = self.__dict__[slot] = tuple(r for r in self.replicas if r not in excluded)
        return found

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    def reassign_to(self, target: Sequence[int]) -> "ReplicaAssignment":
        """Start (or re-target) a move: RS = distinct(target ++ origin), AR = RS - origin, RR = RS - target."""
        origin = self.origin
        target = tuple(target)
        full = tuple(dict.fromkeys(target + origin))
        if len(full) == len(target) + len(origin):
            return ReplicaAssignment(full, target, origin)  # disjoint, no repeats: AR = target, RR = origin
        return ReplicaAssignment(
            full, tuple([r for r in full if r not in origin]), tuple([r for r in full if r not in target])
        )

    def cancel(self) -> "ReplicaAssignment":
        """Return to the origin; as in Kafka the original order is not guaranteed to come back."""
        return self.reassign_to(self.origin)

    def complete(self) -> "ReplicaAssignment":
        """The state written in phase B6: RS = TRS with AR and RR empty."""
        return ReplicaAssignment(self.target)
