"""An app's tools (Python, OpenAPI, MCP, CX platform) and their mocks."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from agents.core import spec
from agents.core.rules import (
    NAME_PATTERN,
    TOOL_KIND_MAX_LENGTH,
    TOOL_NAME_MAX_LENGTH,
)
from agents.fields import OrderedJSONField
from agents.models.app import AgentApp
from agents.models.base import TimestampedModel


class ToolKind(models.TextChoices):
    PYTHON = spec.ToolKind.PYTHON, _("Python")
    OPENAPI = spec.ToolKind.OPENAPI, _("OpenAPI")
    MCP = spec.ToolKind.MCP, _("MCP")
    PLATFORM = spec.ToolKind.PLATFORM, _("Platform (CX)")


class Tool(TimestampedModel):
    app = models.ForeignKey(
        AgentApp, on_delete=models.CASCADE, related_name="tools", verbose_name=_("app")
    )
    name = models.CharField(max_length=TOOL_NAME_MAX_LENGTH, verbose_name=_("name"))
    kind = models.CharField(
        max_length=TOOL_KIND_MAX_LENGTH,
        choices=ToolKind.choices,
        default=ToolKind.PYTHON,
        verbose_name=_("kind"),
    )
    description = models.TextField(blank=True, verbose_name=_("description"))
    python_code = models.TextField(
        blank=True,
        help_text=_("Python tool: a function named like the tool."),
        verbose_name=_("python code"),
    )
    openapi_spec = OrderedJSONField(
        null=True,
        blank=True,
        help_text=_("OpenAPI tool: an OpenAPI 3 document with one operation."),
        verbose_name=_("openapi spec"),
    )
    mcp_url = models.URLField(
        blank=True, help_text=_("MCP tool: Streamable-HTTP server URL."), verbose_name=_("mcp url")
    )
    mcp_headers = OrderedJSONField(
        default=dict,
        blank=True,
        help_text=_('MCP tool: headers, e.g. {"X-User": "$context.variables.user_id"}.'),
        verbose_name=_("mcp headers"),
    )
    mock_enabled = models.BooleanField(default=False, verbose_name=_("mock enabled"))
    mock_state = OrderedJSONField(
        default=dict,
        blank=True,
        help_text=_("Mock: variable values the tool sets when called."),
        verbose_name=_("mock state"),
    )
    mock_response = OrderedJSONField(
        null=True,
        blank=True,
        help_text=_("Mock: the JSON response."),
        verbose_name=_("mock response"),
    )
    cx = OrderedJSONField(
        default=dict,
        blank=True,
        editable=False,
        help_text=_("What a CX import kept verbatim (CX fields Statecraft does not edit)."),
        verbose_name=_("cx"),
    )

    class Meta:
        verbose_name = _("tool")
        verbose_name_plural = _("tools")
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["app", "name"], name="tool_unique_name_per_app"),
            models.CheckConstraint(
                condition=models.Q(name__regex=NAME_PATTERN), name="tool_name_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(kind__in=ToolKind.values), name="tool_kind_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def to_spec(self) -> spec.ToolSpec:
        mock = (
            spec.ToolMock(state=dict(self.mock_state or {}), response=self.mock_response)
            if self.mock_enabled
            else None
        )
        return spec.ToolSpec(
            name=self.name,
            kind=spec.ToolKind(self.kind),
            description=self.description,
            python_code=self.python_code,
            openapi=self.openapi_spec,
            mcp_url=self.mcp_url,
            mcp_headers=tuple((str(k), str(v)) for k, v in (self.mcp_headers or {}).items()),
            mock=mock,
            cx=dict(self.cx or {}),
        )
