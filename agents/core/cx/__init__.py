"""Everything CX Agent Studio: the app ZIP both ways (`app`), and schemas and variable
declarations both ways (`schemas`). Pure Python, like the rest of the core."""

from agents.core.cx import app, schemas

__all__ = ["app", "schemas"]
