"""The fields of CX Agent Studio's resources, as proto3 JSON names them (camelCase).

Read from ``google.cloud.ces_v1beta.types`` (google-cloud-ces); ``tests/core/test_cx_fields.py``
checks them against the installed package. Import uses them to tell a field CX has but
Statecraft does not edit (kept as is) from a typo (``instructon``), which it reports.
"""

from __future__ import annotations

FIELDS: dict[str, frozenset[str]] = {
    "App": frozenset(
        {
            "audioProcessingConfig",
            "clientCertificateSettings",
            "createTime",
            "dataStoreSettings",
            "defaultChannelProfile",
            "deploymentCount",
            "description",
            "displayName",
            "errorHandlingSettings",
            "etag",
            "evaluationMetricsThresholds",
            "evaluationPersonas",
            "evaluationSettings",
            "globalInstruction",
            "guardrails",
            "languageSettings",
            "locked",
            "loggingSettings",
            "metadata",
            "modelSettings",
            "name",
            "pinned",
            "predefinedVariableDeclarations",
            "rootAgent",
            "timeZoneSettings",
            "toolExecutionMode",
            "updateTime",
            "validationErrors",
            "variableDeclarations",
            "vpcScSettings",
        }
    ),
    "Agent": frozenset(
        {
            "afterAgentCallbacks",
            "afterModelCallbacks",
            "afterToolCallbacks",
            "beforeAgentCallbacks",
            "beforeModelCallbacks",
            "beforeToolCallbacks",
            "childAgents",
            "createTime",
            "description",
            "displayName",
            "etag",
            "generatedSummary",
            "guardrails",
            "instruction",
            "llmAgent",
            "modelSettings",
            "name",
            "remoteDialogflowAgent",
            "tools",
            "toolsets",
            "transferRules",
            "updateTime",
            "validationErrors",
        }
    ),
    "Tool": frozenset(
        {
            "agentTool",
            "clientFunction",
            "connectorTool",
            "createTime",
            "dataStoreTool",
            "displayName",
            "etag",
            "executionType",
            "fileSearchTool",
            "generatedSummary",
            "googleSearchTool",
            "mcpTool",
            "name",
            "openApiTool",
            "pythonFunction",
            "remoteAgentTool",
            "systemTool",
            "timeout",
            "toolFakeConfig",
            "updateTime",
            "widgetTool",
        }
    ),
    "Toolset": frozenset(
        {
            "connectorToolset",
            "createTime",
            "description",
            "displayName",
            "etag",
            "executionType",
            "mcpToolset",
            "name",
            "openApiToolset",
            "timeout",
            "toolFakeConfig",
            "updateTime",
        }
    ),
    "Guardrail": frozenset(
        {
            "action",
            "codeCallback",
            "contentFilter",
            "createTime",
            "description",
            "displayName",
            "enabled",
            "etag",
            "llmPolicy",
            "llmPromptSecurity",
            "modelSafety",
            "name",
            "updateTime",
        }
    ),
    "Callback": frozenset(
        {
            "description",
            "disabled",
            "proactiveExecutionEnabled",
            "pythonCode",
        }
    ),
    "VariableDeclaration": frozenset({"name", "description", "schema"}),
}
