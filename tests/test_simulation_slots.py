"""In-request simulations are capped per process (``SIMULATION_MAX_CONCURRENT``, docs/designer/sandbox.md,
"Bounded simulations"): one over the cap is refused at once with a 429 naming the limit and
the setting, so simulations never hold every web thread; /healthz still answers.

Over real HTTP (the live server: a threaded server in this process, so it shares the
process's slots). A simulation already running in this process is a thread holding one
slot (`sandbox_door.SLOTS.hold()`, what every in-request simulation does) until the test
lets it go."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from agents.services import sandbox_door

pytestmark = pytest.mark.django_db(transaction=True)
MESSAGE = (
    "Too many simulations at once on this server: at most 1 run at a time in each web "
    "process (SIMULATION_MAX_CONCURRENT=1), so that other pages keep answering. Try again "
    "in 2 seconds, or press Run all: it runs the scenarios as a job."
)


@pytest.fixture
def running():
    """A simulation running in this process until the test ends (or `release`s it)."""
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with sandbox_door.SLOTS.hold():
            holding.set()
            release.wait(60)

    thread = threading.Thread(target=hold)
    thread.start()
    assert holding.wait(10)

    def end() -> None:
        release.set()
        thread.join(10)

    yield end
    end()


def _get(url: str, **headers: str) -> tuple[int, dict, str]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


def _post(url: str, body: dict, **headers: str) -> tuple[int, dict, str]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


def test_a_simulation_over_the_process_cap_answers_429_and_healthz_still_answers(
    live_server, settings, running, user, bank
):
    settings.SIMULATION_MAX_CONCURRENT = 1
    agent = bank.agents.get(is_root=True)
    scenario = agent.scenarios.first()
    browser = Client()
    browser.force_login(user)
    cookie = f"sessionid={browser.cookies['sessionid'].value}"
    page = f"{live_server.url}{reverse('agent-simulate', args=[bank.pk, agent.pk])}"
    page += f"?scenario={scenario.pk}&use_mocks=on&mocks_for={scenario.pk}"
    api = f"{live_server.url}/api/apps/{bank.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/simulate"
    token = f"Token {Token.objects.create(user=user).key}"

    status, headers, body = _get(page, Cookie=cookie)
    assert (status, body, headers["Retry-After"]) == (429, MESSAGE, "2")
    status, headers, body = _post(api, {"use_mocks": True}, Authorization=token)
    assert (status, json.loads(body), headers["Retry-After"]) == (429, {"detail": MESSAGE}, "2")
    assert _get(f"{live_server.url}/healthz")[0] == 200

    running()  # the running simulation ends: its slot is free again
    status, _, body = _get(page, Cookie=cookie)
    assert status == 200 and "Too many simulations" not in body
    status, _, body = _post(api, {"use_mocks": True}, Authorization=token)
    assert status == 200 and "turns" in json.loads(body)
    assert sandbox_door.SLOTS.running == 0  # every request gave its slot back


def test_no_cap_when_the_setting_is_0(live_server, settings, running, user, bank):
    settings.SIMULATION_MAX_CONCURRENT = 0
    agent = bank.agents.get(is_root=True)
    scenario = agent.scenarios.first()
    api = f"{live_server.url}/api/apps/{bank.pk}/agents/{agent.pk}/scenarios/{scenario.pk}/simulate"
    token = f"Token {Token.objects.create(user=user).key}"
    assert _post(api, {"use_mocks": True}, Authorization=token)[0] == 200
