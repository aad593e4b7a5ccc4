"""Nothing can write unfenced through the controller's admin session (controller.zk.fenced_session).

Every public member of ZkSession must be overridden by FencedSession, and every one that is not a read must,
when this node is not the active controller, raise AdminWriteFenced before it reaches the session underneath.
A write method added to ZkSession and not to FencedSession fails the first test: it would otherwise be
inherited, and run against the inner session without the epoch check.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, cast

import pytest

from controller.zk.errors import AdminWriteFenced
from controller.zk.fenced_session import READS, FencedSession
from controller.zk.session import ZkSession


def _public(cls: type) -> set[str]:
    return {name for name in vars(cls) if not name.startswith("_")}


def _zk_session_public() -> set[str]:
    """ZkSession's public methods and properties (its instance attributes are the kazoo client and settings,
    which FencedSession does not have)."""
    return _public(ZkSession)


class _Inner:
    """A session that records every member asked of it and answers reads with nothing."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.on_fenced: Callable[[], None] | None = None

    def __getattr__(self, name: str) -> Any:
        self.asked.append(name)
        return lambda *_args, **_kwargs: None


def _dummy(parameter: inspect.Parameter) -> Any:
    """An argument for a required parameter, by its annotation (the write must refuse before using it)."""
    annotation = str(parameter.annotation)
    if annotation.startswith("Sequence") or annotation.startswith("Iterable"):
        return ["/fenced/x"]
    if annotation.startswith("bytes"):
        return b"x"
    if annotation.startswith("int") or annotation.startswith("float"):
        return 0
    if annotation.startswith("Callable"):
        return lambda *_args: None
    return "/fenced/x"


def test_every_public_member_of_zk_session_is_overridden() -> None:
    missing = sorted(_zk_session_public() - _public(FencedSession))
    assert missing == [], f"ZkSession members FencedSession inherits, unfenced: {missing}"


def test_the_reads_are_zk_session_members() -> None:
    assert sorted(READS - _zk_session_public()) == []


@pytest.mark.parametrize("name", sorted(_zk_session_public() - READS))
def test_each_write_is_refused_without_the_fence(name: str) -> None:
    inner = _Inner()
    fenced = FencedSession(cast(ZkSession, inner), lambda: None)
    member = getattr(FencedSession, name)
    assert callable(member), f"{name}: a write member of ZkSession that is not a method"
    signature = inspect.signature(member)
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for parameter in list(signature.parameters.values())[1:]:
        if parameter.default is not inspect.Parameter.empty or parameter.kind is parameter.VAR_KEYWORD:
            continue
        if parameter.kind is parameter.KEYWORD_ONLY:
            kwargs[parameter.name] = _dummy(parameter)
        else:
            args.append(_dummy(parameter))
    with pytest.raises(AdminWriteFenced):
        getattr(fenced, name)(*args, **kwargs)
    writes = [n for n in inner.asked if n not in READS]
    assert writes == [], f"{name} reached the inner session's {writes} without the fence"
