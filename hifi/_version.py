"""Package version, single source for datasets and the CLI."""

__version__ = "0.1.0"
