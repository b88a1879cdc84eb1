"""What the web and worker processes need around the domain, below both web adapters (the
designer's pages, ``designer/``, and the API, ``agents/api/``), which both import it:

- ``ratelimit``: requests per user and window (the one helper ``rate_limited(scope)``, the
  API's throttles, the simulations-busy middleware);
- ``signin``: failed passwords throttled (the authentication backend, the sign-in forms);
- ``rq_worker``: RQ's warm worker class (``manage.py worker --queue rq``);
- ``wakeup``: an idle database-queue worker woken when a job is queued (connected in
  ``server.apps``).

It imports the domain (``agents``: models, services, core), never an adapter
(``tests/test_layering.py``).
"""
