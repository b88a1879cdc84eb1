"""jsonschema's iri formats still checked when rfc3987_syntax is deferred (agents.core.lazy_iri).

Run in a fresh interpreter: the test process has long imported everything."""

import subprocess
import sys
import textwrap

PROBE = textwrap.dedent(
    """
    import sys
    import agents.core
    from jsonschema import Draft202012Validator as V

    def loaded():
        return not getattr(sys.modules.get("rfc3987_syntax"), "_statecraft_stand_in", False)

    print(loaded())
    for fmt in ("iri", "iri-reference"):
        v = V({"type": "string", "format": fmt}, format_checker=V.FORMAT_CHECKER)
        print(fmt, bool(list(v.iter_errors("http://a/b"))), bool(list(v.iter_errors("a b <>"))))
    print(loaded())
    """
)


def test_the_iri_parser_is_built_at_the_first_iri_check_and_checks_as_before():
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[0] == "False"  # importing agents.core and jsonschema did not build it
    assert out[1] == "iri False True"  # a valid IRI passes, an invalid one fails
    assert out[2] == "iri-reference False True"
    assert out[3] == "True"  # the real module took over
