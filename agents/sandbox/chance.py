"""What a call draws by chance, drawn from the call's seeded ``random``.

Standard library only: the session child loads it beside ``runner.py``. The call process
seeds ``random`` from what the call receives (``runner.seed_random``); this makes every
other source of chance user code can reach draw from that seeded generator too, so a
replay of an unchanged app draws what its live run drew (docs/designer/replay.md):

- ``random.seed()`` without a value, ``random.Random()`` without a seed and
  ``random.SystemRandom()`` (the operating system's entropy is not reproducible): seeded
  from the call's generator;
- ``uuid.uuid4()`` (128 random bits) and ``uuid.uuid1()`` (the session clock, a random
  node and clock sequence).

``secrets`` and ``os.urandom`` are not importable in the sandbox at all. Only the call
process's module proxies change (it is a fork of its own), never the session child's.
"""

from __future__ import annotations

# 100-ns intervals between the UUID epoch (1582-10-15) and the Unix epoch.
_UUID_EPOCH = 0x01B21DD213814000


def seed_chance(sandbox):
    """Replace the call's sources of chance by ones drawn from the seeded ``random``."""
    import random as real
    import uuid as real_uuid

    class Random(real.Random):
        def __init__(self, x=None):
            super().__init__(real.getrandbits(64) if x is None else x)

        def seed(self, a=None, version=2):
            super().seed(real.getrandbits(64) if a is None else a, version)

    class SystemRandom(Random):
        """The seeded generator: the system's entropy would differ in a replay."""

    def seed(a=None, version=2):
        real.seed(real.getrandbits(64) if a is None else a, version)

    def uuid4():
        return real_uuid.UUID(int=real.getrandbits(128), version=4)

    def uuid1(node=None, clock_seq=None):
        nanoseconds = int(sandbox.modules["time"].time_ns())  # the session clock
        timestamp = nanoseconds // 100 + _UUID_EPOCH
        if clock_seq is None:
            clock_seq = real.getrandbits(14)
        if node is None:
            node = real.getrandbits(48) | (1 << 40)  # the multicast bit: a random node
        fields = (
            timestamp & 0xFFFFFFFF,
            (timestamp >> 32) & 0xFFFF,
            (timestamp >> 48) & 0x0FFF,
            (clock_seq >> 8) & 0x3F,
            clock_seq & 0xFF,
            node,
        )
        return real_uuid.UUID(fields=fields, version=1)

    for cls in (Random, SystemRandom):
        cls.__module__ = "random"
    _replace(sandbox, "random", Random=Random, SystemRandom=SystemRandom, seed=seed)
    _replace(sandbox, "uuid", uuid4=uuid4, uuid1=uuid1)


def _replace(sandbox, name, **values):
    """The module proxy `name` with `values` in place of its attributes."""
    modules = sandbox.modules
    proxy = type(modules[name])  # policy.SandboxModule (not imported: the host loads this)
    attributes = dict(modules[name].__dict__)
    attributes.pop("_SandboxModule__name", None)
    attributes.update(values)
    modules[name] = proxy(name, attributes)
