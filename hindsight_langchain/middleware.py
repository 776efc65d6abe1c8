"""``HindsightMemoryMiddleware``: long-term memory for ``langchain.agents.create_agent``.

Before each model call it recalls what the engine knows about the latest user message and appends it
to the system message; after the agent finishes it records the turn (the last user message and
everything the agent did after it). The user — hence the namespace — comes from the runtime context
(``agent.invoke(..., context={"user_id": "alice"})``) or, as ``with_memory`` and the tools take it, from
``config={"configurable": {"user_id": "alice"}}``, so one agent serves many users and no user's
memories reach another's prompt. The thread id, when there is one, is the session id.

Each call's recall is the call's own: a retriever run (``hindsight_recall``) in the callbacks of the call
that made it (a handler in ``config={"callbacks": [...]}`` or LangSmith sees the query and the recalled
documents with their scores), and the agent state's ``hindsight_recall`` key, so
``agent.invoke(...)["hindsight_recall"]`` is what that call's latest model call was shown. The recall runs
in ``before_model`` (a hook that can update the state) and ``wrap_model_call`` injects what the state
holds, so nothing passes through the middleware object between the two; ``last_recall`` /
``last_recall_for`` are a convenience on top."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, NotRequired

from typing_extensions import TypedDict  # pydantic (the state's JSON schema) needs it on Python < 3.12

from hindsight_core.integration import require

require("langchain.agents.middleware", "langchain")

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse  # noqa: E402
from langchain.agents.middleware.types import OmitFromInput  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage  # noqa: E402

from hindsight_core.integration import (  # noqa: E402
    InvalidInputError,
    LatestRecalls,
    check_namespace,
    check_shared,
    query_text,
    resolve_engine,
    shared_from,
    start_user,
    starting_template,
    user_namespace,
    without_known,
)
from hindsight_langchain._common import atraced_recall, message_events, traced_recall  # noqa: E402

if TYPE_CHECKING:
    from hindsight_core import Hindsight, RecallResult


#: The agent-state key holding the recall of the call's latest model call (see :class:`HindsightRecall`).
RECALL_KEY = "hindsight_recall"


class HindsightRecall(TypedDict):
    """One call's recall, as the agent state holds it: plain JSON (a checkpointer stores it with the
    thread). The callbacks' retriever run carries the full documents (provenance, channels, reasons)."""

    #: What was recalled for: the latest user message.
    query: str
    #: Whose memories: ``namespace_prefix`` + user id.
    namespace: str
    #: The text appended to the system message; ``""`` when nothing relevant was found (nothing injected).
    prompt: str
    #: The memories behind ``prompt``, best first: ``memory_id``, ``content``, ``layer``, ``score`` and
    #: ``shared_from`` (the shared namespace a grant lent the memory from, ``None`` for the user's own).
    memories: list[dict[str, Any]]


class HindsightMemoryState(AgentState[Any]):
    """The agent state with the middleware's per-call recall (output only: an input cannot set it)."""

    hindsight_recall: NotRequired[Annotated[HindsightRecall | None, OmitFromInput]]


def recall_state(result: RecallResult) -> HindsightRecall:
    """``result`` as the agent state keeps it (:class:`HindsightRecall`)."""
    return {
        "query": result.query,
        "namespace": result.namespace,
        "prompt": result.to_prompt(),
        "memories": [
            {"memory_id": h.memory.id, "content": h.memory.content, "layer": h.memory.layer.value,
             "score": float(h.score), "shared_from": shared_from(h, result.namespace)}
            for h in result.hits
        ],
    }


