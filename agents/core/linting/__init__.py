"""Lint's checks by concern (the entry points: ``agents.core.lint``)."""
