"""``with_memory``: recall and recording for any LCEL chain — the modern replacement for
``RunnableWithMessageHistory`` (deprecated upstream), which records a session but recalls nothing from
earlier ones.

``with_memory(prompt | model)`` returns a runnable that, per call:

1. finds the user from the run (``config={"configurable": {"user_id": "ana", "session_id": "s1"}}`` or
   a LangGraph context) and fills the namespace template (``"user:{user_id}"`` by default);
2. recalls what long-term memory holds about the input, from any earlier session, and passes it to the
   chain as a prompt variable (``{memory}``), next to the session's own messages (``history``);
3. runs the chain, then records the turn (user input and reply) in the session log and as memories.

The recall is a retriever run in LangChain's callbacks (LangSmith shows query, hits and scores)."""

from __future__ import annotations

import functools
import operator
import warnings
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hindsight_core.integration import require

require("langchain_core", "langchain")

from langchain_core.callbacks import AsyncCallbackManagerForChainRun, CallbackManagerForChainRun  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage  # noqa: E402
from langchain_core.runnables import Runnable, RunnableConfig, RunnableSerializable  # noqa: E402
from langchain_core.runnables.config import ensure_config  # noqa: E402
from pydantic import ConfigDict, Field, PrivateAttr, model_validator  # noqa: E402

from hindsight_core.integration import (  # noqa: E402
    InvalidInputError,
    LatestRecalls,
    NamespaceTemplate,
    check_shared,
    fill_namespace,
    require_namespace,
    resolve_engine,
    template_fields,
)
from hindsight_langchain._common import (  # noqa: E402
    arecall_for_window,
    load,
    message_events,
    recall_for_window,
    run_values,
)
from hindsight_langchain.chat_history import HindsightChatMessageHistory  # noqa: E402

if TYPE_CHECKING:
    from hindsight_core import Hindsight, RecallResult


