"""The package version (``pyproject.toml``), readable below the package root."""

__version__ = "0.1.0"
