"""The CX field lists Statecraft carries are those of the official google-cloud-ces types."""

from __future__ import annotations

import re

import pytest

from agents.core.cx.fields import FIELDS
from tests import optional

types = optional.ces_v1beta()


def _camel(name: str) -> str:
    return re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), name)


@pytest.mark.parametrize("message", sorted(FIELDS))
def test_the_field_list_is_the_official_one(message):
    proto = (
        types.App.VariableDeclaration
        if message == "VariableDeclaration"
        else getattr(types, message)
    )
    assert FIELDS[message] == {_camel(f) for f in proto.meta.fields}