class HindsightRunnable(RunnableSerializable[dict[str, Any], Any]):
    """A chain with long-term memory; build it with :func:`with_memory`.

    Input is a dict with ``input_key`` (the user's message, a str or a message). The chain receives
    the same dict plus ``memory_key`` (the recalled memories as text, ``""`` when nothing is relevant)
    and, when ``history_key`` is set, the session's earlier messages. The session is
    ``configurable[session_key]`` (else ``thread_id``); without one the turn is still remembered, but
    there is no session log to replay. The output is the chain's; its text (an ``AIMessage``, a str, or
    ``output[output_key]``) is what is recorded as the reply. ``shared`` (default ``True``, as
    ``Hindsight.recall``) also recalls the shared layers granted to the user's namespace or its root; a
    shared memory's line in ``memory_key`` says ``shared from <namespace>``. ``False`` leaves them out."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    bound: Runnable[Any, Any]
    namespace: NamespaceTemplate = "user:{user_id}"
    engine: Any = Field(default=None, exclude=True)
    input_key: str = "input"
    memory_key: str = "memory"
    history_key: str | None = "history"
    output_key: str | None = None
    session_key: str = "session_id"
    k: int = 5
    budget_tokens: int = 800
    layers: list[str] | None = None
    record: bool = True
    shared: bool = True

    _engine: Any = PrivateAttr(default=None)
    _fields: list[str] = PrivateAttr(default_factory=list)
    _recalls: LatestRecalls = PrivateAttr(default_factory=LatestRecalls)

    def __init__(self, **data: Any) -> None:
        # Checked before pydantic runs, so ``namespace=None`` raises InvalidInputError with the hint every
        # adapter gives, not a ValidationError about str and tuple types.
        if "namespace" in data and data["namespace"] is None:
            require_namespace(None, who="with_memory")
        check_shared(data.get("shared", True), who="with_memory")  # "no" is refused, not read as a bool
        super().__init__(**data)

    @model_validator(mode="after")
    def _connect(self) -> HindsightRunnable:
        self._fields = template_fields(self.namespace)
        if not self._fields:
            fill_namespace(self.namespace, {}, who="with_memory")  # a fixed namespace is checked now
        if self.memory_key == self.input_key or self.history_key in (self.input_key, self.memory_key):
            raise InvalidInputError("input_key, memory_key and history_key must differ")
        self._engine = resolve_engine(self.engine)
        self._warn_without_memory_slot()
        return self

    def _warn_without_memory_slot(self) -> None:
        """A chain whose input names its variables (a prompt, or a sequence that starts with one) but not
        ``memory_key`` would be handed the memories and never show them to the model: a prompt reused
        from ``RunnableWithMessageHistory`` has no ``{memory}``. Said once, when the chain is wrapped."""
        try:
            variables = set((self.bound.get_input_jsonschema().get("properties") or {}).keys())
        except Exception:  # a runnable that cannot describe its input says nothing either way
            return
        if variables and self.memory_key not in variables:
            warnings.warn(
                f"with_memory: the chain's input has no {self.memory_key!r} variable (it takes "
                f"{sorted(variables)}), so the recalled memories never reach the model. Add "
                f"{{{self.memory_key}}} to the prompt (e.g. in the system message), or pass memory_key= naming "
                "the variable that should carry them.",
                UserWarning, stacklevel=4,
            )

    @property
    def hindsight(self) -> Hindsight:
        engine: Hindsight = self._engine
        return engine

    @property
    def last_recall(self) -> RecallResult | None:
        """The recall behind the latest call (hits, scores, reasons), whoever made it: with several users
        in flight, use :meth:`last_recall_for`."""
        return self._recalls.latest

    def last_recall_for(self, namespace: str) -> RecallResult | None:
        """The latest recall for one namespace (one user's, ``"user:42"``), whatever other calls ran since."""
        return self._recalls.for_namespace(namespace)

    # -- one turn, in steps shared by the sync and async paths -------------------------------------
    def _scope(self, config: RunnableConfig) -> tuple[str, str | None]:
        namespace = fill_namespace(self.namespace, run_values(config, self._fields), who="with_memory")
        configurable = ensure_config(config).get("configurable") or {}
        session = configurable.get(self.session_key) or configurable.get("thread_id")
        return namespace, str(session) if session else None

    def _query(self, value: dict[str, Any]) -> str:
        if not isinstance(value, dict):
            raise InvalidInputError(f"with_memory expects a dict input with {self.input_key!r}")
        if self.input_key not in value:
            keys = sorted(map(str, value))
            hint = f"; pass input_key={keys[0]!r} to use it" if len(keys) == 1 else (
                f"; pass input_key= naming the one of {keys} that holds the user's message" if keys else "")
            raise InvalidInputError(f"with_memory expects a dict input with {self.input_key!r}{hint}")
        message = value[self.input_key]
        text = message.text if isinstance(message, BaseMessage) else message
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError(f"{self.input_key!r} must be a non-empty str or message")
        return text

    def _recall_args(self, session: str | None) -> dict[str, Any]:
        return {
            "session_id": session, "k": self.k, "budget_tokens": self.budget_tokens, "layers": self.layers,
            "subtree": True, "shared": self.shared,
        }

    def _chain_input(self, value: dict[str, Any], history: list[BaseMessage], result: RecallResult) -> dict[str, Any]:
        self._recalls.put(result)
        chain_input = {**value, self.memory_key: result.to_prompt()}
        if self.history_key is not None:
            chain_input[self.history_key] = history
        return chain_input

    def _reply(self, output: Any) -> str | None:
        if self.output_key is not None and isinstance(output, dict):
            output = output.get(self.output_key)
        if isinstance(output, BaseMessage):
            return output.text
        return output if isinstance(output, str) else None

    def _turn(self, query: str, output: Any) -> list[BaseMessage]:
        reply = self._reply(output)
        return [HumanMessage(query)] + ([AIMessage(reply)] if reply and reply.strip() else [])

    def _open(self, value: dict[str, Any], config: RunnableConfig) -> _Turn:
        namespace, session = self._scope(config)
        log = HindsightChatMessageHistory(namespace, session, engine=self.hindsight) if session else None
        return _Turn(namespace=namespace, session=session, query=self._query(value), log=log)

    def _before(self, value: dict[str, Any], config: RunnableConfig) -> tuple[_Turn, dict[str, Any]]:
        """Steps 1-2: the scope, the session's messages and the recall; returns the chain's input."""
        turn = self._open(value, config)
        entries = turn.log.entries() if turn.log is not None else []
        history, ids = load(entries), {e["memory_id"] for e in entries if e.get("memory_id")}
        result = recall_for_window(self.hindsight, turn.query, turn.namespace, history, ids, config,
                                   **self._recall_args(turn.session))
        return turn, self._chain_input(value, history, result)

    async def _abefore(self, value: dict[str, Any], config: RunnableConfig) -> tuple[_Turn, dict[str, Any]]:
        turn = self._open(value, config)
        entries = await turn.log.aentries() if turn.log is not None else []
        history, ids = load(entries), {e["memory_id"] for e in entries if e.get("memory_id")}
        result = await arecall_for_window(self.hindsight, turn.query, turn.namespace, history, ids, config,
                                          **self._recall_args(turn.session))
        return turn, self._chain_input(value, history, result)

    def _after(self, turn: _Turn, output: Any) -> None:
        """Step 3: record the turn (user input and reply) in the session log, or as memories."""
        if not self.record:
            return
        messages = self._turn(turn.query, output)
        if turn.log is not None:
            turn.log.add_messages(messages)
        else:
            self.hindsight.record_many([e for e in message_events(messages, None) if e is not None], turn.namespace)

    async def _aafter(self, turn: _Turn, output: Any) -> None:
        if not self.record:
            return
        messages = self._turn(turn.query, output)
        if turn.log is not None:
            await turn.log.aadd_messages(messages)
        else:
            events = [e for e in message_events(messages, None) if e is not None]
            await self.hindsight.arecord_many(events, turn.namespace)

    def _invoke(self, value: dict[str, Any], run_manager: CallbackManagerForChainRun, config: RunnableConfig) -> Any:
        turn, chain_input = self._before(value, config)
        output = self.bound.invoke(chain_input, config)
        self._after(turn, output)
        return output

    async def _ainvoke(
        self, value: dict[str, Any], run_manager: AsyncCallbackManagerForChainRun, config: RunnableConfig
    ) -> Any:
        turn, chain_input = await self._abefore(value, config)
        output = await self.bound.ainvoke(chain_input, config)
        await self._aafter(turn, output)
        return output

    def _stream(
        self, inputs: Iterator[dict[str, Any]], run_manager: CallbackManagerForChainRun, config: RunnableConfig
    ) -> Iterator[Any]:
        """The chain's own chunks as they come; the turn is recorded with the whole reply once the
        stream ends (a stream the caller abandons records nothing)."""
        turn, chain_input = self._before(_one(inputs), config)
        chunks: list[Any] = []
        for chunk in self.bound.stream(chain_input, config):
            chunks.append(chunk)
            yield chunk
        self._after(turn, _joined(chunks))

    async def _astream(
        self, inputs: AsyncIterator[dict[str, Any]], run_manager: AsyncCallbackManagerForChainRun,
        config: RunnableConfig,
    ) -> AsyncIterator[Any]:
        turn, chain_input = await self._abefore(_one([item async for item in inputs]), config)
        chunks: list[Any] = []
        async for chunk in self.bound.astream(chain_input, config):
            chunks.append(chunk)
            yield chunk
        await self._aafter(turn, _joined(chunks))

    # -- Runnable --------------------------------------------------------------------------------
    def invoke(self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self._call_with_config(self._invoke, input, config, run_type="chain")

    async def ainvoke(self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return await self._acall_with_config(self._ainvoke, input, config, run_type="chain")

    def stream(self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any) -> Iterator[Any]:
        yield from self._transform_stream_with_config(iter([input]), self._stream, config, run_type="chain")

    async def astream(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        async def one() -> AsyncIterator[dict[str, Any]]:
            yield input

        async for chunk in self._atransform_stream_with_config(one(), self._astream, config, run_type="chain"):
            yield chunk

    def get_name(self, suffix: str | None = None, *, name: str | None = None) -> str:
        return super().get_name(suffix, name=name or "HindsightMemory")


@dataclass(frozen=True)
class _Turn:
    """One call's scope: where it records (the session log, or the namespace alone) and what was asked."""

    namespace: str
    session: str | None
    query: str
    log: HindsightChatMessageHistory | None


def _one(inputs: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """A streamed call's input: one dict (LCEL may hand it over in pieces, which add up)."""
    value: dict[str, Any] = {}
    for piece in inputs:
        if not isinstance(piece, dict):
            raise InvalidInputError(f"with_memory expects a dict input, got {type(piece).__name__}")
        value.update(piece)
    return value


def _joined(chunks: list[Any]) -> Any:
    """The whole reply from its chunks: message chunks and strings add up; anything else is taken as
    the last chunk holding the result so far."""
    if not chunks:
        return None
    try:
        return functools.reduce(operator.add, chunks)
    except TypeError:
        return chunks[-1]


def with_memory(
    runnable: Runnable[Any, Any],
    *,
    namespace: NamespaceTemplate = "user:{user_id}",
    engine: Hindsight | None = None,
    **options: Any,
) -> HindsightRunnable:
    """``runnable`` with long-term memory (see :class:`HindsightRunnable` for ``options``)::

        chain = with_memory(prompt | model, engine=hs)   # prompt uses {memory}, {history}, {input}
        chain.invoke({"input": "..."}, config={"configurable": {"user_id": "ana", "session_id": "s1"}})
    """
    return HindsightRunnable(bound=runnable, namespace=namespace, engine=engine, **options)


__all__ = ["HindsightRunnable", "with_memory"]
