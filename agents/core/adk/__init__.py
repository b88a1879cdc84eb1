"""Export an app as a Python package that Google's Agent Development Kit runs as it is, and
its goldens as ADK evalsets (``package``); read ADK evalsets back as scenarios
(``evalsets``). Pure Python: the package is built as files (path → bytes)."""
