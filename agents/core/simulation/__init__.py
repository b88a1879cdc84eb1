"""The simulation's parts (the entry point and its rules: ``agents.core.simulate``)."""
