// A Mastra agent loops with isTaskComplete on an evalsite rubric, against the live server that
// tests/clients/test_mastra.py starts (a real worker judging with the fake judge). The rubric
// requires "refund" and "order number"; the first answer lacks the order number.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';

import { Agent } from '@mastra/core/agent';

import { createEvalsiteRubricScorer } from '@evalsite/mastra';

import { completionChecks, liveServer, promptText, runsOf, scriptedModel } from './helpers.mjs';

const server = liveServer();
const TASK = 'Where is my refund for order 1234?';
const FIRST = 'Your refund is on its way.';
const SECOND = 'Your refund for order number 1234 is on its way, thanks for waiting.';

test('the loop feeds evalsite’s reason back until the rubric passes, each iteration a run', async () => {
  const agentName = `mastra-loop-${randomUUID()}`;
  const { model, prompts } = scriptedModel([FIRST, SECOND, 'a third answer is never asked for']);
  const agent = new Agent({
    id: 'support',
    name: agentName,
    instructions: 'You are a polite support agent.',
    model,
  });
  const scorer = createEvalsiteRubricScorer({ ...server, timeoutSeconds: 60 });

  const stream = await agent.stream(TASK, {
    maxSteps: 5,
    isTaskComplete: { scorers: [scorer], strategy: 'all' },
  });
  const checks = await completionChecks(stream);

  // The first answer fails, the second passes, and the loop stops there.
  assert.deepEqual(
    checks.map((c) => c.passed),
    [false, true],
  );
  assert.equal(prompts.length, 2);
  assert.equal(await stream.text, FIRST + SECOND);

  // Both iterations are runs in evalsite, in one loop, judged with the rubric.
  const runs = await runsOf(server, agentName);
  assert.equal(runs.length, 2, JSON.stringify(runs.map((r) => r.id)));
  const [first, second] = runs;
  assert.deepEqual(
    runs.map((r) => [r.status, r.passed]),
    [
      ['succeeded', false],
      ['succeeded', true],
    ],
  );
  assert.ok(first.metadata.loop_id, JSON.stringify(first.metadata));
  assert.equal(second.metadata.loop_id, first.metadata.loop_id);
  assert.deepEqual(
    runs.map((r) => r.metadata.loop_step),
    [1, 2],
  );
  assert.equal(first.output, FIRST);
  assert.equal(second.output, SECOND);
  assert.ok(first.input.messages.some((m) => m.role === 'user' && JSON.stringify(m).includes(TASK)));

  // evalsite's reason (the failed required criterion) is what the model reads next.
  const evaluation = first.evaluations.find((e) => e.kind === 'rubric');
  const failing = evaluation.verdicts.filter((v) => v.required && !v.satisfied);
  assert.deepEqual(
    failing.map((v) => v.description),
    ['Gives the "order number"'],
  );
  assert.equal(checks[0].results[0].reason, evaluation.reason);
  const secondPrompt = promptText(prompts[1]);
  assert.ok(
    secondPrompt.includes(evaluation.reason),
    `the second call's prompt lacks evalsite's reason:\n${evaluation.reason}\n---\n${secondPrompt}`,
  );
  assert.ok(!promptText(prompts[0]).includes('order number'));
});

test('generate() loops the same way and groups its iterations under its own loop id', async () => {
  const agentName = `mastra-generate-${randomUUID()}`;
  const { model, prompts } = scriptedModel([FIRST, SECOND]);
  const agent = new Agent({ id: 'support', name: agentName, instructions: 'Be brief.', model });
  const scorer = createEvalsiteRubricScorer({ ...server, timeoutSeconds: 60, inline: true });

  await agent.generate(TASK, { maxSteps: 5, isTaskComplete: { scorers: [scorer] } });

  assert.equal(prompts.length, 2);
  const runs = await runsOf(server, agentName);
  assert.deepEqual(
    runs.map((r) => [r.passed, r.output, r.metadata.loop_step]),
    [
      [false, FIRST, 1],
      [true, SECOND, 2],
    ],
  );
  assert.equal(new Set(runs.map((r) => r.metadata.loop_id)).size, 1);
});
