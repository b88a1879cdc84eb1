"""The domain app: apps, variables, schemas, tools, agents and callbacks."""
