"""Deployment settings read from the environment, so a deployment changes no code.

``HINDSIGHT_PATH`` (data directory of the embedded default), ``HINDSIGHT_DATABASE_URL`` (a PostgreSQL
store), ``HINDSIGHT_CHROMA_URL`` (a Chroma server) and ``HINDSIGHT_REDIS_URL`` (activation in Redis, or
a Redis Cluster with ``redis+cluster://``) configure every engine built without those arguments: the
one an application constructs, the process-wide engine the adapters share and the command line's.
An explicit argument always wins; an explicit empty string turns the service off for that engine
even when its variable is set (``Hindsight(chroma_url="")`` is embedded Chroma)."""

from __future__ import annotations

import os
from pathlib import Path

PATH_ENV = "HINDSIGHT_PATH"
DATABASE_URL_ENV = "HINDSIGHT_DATABASE_URL"
CHROMA_URL_ENV = "HINDSIGHT_CHROMA_URL"
REDIS_URL_ENV = "HINDSIGHT_REDIS_URL"

#: Where the embedded default keeps its data when neither ``path=`` nor ``$HINDSIGHT_PATH`` says.
DEFAULT_PATH = ".hindsight"


def default_path() -> Path:
    return Path(os.environ.get(PATH_ENV) or DEFAULT_PATH)


def service_url(explicit: str | None, variable: str) -> str | None:
    """``explicit`` when given (``""`` means "none"), else the environment variable; ``None`` when
    neither names a service."""
    value = os.environ.get(variable) if explicit is None else explicit
    value = (value or "").strip()
    return value or None


def database_url(explicit: str | None = None) -> str | None:
    return service_url(explicit, DATABASE_URL_ENV)


def chroma_url(explicit: str | None = None) -> str | None:
    return service_url(explicit, CHROMA_URL_ENV)


def redis_url(explicit: str | None = None) -> str | None:
    return service_url(explicit, REDIS_URL_ENV)


__all__ = [
    "CHROMA_URL_ENV",
    "DATABASE_URL_ENV",
    "PATH_ENV",
    "REDIS_URL_ENV",
    "chroma_url",
    "database_url",
    "default_path",
    "redis_url",
    "service_url",
]
