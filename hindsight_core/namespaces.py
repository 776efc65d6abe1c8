"""Namespace trees: ``/`` makes a namespace the root of the namespaces named below it.

``user:ana/store:memories`` is a child of ``user:ana``; ``user:anabel`` is not (a child starts with the
root *and the separator*, so a shared prefix of characters is never enough). Reads stay exact unless a
caller asks for the subtree (``recall(..., subtree=True)``); ``forget_namespace`` of a root erases its
children with it, because a root is whose data it is (one user, one erase). Pure string logic here,
so adapters and the store agree on what "under" means."""

from __future__ import annotations

from collections.abc import Iterable

#: Separates a namespace from its children.
SEPARATOR = "/"


def child_prefix(root: str) -> str:
    """What every child of ``root`` starts with."""
    return f"{root}{SEPARATOR}"


def within(namespace: str, root: str) -> bool:
    """Whether ``namespace`` is ``root`` or below it (never a sibling that merely shares characters)."""
    return namespace == root or namespace.startswith(child_prefix(root))


def under(namespaces: Iterable[str], root: str) -> list[str]:
    """The namespaces of ``namespaces`` in ``root``'s subtree, root first, then in name order."""
    found = sorted({ns for ns in namespaces if within(ns, root)})
    return sorted(found, key=lambda ns: ns != root)


def label_safe(value: str) -> bool:
    """Whether a value can fill one namespace label (a user id in ``user:{user_id}``): one containing
    the separator would name a child of another namespace, e.g. ``ana/store:x`` inside ``user:ana``."""
    return SEPARATOR not in value


__all__ = ["SEPARATOR", "child_prefix", "label_safe", "under", "within"]