def _last_human(messages: Sequence[BaseMessage]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            return index
    return None


def _run_configurable() -> Mapping[str, Any]:
    """The current graph run's ``config["configurable"]`` (empty outside a run)."""
    from langgraph.config import get_config

    try:
        return get_config().get("configurable") or {}
    except RuntimeError:  # outside a graph run
        return {}


def _with_context(system: SystemMessage | None, context: str) -> SystemMessage:
    if system is None:
        return SystemMessage(content=context)
    if isinstance(system.content, str):
        joined = f"{system.content}\n\n{context}" if system.content else context
        return SystemMessage(content=joined)
    return SystemMessage(content=[*system.content, {"type": "text", "text": context}])


class HindsightMemoryMiddleware(AgentMiddleware[HindsightMemoryState, Any]):
    """Recall into the system message, record after the agent.

    Each call's recall is ``agent.invoke(...)["hindsight_recall"]`` (a :class:`HindsightRecall`, ``None``
    when the call had no user message to recall for) and a ``hindsight_recall`` retriever run in that
    call's callbacks.

    ``context_key`` names the runtime-context field holding the user id (a mapping key or an
    attribute); the namespace is ``namespace_prefix + user id``. ``namespace`` (a callable taking the
    context) overrides that. ``default_namespace`` serves calls without a user; without it such calls
    raise, because guessing a user would break the wall between users. ``shared`` (default ``True``, as
    ``Hindsight.recall``) also searches the shared layers granted to the user's namespace or its root
    (``hs.grant("kb:support", to="user:ana")``); a shared memory's line in the system message says
    ``shared from <namespace>``. ``False`` leaves them out."""

    state_schema = HindsightMemoryState

    def __init__(
        self,
        engine: Hindsight | None = None,
        *,
        context_key: str = "user_id",
        namespace_prefix: str = "user:",
        namespace: Callable[[Any], str] | None = None,
        default_namespace: str | None = None,
        k: int = 5,
        budget_tokens: int = 800,
        layers: list[str] | None = None,
        record: bool = True,
        starting_memories: Any = None,
        shared: bool = True,
    ) -> None:
        super().__init__()
        #: A template each new user's root gets before the first recall (``Hindsight(starting_memories=...)``).
        self.starting_memories = starting_template(starting_memories)
        self.engine = resolve_engine(engine)
        self.context_key = context_key
        self.namespace_prefix = namespace_prefix
        self.namespace_fn = namespace
        self.default_namespace = default_namespace
        self.k = k
        self.budget_tokens = budget_tokens
        self.layers = layers
        self.record = record
        self.shared = check_shared(shared, who="HindsightMemoryMiddleware")
        self._recalls = LatestRecalls()

    @property
    def last_recall(self) -> RecallResult | None:
        """A convenience for a single user's script: the recall behind the latest model call (hits,
        scores, reasons), whoever made it. A call's own recall is ``agent.invoke(...)["hindsight_recall"]``
        and the retriever run in its callbacks; with several calls in flight, only those tell which recall
        was whose."""
        return self._recalls.latest

    def last_recall_for(self, namespace: str) -> RecallResult | None:
        """A convenience: the latest recall for one user's namespace (``namespace_prefix`` + user id),
        whatever other calls ran since (two calls of the same user in flight share it; each call's own is
        in its result and its callbacks)."""
        return self._recalls.for_namespace(namespace)

    # -- scope -----------------------------------------------------------------------------------
    def namespace_for(self, runtime: Any) -> str:
        context = getattr(runtime, "context", None)
        if self.namespace_fn is not None:
            return check_namespace(self.namespace_fn(context))
        user = (
            context.get(self.context_key) if isinstance(context, Mapping) else getattr(context, self.context_key, None)
        )
        if user is None or user == "":  # the way with_memory and the tools take it: config["configurable"]
            user = _run_configurable().get(self.context_key)
        if user is None or user == "":
            if self.default_namespace is not None:
                return check_namespace(self.default_namespace)
            raise InvalidInputError(
                f"HindsightMemoryMiddleware needs the user: invoke the agent with "
                f"context={{'{self.context_key}': ...}} or config={{'configurable': {{'{self.context_key}': ...}}}} "
                "(or pass default_namespace=...)"
            )
        return user_namespace(self.namespace_prefix, user, who="HindsightMemoryMiddleware")

    @staticmethod
    def session_for(runtime: Any) -> str | None:
        """The thread id: from the runtime (langgraph >= 1.2), else from the run's config."""
        info = getattr(runtime, "execution_info", None)
        thread = getattr(info, "thread_id", None) or _run_configurable().get("thread_id")
        return str(thread) if thread else None

    # -- before each model call: recall into the state, then inject what the state holds ---------
    def _query(self, messages: Sequence[BaseMessage]) -> str | None:
        index = _last_human(messages)
        if index is None:
            return None
        text = messages[index].text.strip()
        return query_text(text) if text else None

    def _args(self, runtime: Any) -> dict[str, Any]:
        return {
            "session_id": self.session_for(runtime),
            "k": self.k,
            "budget_tokens": self.budget_tokens,
            "layers": self.layers,
            "subtree": True,  # the user's root and everything under it (store items, saved facts)
            "shared": self.shared,
        }

    def _asked(self, state: Any, runtime: Any) -> tuple[str, str, list[BaseMessage]] | None:
        """What this model call recalls for: the query, the namespace and the messages the model will
        see; ``None`` when there is no user message."""
        messages = list(state.get("messages", []) if isinstance(state, Mapping) else [])
        query = self._query(messages)
        if query is None:
            return None
        return query, self.namespace_for(runtime), messages

    def _recalled(self, result: RecallResult, messages: list[BaseMessage]) -> dict[str, Any]:
        """The state update for one recall, minus what the messages already show verbatim."""
        result = without_known(result, set(), {m.text.strip() for m in messages})
        self._recalls.put(result)
        return {RECALL_KEY: recall_state(result)}

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        asked = self._asked(state, runtime)
        if asked is None:
            return {RECALL_KEY: None}
        query, namespace, messages = asked
        start_user(self.engine, namespace, self.starting_memories)
        # a retriever run under this call's before_model run (traced_recall takes the graph run's config)
        result = traced_recall(self.engine, query, namespace, **self._args(runtime))
        return self._recalled(result, messages)

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        asked = self._asked(state, runtime)
        if asked is None:
            return {RECALL_KEY: None}
        query, namespace, messages = asked
        await asyncio.to_thread(start_user, self.engine, namespace, self.starting_memories)
        result = await atraced_recall(self.engine, query, namespace, **self._args(runtime))
        return self._recalled(result, messages)

    @staticmethod
    def _inject(request: ModelRequest) -> ModelRequest:
        """The request with this call's recall (the state's, from ``before_model``) in its system message."""
        recall = (request.state or {}).get(RECALL_KEY)
        context = recall.get("prompt") if isinstance(recall, Mapping) else None
        if not context:
            return request
        return request.override(system_message=_with_context(request.system_message, context))

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse | AIMessage:
        return handler(self._inject(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse | AIMessage:
        return await handler(self._inject(request))

    # -- after the agent -------------------------------------------------------------------------
    def _turn(self, state: Any, runtime: Any) -> tuple[str, list[dict[str, Any]]] | None:
        """The events of this turn, keyed by message id so a re-run records nothing twice."""
        if not self.record:
            return None
        messages = list(state.get("messages", []) if isinstance(state, Mapping) else [])
        start = _last_human(messages)
        if start is None:
            return None
        tail = messages[start:]
        events: list[dict[str, Any]] = []
        limit = self.engine.config.write.max_content_chars
        # Tool calls and tool results are not recorded: the agent's state (its checkpointer) keeps them
        # for replay, and as memories they would crowd out what the user said.
        for event, message in zip(message_events(tail, self.session_for(runtime)), tail, strict=True):
            if event is None:
                continue
            event["content"] = event["content"][:limit]
            if message.id:
                event["source_id"] = f"lc-message:{message.id}"
            events.append(event)
        return (self.namespace_for(runtime), events) if events else None

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        turn = self._turn(state, runtime)
        if turn is not None:
            self.engine.record_many(turn[1], turn[0])
        return None

    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        turn = self._turn(state, runtime)
        if turn is not None:
            await self.engine.arecord_many(turn[1], turn[0])
        return None


__all__ = ["RECALL_KEY", "HindsightMemoryMiddleware", "HindsightMemoryState", "HindsightRecall", "recall_state"]
