"""The operators' admin site (Django's admin), registered when Django autodiscovers
``agents.admin``:

- ``designs``: the design objects (apps, variables, schemas, tools, agents, callbacks,
  scenarios and their steps, shares), with inlines, search, filters and constant queries;
- ``records``: the records Statecraft keeps (versions and labels, the audit trail,
  scenario results, live models and runs, jobs), read-only but for the model endpoints and
  the apps' default models;
- ``writes``: the admin's adds, changes and deletes, through the services.
"""

from agents.admin import designs, records  # noqa: F401  (registers the admins)
