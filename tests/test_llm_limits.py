"""An endpoint's limits and its shared backoff (agents/llm/limits.py; issue 31, item 2),
against a real model server on loopback (tests/llm_server.py), from real threads — as
several goldens of one worker call the same endpoint at once.

Nothing sleeps: a wait goes through the client's injected sleeper (recording it, and
moving an injected clock where a per-minute window is asserted); what the server saw —
requests in flight at once, which thread's request came when — is the proof.
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from agents.core.model import ModelRequest
from agents.llm.endpoints import ConfigError, Endpoint, parse_models
from agents.llm.registry import client_for
from agents.models import ModelEndpoint
from tests.llm_server import KEY, KEY_ENV, openai_error, openai_text


def endpoint_of(server, **limits) -> Endpoint:
    return Endpoint(
        name="loop",
        kind="openai",
        model="test-model",
        base_url=f"{server.url}/v1",
        api_key=KEY,
        **limits,
    )


def request_from(who: str) -> ModelRequest:
    contents = ({"role": "user", "parts": [{"text": who}]},)
    return ModelRequest(
        index=0, turn=0, agent="root", system_instruction="", contents=contents, tools=()
    )


def said(seen) -> str:
    return seen.body["messages"][-1]["content"]


def in_threads(count: int, work) -> list:
    results: list = [None] * count
    errors: list = []

    def run(i: int) -> None:
        try:
            results[i] = work(i)
        except BaseException as exc:  # a failed thread fails the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    assert not any(thread.is_alive() for thread in threads)
    return results


class FakeClock:
    """A clock the sleeper moves: a per-minute window passes without waiting."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


