"""The one outbound-address guard (evalsite/outbound.py, rules in judge_engine/netguard.py):
every URL a team chooses for the server to call is refused, naming its field, when it reaches a
non-public address however the host is written, and is checked again when it is called, with
the connection going only to an address that was checked.

Names are resolved by a fake resolver patched in at the OS boundary (tests/fake_dns.py), so
"a name this machine's hosts file points at 127.0.0.1" and "a name whose DNS answer changes"
need no hosts file and no network; the receivers are local listeners."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from evalsite.outbound import Purpose, outbound_refusal
from judging.services.rescore import RescoreScope, batch_create
from judging.services.rescore_webhook import batch_webhook_deliver
from reviews.models_alerts import Alert, AlertDelivery
from reviews.services.alert_delivery import alert_deliver
from reviews.services.alerts import alert_rule_create
from runs.models import RescoreBatch
from teams.services import connection_create, team_webhook_secret_rotate
from tests.fake_dns import FakeDns
from tests.http_listener import Listener
from tests.page_helpers import signed_in

pytestmark = pytest.mark.django_db

PUBLIC = "93.184.216.34"  # never connected to: only ever a fake DNS answer or a literal

# Every way of writing "this machine, its network or the cloud's metadata service" we know of.
TRICKY_HOSTS = [
    # names: this machine's own, and names the hosts file or DNS point at non-public addresses
    "localhost", "LOCALHOST", "localhost.", "api.localhost", "ｌｏｃａｌｈｏｓｔ",
    "intranet.test", "v6-loopback.test", "metadata-alias.test", "lan.test", "mixed.test",
    "unresolvable.test", "metadata.google.internal",
    # dotted quads with Unicode dots and digits (IDNA/UTS-46 maps them to ASCII)
    "127.0.0.1", "127。0。0。1", "127．0．0．1", "127｡0｡0｡1", "①②⑦.0.0.1", "⑫⑦.0.0.1",
    "１２７.0.0.1", "𝟏𝟐𝟕.0.0.1", "١٢٧.٠.٠.١", "१२७.०.०.१",
    # the resolver's numeric forms: decimal, octal, hex, short
    "2130706433", "0177.0.0.1", "0x7f.1", "0x7f000001", "017700000001", "127.1", "0",
    # IPv6, and IPv6 carrying IPv4
    "[::1]", "[0:0:0:0:0:0:0:1]", "[::]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]",
    "[::ffff:169.254.169.254]", "[64:ff9b::a9fe:a9fe]", "[fd00::1]", "[fe80::1]",
    # unspecified, link-local (cloud metadata), private and shared ranges
    "0.0.0.0", "169.254.169.254", "10.0.0.1", "172.16.0.1", "192.168.1.1", "100.64.0.1",
]  # fmt: skip


@pytest.fixture
def dns(monkeypatch) -> FakeDns:
    fake = FakeDns(socket.getaddrinfo)
    fake.answers("intranet.test", ["127.0.0.1"])  # as an /etc/hosts line would
    fake.answers("v6-loopback.test", ["::1"])
    fake.answers("metadata-alias.test", ["169.254.169.254"])
    fake.answers("lan.test", ["10.0.0.5"])
    fake.answers("mixed.test", [PUBLIC, "10.0.0.5"])  # one private answer is enough
    fake.answers("public.test", [PUBLIC])
    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return fake


@pytest.fixture
def guarded(settings, dns) -> FakeDns:
    settings.EVALSITE_WEBHOOK_ALLOW_PRIVATE = False
    settings.EVALSITE_JUDGE_ALLOW_PRIVATE = False
    return dns


# --- Every entry point refuses every tricky host, naming the field --------------------------


def _api_error(field: str) -> Callable[[Any], bool]:
    def named(response: Any) -> bool:
        if response.status_code != 422:
            return False
        return any(e["loc"][-1] == field for e in response.json()["detail"])

    return named


def _form_error(form_name: str, field: str) -> Callable[[Any], bool]:
    def named(response: Any) -> bool:
        form = response.context and response.context.get(form_name)
        return form is not None and field in form.errors

    return named


def _alert_form(url: str) -> dict[str, Any]:
    return {
        "kind": "budget", "threshold": 80, "window_hours": 24, "cooldown_minutes": 60,
        "webhook_url": url, "webhook_format": "json", "rubric": "", "enabled": "on",
    }  # fmt: skip


def _connection_form(prefix: str, url: str) -> dict[str, Any]:
    return {f"{prefix}-name": f"c-{abs(hash(url))}", f"{prefix}-model": "openai/x",
            f"{prefix}-api_base": url}  # fmt: skip


@pytest.fixture
def entry_points(api, owner, team, make_rubric, make_run, fake_judge):
    """name → (send(url) → response, refused(response) → bool): every place a team sets an
    outbound URL, over the API and through the pages."""
    rubric, run = make_rubric(), make_run()
    page = signed_in(owner)
    rule = alert_rule_create(team=team, kind="budget", threshold=80)
    connection = connection_create(team=team, name="kept", model="openai/x")
    edit_prefix = f"conn-{connection.pk}"
    counter = iter(range(10**6))
    return {
        "API POST /alerts/rules": (
            lambda url: api.post("/alerts/rules", {"kind": "budget", "threshold": 80,
                                                   "webhook_url": url}),
            _api_error("webhook_url"),
        ),
        "API PATCH /alerts/rules/{id}": (
            lambda url: api.patch(f"/alerts/rules/{rule.pk}", {"webhook_url": url}),
            _api_error("webhook_url"),
        ),
        "page: new alert rule": (
            lambda url: page.post(reverse("reviews:alert_rule_new"), _alert_form(url)),
            _form_error("form", "webhook_url"),
        ),
        "page: edit alert rule": (
            lambda url: page.post(reverse("reviews:alert_rule_edit", args=[rule.pk]),
                                  _alert_form(url)),
            _form_error("form", "webhook_url"),
        ),
        "API POST /rescore": (
            lambda url: api.post("/rescore", {"rubric": rubric.slug, "runs": [str(run.pk)],
                                              "webhook_url": url}),
            _api_error("webhook_url"),
        ),
        "API POST /runs/{id}/rescore": (
            lambda url: api.post(
                f"/runs/{run.pk}/rescore", {"rubric": rubric.slug, "webhook_url": url}
            ),
            _api_error("webhook_url"),
        ),
        "API POST /connections": (
            lambda url: api.post("/connections", {"name": f"n{next(counter)}",
                                                  "model": "openai/x", "api_base": url}),
            _api_error("api_base"),
        ),
        "API PATCH /connections/{name}": (
            lambda url: api.patch("/connections/kept", {"api_base": url}),
            _api_error("api_base"),
        ),
        "page: new judge connection": (
            lambda url: page.post(reverse("connection_new"), _connection_form("new", url)),
            _form_error("connection_form", "api_base"),
        ),
        "page: edit judge connection": (
            lambda url: page.post(reverse("connection_edit", args=[connection.pk]),
                                  _connection_form(edit_prefix, url)),
            _form_error("editing", "api_base"),
        ),
    }  # fmt: skip


ENTRY_POINTS = [
    "API POST /alerts/rules", "API PATCH /alerts/rules/{id}", "page: new alert rule",
    "page: edit alert rule", "API POST /rescore", "API POST /runs/{id}/rescore",
    "API POST /connections", "API PATCH /connections/{name}", "page: new judge connection",
    "page: edit judge connection",
]  # fmt: skip


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_every_entry_point_refuses_every_tricky_host_naming_the_field(entry, entry_points, guarded):
    send, refused = entry_points[entry]
    accepted = [host for host in TRICKY_HOSTS if not refused(send(f"http://{host}/hook"))]

    assert accepted == []
    # The same entry point takes a public name: the refusals above are the guard's.
    assert not refused(send("http://public.test/hook"))
    assert "public.test" in guarded.lookups  # resolved when saved, not left for later


def test_the_settings_for_self_hosted_deployments_still_allow_private_receivers_and_judges(
    settings, dns
):
    settings.EVALSITE_WEBHOOK_ALLOW_PRIVATE = True
    settings.EVALSITE_JUDGE_ALLOW_PRIVATE = False
    assert outbound_refusal("http://intranet.test/hook", purpose=Purpose.WEBHOOK) is None
    judge = outbound_refusal("http://intranet.test/v1", purpose=Purpose.JUDGE)
    assert judge is not None and "EVALSITE_JUDGE_ALLOW_PRIVATE=1" in judge
    # the URL's shape is checked whatever the setting
    assert outbound_refusal("http://me@intranet.test/", purpose=Purpose.WEBHOOK) is not None


# --- Delivery checks again, and connects only to a checked address --------------------------


@pytest.fixture
def listener():
    server = Listener(status=200).start()
    yield server
    server.stop()


def _port(listener: Listener) -> int:
    return int(listener.url.rsplit(":", 1)[1])


def _alert(team: Any, url: str) -> Alert:
    team_webhook_secret_rotate(team=team)
    rule = alert_rule_create(team=team, kind="budget", threshold=80, webhook_url=url)
    return Alert.objects.create(team=team, rule=rule, message="budget at 90%", value=90)


def test_an_alert_webhook_whose_name_now_points_here_is_not_delivered(guarded, team, listener):
    guarded.answers("rebind.test", [PUBLIC], ["127.0.0.1"])  # public when saved, then not
    alert = _alert(team, f"http://rebind.test:{_port(listener)}/hook")

    assert alert_deliver(alert_id=alert.pk, event="fired") is False

    assert listener.seen == []
    assert "points to 127.0.0.1" in AlertDelivery.objects.get(alert=alert).error


def test_a_name_that_changes_between_the_check_and_the_connection_is_not_connected_to(
    guarded, team, listener
):
    """Saved and checked before the request on a public answer; the connection's own lookup
    gets this machine. A client that resolved the name itself would reach the listener."""
    guarded.answers("rebind.test", [PUBLIC], [PUBLIC], ["127.0.0.1"])
    alert = _alert(team, f"http://rebind.test:{_port(listener)}/hook")

    assert alert_deliver(alert_id=alert.pk, event="fired") is False

    assert listener.seen == [] and guarded.lookups.count("rebind.test") == 3
    assert "points to 127.0.0.1" in AlertDelivery.objects.get(alert=alert).error


def test_a_batch_webhook_is_checked_again_when_it_is_called(
    guarded, team, listener, make_rubric, make_run, fake_judge
):
    guarded.answers("rebind.test", [PUBLIC], [PUBLIC], ["10.0.0.5", "127.0.0.1"])
    batch, _ = batch_create(
        team=team, rubric=make_rubric(), scope=RescoreScope(runs=(make_run().pk,)),
        webhook_url=f"http://rebind.test:{_port(listener)}/hook",
    )  # fmt: skip
    RescoreBatch.objects.filter(pk=batch.pk).update(finished_at=timezone.now())

    assert batch_webhook_deliver(batch_id=batch.pk) is False

    batch.refresh_from_db()
    assert listener.seen == [] and batch.webhook_delivered_at is None
    assert "points to 10.0.0.5" in batch.webhook_error


def test_a_judge_connection_is_checked_again_when_tested(guarded, owner, team, listener):
    guarded.answers("rebind.test", [PUBLIC], [PUBLIC], ["127.0.0.1"])
    connection = connection_create(
        team=team,
        name="moving",
        model="openai/x",
        api_base=f"http://rebind.test:{_port(listener)}/v1",
    )

    page = signed_in(owner).post(reverse("connection_test", args=[connection.pk]), follow=True)

    assert "Connection “moving” failed:" in page.content.decode()
    assert listener.seen == [] and guarded.lookups.count("rebind.test") == 3


def test_with_private_receivers_allowed_a_name_is_delivered_to_the_address_it_resolved_to(
    settings, dns, team, listener
):
    settings.EVALSITE_WEBHOOK_ALLOW_PRIVATE = True
    dns.answers("receiver.test", ["127.0.0.1"])
    alert = _alert(team, f"http://receiver.test:{_port(listener)}/hook")

    assert alert_deliver(alert_id=alert.pk, event="fired") is True

    [seen] = listener.seen
    assert seen.headers["host"] == f"receiver.test:{_port(listener)}"
