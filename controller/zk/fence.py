"""The controller-epoch fence: a multi whose first op checks ``/controller_epoch`` at the version this node's
election gave it, as Kafka's controller fences its writes (``KafkaZkClient.wrapRequestWithControllerEpochCheck``:
a ``MultiRequest`` led by ``CheckOp(ControllerEpochZNode.path, expectedControllerEpochZkVersion)``).

Both fenced writers build their multis here: the controller's own writes
(:class:`controller.zk.fenced_writer.FencedWriter`) and the admin writes it makes for clients
(:class:`controller.zk.fenced_session.FencedSession`). A refused check means another controller was elected
since; nothing of the multi was written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from controller.zk.errors import BadVersionError, KazooException, RolledBackError
from controller.zk.ops import Check, Op
from zkmodel import paths


def fenced(ops: Sequence[Op], epoch_zk_version: int) -> list[Op]:
    """``ops`` as one fenced multi: the epoch check first, so the multi is written only while it holds."""
    return [Check(paths.CONTROLLER_EPOCH, epoch_zk_version), *ops]


def refused(results: Sequence[Any]) -> bool:
    """Whether the fence of a fenced multi's ``results`` was refused (another controller was elected)."""
    return isinstance(results[0], BadVersionError)


def unfence(results: Sequence[Any], moved: Callable[[], Exception]) -> list[Any]:
    """The results of a fenced multi's own ops. Raises ``moved()`` when the fence was refused, and the check's
    own error when it failed otherwise (a rolled-back check only says another op of the multi failed)."""
    if refused(results):
        raise moved()
    check = results[0]
    if isinstance(check, KazooException) and not isinstance(check, RolledBackError):
        raise check
    return list(results[1:])
