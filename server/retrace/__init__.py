"""Retrace: an AI coding agent whose every tool call ends in a checkpoint."""

__version__ = "0.1.0"
