"""One trajectory model for four message formats, each fixture in the provider's documented shape.

OpenAI Chat Completions: https://platform.openai.com/docs/guides/function-calling (assistant
``tool_calls`` with JSON-string ``arguments``, role ``tool`` with ``tool_call_id``).
OpenAI Responses API: ``function_call`` / ``function_call_output`` / ``message`` items.
Anthropic Messages: ``tool_use`` blocks in assistant content, ``tool_result`` blocks in user
content (``is_error``). Vercel AI SDK: ``tool-call`` / ``tool-result`` parts (v5 ``input`` /
``output: {type, value}``, v4 ``args`` / ``result``), UI ``tool-invocation`` parts (v4, Mastra's
stored ``{"format": 2, "parts": [...]}``) and v5 UI ``tool-<name>`` parts.
"""

from __future__ import annotations

from judge_engine.trajectory import final_texts, flagged, normalise, tool_names

QUESTION = "Where is the refund for order A17?"
ANSWER = "Your refund for order A17 was issued today."


def kinds(steps):
    return [s["kind"] for s in steps]


def test_openai_chat_completions_tool_calls():
    messages = [
        {"role": "system", "content": "You are a support agent."},
        {"role": "user", "content": QUESTION},
    ]
    output = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_abc",
                    "type": "function",
                    "function": {"name": "lookup_order", "arguments": '{"order_id": "A17"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_abc", "content": '{"status": "refunded"}'},
        {"role": "assistant", "content": ANSWER},
    ]
    steps = normalise(messages, output)
    assert kinds(steps) == ["message", "message", "tool_call", "tool_result", "message"]
    assert [s["index"] for s in steps] == [0, 1, 2, 3, 4]
    assert [s["source"] for s in steps] == ["input", "input", "output", "output", "output"]
    call, result = steps[2], steps[3]
    assert call["tool"] == "lookup_order" and call["call_id"] == "call_abc"
    assert call["arguments"] == {"order_id": "A17"}
    assert result["tool"] == "lookup_order" and result["content"] == '{"status": "refunded"}'
    assert result["is_error"] is False and "flags" not in result
    assert final_texts(steps) == (QUESTION, "You are a support agent.", ANSWER)
    assert tool_names(steps) == ["lookup_order"]


def test_openai_responses_api_items():
    messages = [{"role": "user", "content": QUESTION}]
    output = [
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_9",
            "name": "lookup_order",
            "arguments": '{"order_id":"A17"}',
        },
        {"type": "function_call_output", "call_id": "call_9", "output": "refunded"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
        },
    ]
    steps = normalise(messages, output)
    assert kinds(steps) == ["message", "tool_call", "tool_result", "unknown", "message"]
    assert steps[1]["call_id"] == "call_9" and steps[2]["tool"] == "lookup_order"
    assert steps[3]["raw"] == {"type": "reasoning", "id": "rs_1", "summary": []}
    assert final_texts(steps)[2] == ANSWER


def test_anthropic_content_blocks():
    messages = [{"role": "user", "content": QUESTION}]
    output = [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check."},
                {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": "lookup_order",
                    "input": {"order_id": "A17"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01",
                    "content": [{"type": "text", "text": "order service timed out"}],
                    "is_error": True,
                }
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": ANSWER}]},
    ]
    steps = normalise(messages, output)
    assert kinds(steps) == ["message", "message", "tool_call", "tool_result", "message"]
    assert steps[2]["arguments"] == {"order_id": "A17"}
    assert steps[3]["is_error"] is True and steps[3]["content"] == "order service timed out"
    assert steps[3]["tool"] == "lookup_order"
    # The tool_result block sits in a user message, but it is not a user turn.
    assert final_texts(steps) == (QUESTION, "", ANSWER)


def test_vercel_ai_sdk_model_messages_v5_and_v4():
    messages = [{"role": "user", "content": [{"type": "text", "text": QUESTION}]}]
    output = [
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool-call",
                    "toolCallId": "t1",
                    "toolName": "lookup_order",
                    "input": {"orderId": "A17"},
                },
                {"type": "tool-call", "toolCallId": "t2", "toolName": "refund", "args": {"n": 1}},
            ],
        },
        {
            "role": "tool",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "t1",
                    "toolName": "lookup_order",
                    "output": {"type": "json", "value": {"status": "paid"}},
                },
                {
                    "type": "tool-result",
                    "toolCallId": "t2",
                    "toolName": "refund",
                    "output": {"type": "error-text", "value": "card expired"},
                },
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": ANSWER}]},
    ]
    steps = normalise(messages, output)
    assert kinds(steps) == [
        "message",
        "tool_call",
        "tool_call",
        "tool_result",
        "tool_result",
        "message",
    ]
    assert steps[1]["arguments"] == {"orderId": "A17"} and steps[2]["arguments"] == {"n": 1}
    assert steps[3]["content"] == '{"status": "paid"}' and steps[3]["is_error"] is False
    assert steps[4]["content"] == "card expired" and steps[4]["is_error"] is True
    assert tool_names(steps) == ["lookup_order", "refund"]


