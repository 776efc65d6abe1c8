"""The engine's public shape: an explicit facade (no mixins, every option named), and async twins with the
real signatures of their sync methods, all refused once the engine is closed."""

from __future__ import annotations

import inspect

import pytest

from hindsight_core import EngineClosedError, Hindsight
from hindsight_core.engine import _OPEN_AFTER_CLOSE

#: async names whose sync twin is not ``name[1:]``
_RENAMED = {"await_for_consolidation": "wait_for_consolidation"}


def _async_methods() -> list[str]:
    return [n for n, v in vars(Hindsight).items() if not n.startswith("_") and inspect.iscoroutinefunction(v)]


def test_hindsight_is_a_plain_class_with_every_option_in_its_constructor() -> None:
    assert Hindsight.__bases__ == (object,)
    params = inspect.signature(Hindsight.__init__).parameters.values()
    assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in params)
    names = {p.name for p in params}
    assert {"reranker", "extractor", "background_consolidation"} <= names


def test_every_async_method_has_the_signature_of_its_sync_twin() -> None:
    methods = _async_methods()
    assert len(methods) >= 25
    for name in methods:
        sync = getattr(Hindsight, _RENAMED.get(name, name[1:]))
        twin = inspect.signature(getattr(Hindsight, name))
        ours = inspect.signature(sync)
        assert list(twin.parameters) == list(ours.parameters), name
        for param in ours.parameters.values():
            other = twin.parameters[param.name]
            assert (other.kind, other.default) == (param.kind, param.default), (name, param.name)


def test_every_sync_method_with_a_twin_is_public() -> None:
    sync_names = {n for n, v in vars(Hindsight).items() if not n.startswith("_") and inspect.isfunction(v)}
    for name in _async_methods():
        assert _RENAMED.get(name, name[1:]) in sync_names, name


async def test_async_twins_run_the_sync_path(engine: Hindsight) -> None:
    hs = engine
    m = await hs.arecord("I moved to Lisbon last spring", "ns", session_id="s1")
    assert (await hs.aget(m.id, namespace="ns")) == hs.get(m.id, namespace="ns")
    assert [x.id for x in await hs.afind("ns")] == [m.id]
    await hs.aclose()
    for name in _async_methods():
        if name in _OPEN_AFTER_CLOSE:
            continue
        with pytest.raises(EngineClosedError):
            await getattr(hs, name)()
