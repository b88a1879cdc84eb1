"""Where the queue's task used to live: tasks enqueued as ``agents.tasks.run_job`` before
it moved beside the jobs it runs (`agents.services.jobs.run_job`) still find it here.

Kept on purpose, not dead: a queue entry names its task by dotted path, and reading an
entry imports that path — the worker running it, and the reaper too (``jobs._queue_has``
asks the backend for the entry's result, which imports the task): an entry queued under
the old path would otherwise raise ``ImportError`` in every worker's reaper round instead
of running (``tests/test_old_task_path.py``). Delete this module once the reaper treats an
entry whose task no longer imports as gone (and enqueues its job again under today's path).
"""

from agents.services.jobs import run_job

__all__ = ["run_job"]