# ---------------------------------------------------------------- concurrency


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_threads_never_have_more_requests_in_flight_than_the_endpoints_limit(server, limit):
    calls = 7
    server.script(openai_text("ok"))
    server.repeat_last = True
    arrived = [0]
    batch = threading.Condition()

    def hold(seen) -> None:
        """Each request is held until its batch of `limit` is in flight together (the
        last batch may be smaller): a limiter that let more through would show it."""
        with batch:
            index = arrived[0]
            arrived[0] += 1
            batch.notify_all()
            full = min(calls, (index // limit + 1) * limit)
            assert batch.wait_for(lambda: arrived[0] >= full, timeout=30)

    server.before_answer = hold
    endpoint = endpoint_of(server, max_concurrent=limit)
    answers = in_threads(calls, lambda i: client_for(endpoint)(request_from(f"golden {i}")))

    assert [a.error for a in answers] == [""] * calls
    assert len(server.seen) == calls
    assert server.most_in_flight == limit


def test_without_a_limit_every_thread_is_in_flight_at_once(server):
    calls = 5
    server.script(openai_text("ok"))
    server.repeat_last = True
    all_in = threading.Barrier(calls, timeout=30)
    server.before_answer = lambda seen: all_in.wait()
    endpoint = endpoint_of(server, max_concurrent=0)
    in_threads(calls, lambda i: client_for(endpoint)(request_from(f"golden {i}")))
    assert server.most_in_flight == calls


# ---------------------------------------------------------------- shared backoff


def test_a_429_with_retry_after_delays_every_other_threads_next_request(server):
    server.script(openai_error(429, "slow down", headers={"Retry-After": "30"}), openai_text("ok"))
    server.repeat_last = True
    endpoint = endpoint_of(server)
    first_slept: list[float] = []
    first = client_for(endpoint, sleeper=first_slept.append)(request_from("golden A"))
    assert first.error == "" and first.retries == 1
    assert sum(first_slept) == 30  # its own wait, once (not again before its retry)

    def other(i: int) -> tuple[list[float], list[int]]:
        who = f"golden {i}"
        slept: list[float] = []
        mine_seen: list[int] = []

        def sleeper(seconds: float) -> None:
            slept.append(seconds)
            mine_seen.append(sum(1 for s in server.seen if said(s) == who))

        answer = client_for(endpoint, sleeper=sleeper)(request_from(who))
        assert answer.error == "" and answer.retries == 0
        return slept, mine_seen

    others = in_threads(4, other)

    # The server answered A's 429 first, then A's retry; every other thread waited the
    # endpoint's "not before" before its own first request reached the server.
    assert [said(s) for s in server.seen[:2]] == ["golden A", "golden A"]
    for slept, mine_seen in others:
        assert 28 < sum(slept) <= 30
        assert set(mine_seen) == {0}
    assert sorted(said(s) for s in server.seen[2:]) == [f"golden {i}" for i in range(4)]


def test_the_not_before_is_shared_through_the_cache_by_every_process(server, settings):
    """Another process (its gate's own memory empty) reads the endpoint's not-before from
    the cache: with Redis, one 429 slows every worker."""
    from agents.llm import limits

    server.script(openai_error(429, "slow down", headers={"Retry-After": "12"}), openai_text("ok"))
    server.repeat_last = True
    endpoint = endpoint_of(server)
    client_for(endpoint, sleeper=lambda s: None)(request_from("golden A"))
    limits._gates.clear()  # what a fresh process has
    slept: list[float] = []
    assert client_for(endpoint, sleeper=slept.append)(request_from("golden B")).error == ""
    assert 10 < sum(slept) <= 12 and len(server.seen) == 3


def test_a_retry_after_too_long_to_wait_sets_no_not_before(server):
    server.script(
        openai_error(429, "tomorrow", headers={"Retry-After": "86400"}), openai_text("ok")
    )
    endpoint = endpoint_of(server)
    assert client_for(endpoint, sleeper=lambda s: None)(request_from("A")).error == "quota"
    slept: list[float] = []
    assert client_for(endpoint, sleeper=slept.append)(request_from("B")).error == ""
    assert slept == []


# ---------------------------------------------------------------- per minute


def test_requests_per_minute_wait_for_the_windows_oldest_request(server):
    server.script(openai_text("ok"))
    server.repeat_last = True
    clock = FakeClock()
    seen_at_wait: list[int] = []

    def sleeper(seconds: float) -> None:
        seen_at_wait.append(len(server.seen))
        clock.sleep(seconds)

    client = client_for(endpoint_of(server, requests_per_minute=2), sleeper=sleeper, clock=clock)
    for i in range(3):
        assert client(request_from(f"call {i}")).error == ""
    assert sum(clock.slept) == 60 and set(seen_at_wait) == {2}
    assert len(server.seen) == 3


def test_tokens_per_minute_wait_until_enough_tokens_leave_the_window(server):
    server.script(openai_text("ok", tokens=(11, 5)))  # 16 tokens a call
    server.repeat_last = True
    clock = FakeClock()
    seen_at_wait: list[int] = []

    def sleeper(seconds: float) -> None:
        seen_at_wait.append(len(server.seen))
        clock.sleep(seconds)

    client = client_for(endpoint_of(server, tokens_per_minute=20), sleeper=sleeper, clock=clock)
    assert client(request_from("one")).error == ""
    clock.now += 10
    assert client(request_from("two")).error == ""  # 16 < 20: room
    assert clock.slept == []
    assert client(request_from("three")).error == ""  # 32 >= 20: the first must leave
    assert sum(clock.slept) == 50 and set(seen_at_wait) == {2}


# ---------------------------------------------------------------- configuration


def test_statecraft_models_limits_are_parsed_and_refused_naming_the_field():
    base = {"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1"}

    def parsed(**entry) -> Endpoint:
        return parse_models(json.dumps({"a": {**base, **entry}}), {})["a"]

    given = parsed(max_concurrent=3, requests_per_minute=60, tokens_per_minute=9000)
    limits = (given.max_concurrent, given.requests_per_minute, given.tokens_per_minute)
    assert limits == (3, 60, 9000)
    assert (parsed().max_concurrent, parsed().requests_per_minute) == (8, None)
    for field, value, words in [
        ("max_concurrent", -1, "write a whole number from 0 to 1000 (got -1)"),
        ("requests_per_minute", 0, "write a whole number from 1 to 1000000 (got 0)"),
        ("tokens_per_minute", "lots", 'write a whole number from 1 to 1000000000 (got "lots")'),
    ]:
        with pytest.raises(ConfigError) as caught:
            parsed(**{field: value})
        assert str(caught.value.message) == f"STATECRAFT_MODELS.a.{field}: {words}."


@pytest.mark.django_db
def test_the_admin_sets_the_limits_and_refuses_bad_ones_on_their_field(client, staff):
    client.force_login(staff)
    url = reverse("admin:agents_modelendpoint_add")
    form = {
        "name": "limited",
        "kind": "openai",
        "model": "gpt-4.1-mini",
        "base_url": "http://127.0.0.1:9/v1",
        "timeout": "60",
        "max_retries": "3",
        "max_concurrent": "2",
        "requests_per_minute": "0",
        "tokens_per_minute": "",
        "enabled": "on",
    }
    page = client.post(url, form)
    assert page.status_code == 200
    errors = page.context["adminform"].form.errors
    assert errors["requests_per_minute"] == [
        "Write at least 1 request a minute, or leave it empty for no limit."
    ]
    assert client.post(url, {**form, "requests_per_minute": "90"}).status_code == 302
    row = ModelEndpoint.objects.get(name="limited")
    assert (row.max_concurrent, row.requests_per_minute, row.tokens_per_minute) == (2, 90, None)
    page = client.get(reverse("admin:agents_modelendpoint_change", args=[row.pk]))
    assert (
        b'name="max_concurrent"' in page.content and b"requests per minute" in page.content.lower()
    )


@pytest.mark.django_db
def test_the_api_shows_each_models_limits(user, server, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setenv(
        "STATECRAFT_MODELS",
        json.dumps(
            {
                "loop": {
                    "kind": "openai",
                    "model": "m",
                    "base_url": f"{server.url}/v1",
                    "api_key_env": KEY_ENV,
                    "max_concurrent": 4,
                    "tokens_per_minute": 30000,
                }
            }
        ),
    )
    api = APIClient()
    api.force_login(user)
    shown = api.get(reverse("api:model-list")).json()
    assert [
        (m["name"], m["max_concurrent"], m["requests_per_minute"], m["tokens_per_minute"])
        for m in shown
    ] == [("loop", 4, None, 30000)]


def test_an_endpoint_changed_in_the_admin_keeps_its_gate_but_its_new_limits(server):
    """The gate is the process's per endpoint; its limits are each client's endpoint's
    (an admin change applies to the next run)."""
    from agents.llm.limits import gate_for

    endpoint = endpoint_of(server, max_concurrent=1)
    assert gate_for(endpoint) is gate_for(replace(endpoint, max_concurrent=5))
    assert client_for(replace(endpoint, max_concurrent=5)).limits.max_concurrent == 5
