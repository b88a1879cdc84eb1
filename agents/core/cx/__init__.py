"""Everything CX Agent Studio: the app ZIP both ways (`app`, the entry points; `layout`,
`export` with `write_back`, `archive`, `import_` with `import_state` and `import_tools`),
schemas (`schema_to_cx`, `schema_from_cx`) and variable declarations (`variables`) both
ways, golden evaluations (`evaluations`), what an import keeps (`carry`) and CX's fields
(`fields`). Pure Python, like the rest of the core."""

from agents.core.cx import app, schema_from_cx, schema_to_cx, variables

__all__ = ["app", "schema_from_cx", "schema_to_cx", "variables"]