def test_mastra_stored_messages_with_tool_invocations():
    output = [
        {
            "id": "msg-1",
            "role": "assistant",
            "content": {
                "format": 2,
                "parts": [
                    {"type": "step-start"},
                    {
                        "type": "tool-invocation",
                        "toolInvocation": {
                            "state": "result",
                            "toolCallId": "c1",
                            "toolName": "weatherTool",
                            "args": {"city": "Paris"},
                            "result": {"temp": 21},
                        },
                    },
                    {"type": "text", "text": "It is 21 degrees in Paris."},
                ],
            },
        }
    ]
    steps = normalise([{"role": "user", "content": "Weather in Paris?"}], output)
    assert kinds(steps) == ["message", "tool_call", "tool_result", "message"]
    assert steps[1]["tool"] == "weatherTool" and steps[2]["content"] == '{"temp": 21}'
    assert final_texts(steps)[2] == "It is 21 degrees in Paris."


def test_ai_sdk_v5_ui_tool_parts():
    output = [
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool-getWeather",
                    "toolCallId": "w1",
                    "state": "output-available",
                    "input": {"city": "Oslo"},
                    "output": "3 degrees",
                },
                {
                    "type": "tool-getWeather",
                    "toolCallId": "w2",
                    "state": "output-error",
                    "input": {"city": "?"},
                    "errorText": "unknown city",
                },
                {"type": "text", "text": "Oslo: 3 degrees."},
            ],
        }
    ]
    steps = normalise([], output)
    assert kinds(steps) == ["tool_call", "tool_result", "tool_call", "tool_result", "message"]
    assert steps[0]["tool"] == "getWeather" and steps[3]["is_error"] is True


def test_malformed_tool_calls_are_kept_and_flagged():
    output = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "", "arguments": "{oops"}},
                "not a call",
            ],
        },
        {"role": "tool", "tool_call_id": "nobody", "content": "orphan"},
    ]
    steps = normalise([], output)
    assert kinds(steps) == ["tool_call", "unknown", "tool_result"]
    assert steps[0]["arguments"] == "{oops"
    assert set(steps[0]["flags"]) == {"arguments_not_json", "missing_tool_name"}
    assert steps[1]["raw"] == "not a call"
    assert steps[2]["flags"] == ["unmatched_call"] and steps[2]["content"] == "orphan"
    assert flagged(steps) == 2


def test_unknown_parts_are_kept_whole_never_dropped():
    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    messages = [{"role": "user", "content": [{"type": "text", "text": "What is this?"}, image]}]
    steps = normalise(messages, "A cat.")
    assert kinds(steps) == ["message", "unknown", "message"]
    assert steps[1]["raw"] == image
    assert final_texts(steps) == ("What is this?", "", "A cat.")


def test_plain_strings_are_user_turns_in_input_and_assistant_turns_in_output():
    steps = normalise(["hi", {"role": "user", "content": "again"}], ["one", "two"])
    assert [(s["role"], s["text"]) for s in steps] == [
        ("user", "hi"),
        ("user", "again"),
        ("assistant", "one"),
        ("assistant", "two"),
    ]
    assert final_texts(steps) == ("hi", "", "two")
