"""Activation: log-space keys that stay sorted while everything decays (docs/architecture.md, "Activation")."""

from hindsight_core.activation.base import ActivationIndex, activation_key

__all__ = ["ActivationIndex", "activation_key"]
