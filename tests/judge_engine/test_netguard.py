"""The address guard shared by webhooks and judges (judge_engine/netguard.py), and what the
engine does with it: a team's api_base is looked up again right before every request."""

from __future__ import annotations

import asyncio

import pytest

from judge_engine import JudgeConfig, PermanentJudgeError, RubricScorer
from judge_engine.direct import _error_message
from judge_engine.netguard import normal_host, url_refusal
from judging.judge_runtime import run_judged
from tests.http_listener import Listener


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/v1",
        "http://127.1/v1",
        "http://2130706433/v1",
        "http://0x7f.1/v1",
        "http://0x7f000001/v1",
        "http://017700000001/v1",
        "http://0/v1",
        "http://localhost./v1",
        "http://api.localhost/v1",
        "http://10.1.2.3/v1",
        "http://172.16.0.1/v1",
        "http://192.168.0.1/v1",
        "http://100.100.100.200/v1",  # shared address space (a cloud metadata address)
        "http://169.254.169.254/latest/meta-data",
        "http://[fd00:ec2::254]/v1",
        "http://[fe80::1]/v1",
        "http://[::1]/v1",
        "http://[::]/v1",
        "http://[::ffff:127.0.0.1]/v1",
        "http://[::ffff:a9fe:a9fe]/v1",  # 169.254.169.254, IPv4-mapped
        "http://[2002:7f00:1::]/v1",  # 6to4 of 127.0.0.1
        "http://[64:ff9b::a9fe:a9fe]/v1",  # NAT64 of 169.254.169.254
        "http://224.0.0.1/v1",
        "http://240.0.0.1/v1",
        "http://metadata.google.internal/v1",
        "http://127。0。0。1/v1",  # ideographic full stops
        "http://127｡0｡0｡1/v1",  # halfwidth ones
        "http://①②⑦.0.0.1/v1",  # circled digits
        "http://１２７.0.0.1/v1",  # fullwidth digits
        "http://١٢٧.٠.٠.١/v1",  # Arabic-Indic digits
        "http://ｌｏｃａｌｈｏｓｔ/v1",
    ],
)
def test_private_loopback_metadata_and_disguised_addresses_are_refused(url):
    assert url_refusal(url, resolve=False) is not None
    assert url_refusal(url, resolve=True) is not None


@pytest.mark.parametrize(
    "url",
    [
        "http://user@93.184.216.34/v1",
        "http://user:pass@93.184.216.34/v1",
        "http://93.184.216.34@127.0.0.1/v1",
        "ftp://93.184.216.34/",
        "http:///v1",
        "http://93.184.216.34:port/v1",
    ],
)
def test_user_information_and_malformed_urls_are_refused_even_when_private_is_allowed(url):
    assert url_refusal(url, resolve=False, allow_private=True) is not None


@pytest.mark.parametrize(
    ("host", "normal"),
    [
        ("127。0。0。1", "127.0.0.1"),
        ("⑫⑦.0.0.1", "127.0.0.1"),
        ("१२७.०.०.१", "127.0.0.1"),
        ("ＬＯＣＡＬＨＯＳＴ.", "localhost"),
        ("Bücher.example", "xn--bcher-kva.example"),
        ("٣ab.example", None),  # not a valid IDN (mixed directions): refused, never guessed
    ],
)
def test_hosts_are_read_as_resolvers_read_them(host, normal):
    assert normal_host(host) == normal


def test_public_addresses_pass_and_a_deployment_can_allow_private_ones():
    assert url_refusal("https://93.184.216.34/v1", resolve=True) is None
    assert url_refusal("https://[2606:4700:4700::1111]/v1", resolve=True) is None
    assert url_refusal("https://api.example.com/v1", resolve=False) is None  # DNS checked later
    assert url_refusal("http://127.0.0.1:8000/v1", resolve=True, allow_private=True) is None


def test_a_judge_error_shows_the_providers_message_never_the_body():
    assert _error_message(500, "<html>internal SECRET page</html>") == "HTTP 500"
    assert _error_message(400, '{"error": {"message": "bad model"}, "x": "SECRET"}') == (
        "bad model"
    )
    assert _error_message(404, '{"detail": "SECRET"}') == "HTTP 404"
    assert len(_error_message(400, '{"error": {"message": "%s"}}' % ("x" * 5000))) == 300


# Both places a judge call runs: the worker's shared loop and a caller's own loop.
RUNNERS = {"worker loop": run_judged, "caller's loop": asyncio.run}


@pytest.mark.parametrize("runner", RUNNERS)
def test_the_engine_refuses_a_guarded_private_address_before_sending_anything(runner):
    listener = Listener(status=200).start()
    try:
        judge = JudgeConfig(
            model="openai/x", api_base=f"{listener.url}/v1", connection="c", address_guard=True
        )
        scorer = RubricScorer(judge, criteria="- Mentions the refund")
        with pytest.raises(PermanentJudgeError) as caught:
            RUNNERS[runner](scorer.ascore(task="t", output="o"))
    finally:
        listener.stop()
    assert "judge address refused" in caught.value.message and listener.seen == []
    assert caught.value.calls and caught.value.calls[0].error.startswith("judge address refused")


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("transport", ["auto", "litellm"])
def test_a_connection_never_follows_a_redirect_whatever_the_transport(transport, runner):
    """litellm's clients follow redirects (the OpenAI SDK's client is built with
    follow_redirects=True), so a team's connection always takes the direct transport."""
    second = Listener(status=200, body=b"{}").start()
    first = Listener(status=307, headers={"Location": f"{second.url}/v1/chat/completions"}).start()
    try:
        judge = JudgeConfig(
            model="openai/x", api_base=f"{first.url}/v1", connection="c", transport=transport
        )
        with pytest.raises(PermanentJudgeError) as caught:
            RUNNERS[runner](RubricScorer(judge, criteria="- A").ascore(task="t", output="o"))
    finally:
        first.stop()
        second.stop()
    assert "redirect (307)" in caught.value.message
    assert len(first.seen) == 1 and second.seen == []


def test_the_guarded_session_refuses_to_connect_to_a_name_that_resolves_privately():
    """The address checked is the address connected to: a team's api_base is resolved by a
    resolver that refuses non-public answers (DNS rebinding between check and connect)."""
    import asyncio

    from judge_engine.direct import _PublicOnlyResolver

    async def resolve():
        return await _PublicOnlyResolver().resolve("localhost", 80)

    with pytest.raises(OSError, match="loopback, private"):
        asyncio.run(resolve())


def test_a_connection_with_an_api_base_is_never_handed_to_litellm():
    """A connection the direct transport cannot call (not an OpenAI-compatible model string)
    is refused, its address not called at all."""
    listener = Listener(status=200).start()
    try:
        judge = JudgeConfig(
            model="anthropic/claude-3-5-haiku-latest",
            api_base=f"{listener.url}/v1",
            connection="c",
        )
        with pytest.raises(PermanentJudgeError, match="judge connection"):
            asyncio.run(RubricScorer(judge, criteria="- A").ascore(task="t", output="o"))
    finally:
        listener.stop()
    assert listener.seen == []
