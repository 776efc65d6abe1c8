"""HindsightMemoryMiddleware(starting_memories=...) in a real create_agent: a new user's first model call
already sees the template, marked as the user's memory only until they say otherwise."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, SystemMessage

from hindsight_core import Hindsight, InvalidInputError
from hindsight_langchain import HindsightMemoryMiddleware

from .conftest import RecordingToolModel

UNITS = "The user prefers metric units."


@dataclass
class Ctx:
    user_id: str


def _system_of_first_call(hs: Hindsight, prefix: str, user: str, template: object) -> str:
    model = RecordingToolModel(messages=iter([AIMessage("ok")]))
    agent = create_agent(model, system_prompt="Be brief.", context_schema=Ctx, middleware=[
        HindsightMemoryMiddleware(hs, namespace_prefix=prefix, starting_memories=template)])
    agent.invoke({"messages": [{"role": "user", "content": "Which units should you use for me?"}]},
                 context=Ctx(user))
    first = model.prompts[0][0]
    assert isinstance(first, SystemMessage)
    return str(first.content)


def test_a_new_user_starts_with_the_template(hs: Hindsight, ns: str) -> None:
    prefix = ns + ":"
    assert UNITS not in _system_of_first_call(hs, prefix, "ana", None)  # without a template: nothing
    assert UNITS in _system_of_first_call(hs, prefix, "bo", [UNITS])
    assert [m.content for m in hs.find(f"{prefix}bo") if m.starting] == [UNITS]
    _system_of_first_call(hs, prefix, "bo", [UNITS])  # a later run applies nothing again
    assert [m.content for m in hs.find(f"{prefix}bo") if m.starting] == [UNITS]


def test_a_bad_template_is_refused_at_construction(hs: Hindsight) -> None:
    with pytest.raises(InvalidInputError):
        HindsightMemoryMiddleware(hs, starting_memories=[{"content": "x", "kind": "turn"}])
