"""The domain's tables, one module per part of the app (see docs/architecture.md).

Every model and helper is importable from here: `from agents.models import Variable`.
"""

from agents.core.rules import LABEL_MAX_LENGTH, LABEL_PATTERN, NAME_MAX_LENGTH, NAME_PATTERN
from agents.models.agents import Agent, Callback, CallbackKind
from agents.models.app import AgentApp, AppShare, ShareRole
from agents.models.audit import AuditEvent
from agents.models.base import TimestampedModel, instructions_hash
from agents.models.evaluations import EvaluationRun
from agents.models.jobs import (
    JOB_ACTIVE,
    JOB_FINISHED,
    Job,
    JobItem,
    JobStatus,
    WorkerHeartbeat,
    message_columns,
)
from agents.models.live import AppModelDefault, EndpointKind, LiveRun, LiveRunMode, ModelEndpoint
from agents.models.ratelimit import RateLimitCount
from agents.models.scenarios import (
    Channel,
    Modality,
    ResultStatus,
    Scenario,
    ScenarioResult,
    ScenarioStep,
    StepKind,
    expectation_from_json,
    expectation_to_json,
)
from agents.models.tools import Tool, ToolKind
from agents.models.users import UserSettings
from agents.models.variables import Schema, Variable, VariableType
from agents.models.versions import AppLabel, AppVersion

__all__ = [
    "JOB_ACTIVE",
    "JOB_FINISHED",
    "LABEL_MAX_LENGTH",
    "LABEL_PATTERN",
    "NAME_MAX_LENGTH",
    "NAME_PATTERN",
    "Agent",
    "AgentApp",
    "AppLabel",
    "AppModelDefault",
    "AppShare",
    "AppVersion",
    "AuditEvent",
    "Callback",
    "CallbackKind",
    "Channel",
    "EndpointKind",
    "EvaluationRun",
    "Job",
    "JobItem",
    "JobStatus",
    "LiveRun",
    "LiveRunMode",
    "Modality",
    "ModelEndpoint",
    "RateLimitCount",
    "ResultStatus",
    "Scenario",
    "ScenarioResult",
    "ScenarioStep",
    "Schema",
    "ShareRole",
    "StepKind",
    "TimestampedModel",
    "Tool",
    "ToolKind",
    "UserSettings",
    "Variable",
    "VariableType",
    "WorkerHeartbeat",
    "expectation_from_json",
    "expectation_to_json",
    "instructions_hash",
    "message_columns",
]
