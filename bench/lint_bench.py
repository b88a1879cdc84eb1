"""Time `lint_agent` on a 100 KB instruction text with 200 variables (what the live preview does).

Run: .venv/bin/python bench/lint_bench.py  — prints milliseconds per call (best and median).
Not a test: timings depend on the machine.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.core.compile import compile_instructions
from agents.core.lint import lint_agent
from agents.core.spec import (
    AgentSpec,
    AppSpec,
    ToolKind,
    ToolSpec,
    VariableSpec,
    VariableType,
)

VARIABLES = 200
TARGET_BYTES = 100_000


def build_app() -> tuple[AppSpec, str]:
    variables = tuple(
        VariableSpec(f"var_{i}", VariableType.TEXT, default=f"value {i}", description=f"Var {i}")
        for i in range(VARIABLES)
    )
    tools = tuple(
        ToolSpec(
            f"Tool{i}",
            ToolKind.PYTHON,
            python_code=(
                f'def Tool{i}():\n    """Tool {i}."""\n'
                f'    context.state["var_{i}"] = "x"\n    return {{}}\n'
            ),
        )
        for i in range(10)
    )
    lines: list[str] = []
    size = 0
    i = 0
    while size < TARGET_BYTES:
        n = i % VARIABLES
        line = (
            f"Step {i}: greet {{{{var_{n}}}}} and remember {{var_{(n + 1) % VARIABLES}}}; "
            f'use {{@TOOL: Tool{i % 10}}} if needed, keep {{"a": 1}} as text. '
        )
        if i % 50 == 0:
            line += f'{{% if var_{n} == "value {n}" %}}Formal.{{% else %}}Casual.{{% endif %}}'
        if i % 97 == 0:
            line += "{unknown_thing} "
        lines.append(line)
        size += len(line) + 1
        i += 1
    text = "\n".join(lines)
    agent = AgentSpec("Root", instructions="", tools=tuple(t.name for t in tools), is_root=True)
    return AppSpec("Bench", variables=variables, tools=tools, agents=(agent,)), text


def main() -> None:
    app, text = build_app()
    lint_agent(app, "Root", instructions=text)  # warm caches (code analysis, classification)
    timings = []
    for run in range(30):
        edited = text + f" typed {run}"  # a new text each time, like keystrokes
        start = time.perf_counter()
        diagnostics = lint_agent(app, "Root", instructions=edited)
        timings.append((time.perf_counter() - start) * 1000)
    print(
        f"lint_agent: {len(text) / 1000:.0f} KB, {VARIABLES} variables, "
        f"{len(diagnostics)} diagnostics: best {min(timings):.2f} ms, "
        f"median {statistics.median(timings):.2f} ms"
    )
    # What one keystroke costs the core in the live preview: lint, compile, spans.
    values = app.default_values()
    together = []
    for run in range(30):
        edited = text + f" typed {run}"
        start = time.perf_counter()
        lint_agent(app, "Root", instructions=edited)
        compiled = compile_instructions(edited, values)
        _ = compiled.spans
        together.append((time.perf_counter() - start) * 1000)
    print(
        f"lint_agent + compile_instructions (+ spans): best {min(together):.2f} ms, "
        f"median {statistics.median(together):.2f} ms"
    )


if __name__ == "__main__":
    main()
