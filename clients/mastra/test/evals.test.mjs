// The scorer in Mastra's eval shape (a `type: 'agent'` run: input and response messages), and
// every way evalsite can fail to give a verdict: the scorer then fails, it never passes.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { test } from 'node:test';

import { Mastra } from '@mastra/core';
import { Agent } from '@mastra/core/agent';
import { ScorerRunError, runEvals } from '@mastra/core/evals';
import { MastraError } from '@mastra/core/error';
import { InMemoryStore } from '@mastra/core/storage';

import { createEvalsiteRubricScorer, evalsiteFailure } from '@evalsite/mastra';

import { api, completionChecks, liveServer, runsOf, scriptedModel } from './helpers.mjs';

const server = liveServer();
const PASSING = 'Your refund for order number 1234 was sent, thanks.';

function agentRun(output, runId = randomUUID()) {
  const message = (role, text) => ({
    id: randomUUID(),
    role,
    createdAt: new Date(),
    content: { format: 2, parts: [{ type: 'text', text }], content: text },
  });
  return {
    runId,
    input: {
      inputMessages: [message('user', 'Where is my refund for order 1234?')],
      rememberedMessages: [],
      systemMessages: [{ role: 'system', content: 'You are a polite support agent.' }],
      taggedSystemMessages: {},
    },
    output: [message('assistant', output)],
  };
}

/** scorer.run's rejection: the evalsite failure behind it (Mastra wraps the error). */
async function failure(promise) {
  const error = await promise.then(
    () => assert.fail('the scorer reported a result'),
    (e) => e,
  );
  assert.ok(error instanceof ScorerRunError, `not Mastra's ScorerRunError: ${error?.stack ?? error}`);
  const found = evalsiteFailure(error);
  assert.ok(found, `not an evalsite failure: ${error?.stack ?? error}`);
  assert.ok(error.message.includes(found.message), error.message);
  return found;
}

async function closedPort() {
  const listener = createServer();
  await new Promise((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const { port } = listener.address();
  await new Promise((resolve) => listener.close(resolve));
  return port;
}

test('an eval run of Mastra messages is scored with evalsite’s score and reason', async () => {
  const agent = `mastra-eval-${randomUUID()}`;
  const scorer = createEvalsiteRubricScorer({ ...server, agent, alignment: 'user' });
  const run = agentRun(PASSING);

  const result = await scorer.run(run);

  const [stored] = await runsOf(server, agent);
  const rubric = stored.evaluations.find((e) => e.kind === 'rubric');
  assert.equal(result.score, 1);
  assert.equal(result.score, rubric.score);
  assert.equal(result.reason, rubric.reason);
  assert.equal(rubric.rubric_version, 1);
  assert.ok(stored.evaluations.some((e) => e.kind === 'alignment'));
  assert.deepEqual(stored.metadata, { loop_id: run.runId, loop_step: 1 });
  assert.deepEqual(
    stored.steps.map((s) => [s.source, s.role, s.text]),
    [
      ['input', 'system', 'You are a polite support agent.'],
      ['input', 'user', 'Where is my refund for order 1234?'],
      ['output', 'assistant', PASSING],
    ],
  );
});

test('inline criteria are judged in the judge view asked for', async () => {
  const agent = `mastra-inline-${randomUUID()}`;
  const criteria = '- Mentions the "refund"\n- [optional] Says "sorry"';
  const scorer = createEvalsiteRubricScorer({ ...server, rubric: undefined, agent, criteria, judgeView: 'conversation' });

  const result = await scorer.run(agentRun(PASSING));

  const [stored] = await runsOf(server, agent);
  const rubric = stored.evaluations.find((e) => e.kind === 'rubric');
  assert.equal(result.score, 1);
  assert.equal(rubric.judge_view, 'conversation');
  assert.deepEqual(
    rubric.verdicts.map((v) => [v.required, v.satisfied]),
    [
      [true, true],
      [false, false],
    ],
  );
});

test('a judge view without inline criteria is refused when the scorer is made', () => {
  assert.throws(
    () => createEvalsiteRubricScorer({ ...server, judgeView: 'trajectory' }),
    /"judgeView" applies to inline "criteria"/,
  );
  assert.throws(() => createEvalsiteRubricScorer({ ...server, rubric: '' }), /give a "rubric"/);
});

test('a failing answer scores 0 with the failed criterion in the reason', async () => {
  const scorer = createEvalsiteRubricScorer(server);
  const result = await scorer.run(agentRun('Your refund is on its way.'));
  assert.equal(result.score, 0);
  assert.match(result.reason, /order number/);
});

test('evalsite unreachable: the scorer fails saying so', async () => {
  const url = `http://127.0.0.1:${await closedPort()}`;
  const scorer = createEvalsiteRubricScorer({ ...server, url });
  const error = await failure(scorer.run(agentRun(PASSING)));
  assert.equal(error.kind, 'unreachable');
  assert.match(error.message, /evalsite is unreachable at http:\/\/127\.0\.0\.1:\d+\/api\/score/);
});

test('an error answer (unknown rubric, bad key) fails the scorer with the API’s message', async () => {
  const unknown = createEvalsiteRubricScorer({ ...server, rubric: 'no-such-rubric' });
  const error = await failure(unknown.run(agentRun(PASSING)));
  assert.equal(error.kind, 'http');
  assert.ok(error.status >= 400 && error.status < 500, String(error.status));
  assert.match(error.message, /rubric/i);

  const badKey = createEvalsiteRubricScorer({ ...server, apiKey: 'not-a-key' });
  const unauthorized = await failure(badKey.run(agentRun(PASSING)));
  assert.equal(unauthorized.status, 401);
});

test('a judge that fails for good fails the scorer with evalsite’s error', async () => {
  const scorer = createEvalsiteRubricScorer(server);
  const error = await failure(scorer.run(agentRun(`${PASSING} [[judge:400]]`)));
  assert.equal(error.kind, 'failed');
  assert.match(error.message, /evalsite could not evaluate the run: .+/);
  assert.equal(error.evaluationIds.length, 1);
});

test('a 202 (still judging when the timeout runs out) fails the scorer, never a pass', async () => {
  const scorer = createEvalsiteRubricScorer({ ...server, timeoutSeconds: 1 });
  const error = await failure(scorer.run(agentRun(`${PASSING} [[latency:4]]`)));
  assert.equal(error.kind, 'still_judging');
  assert.equal(error.status, 202);
  assert.match(error.message, /still judging .*not a pass/);
  // The evaluation goes on in evalsite and would pass: the scorer still did not say so.
  const evaluation = await api(server, `/evaluations/${error.evaluationIds[0]}`);
  assert.ok(['queued', 'running', 'succeeded'].includes(evaluation.status), evaluation.status);
});

test('a team over its judge budget fails the scorer as over_budget, never a pass', async () => {
  const budget = (limits) =>
    fetch(`${server.url}/api/team/budget`, {
      method: 'PUT',
      headers: { Authorization: `Bearer ${server.apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        daily_tokens: null, daily_usd: null, monthly_tokens: null, monthly_usd: null, ...limits,
      }),
    }).then((response) => assert.equal(response.status, 200));
  await budget({ daily_tokens: 0 });
  try {
    const scorer = createEvalsiteRubricScorer(server);
    const error = await failure(scorer.run(agentRun(PASSING)));
    assert.equal(error.kind, 'over_budget');
    assert.equal(error.status, 202);
    assert.match(error.message, /judge budget is reached.*not a pass/);
    const evaluation = await api(server, `/evaluations/${error.evaluationIds[0]}`);
    assert.equal(evaluation.status, 'over_budget');
  } finally {
    await budget({});
  }
});

test('with evalsite down, an isTaskComplete loop never completes and tells the agent why', async () => {
  const url = `http://127.0.0.1:${await closedPort()}`;
  const { model, prompts } = scriptedModel([PASSING]);
  const agent = new Agent({ id: 'support', name: 'support', instructions: 'Be brief.', model });
  const scorer = createEvalsiteRubricScorer({ ...server, url });

  const stream = await agent.stream('Where is my refund for order 1234?', {
    maxSteps: 2,
    isTaskComplete: { scorers: [scorer] },
  });
  const checks = await completionChecks(stream);

  assert.ok(checks.length >= 1);
  assert.ok(checks.every((c) => c.passed === false), JSON.stringify(checks));
  assert.match(checks[0].results[0].reason, /evalsite is unreachable/);
  assert.equal(prompts.length, 2);
});

test('runEvals scores an agent’s answers in evalsite under the agent’s name', async () => {
  const name = `mastra-runevals-${randomUUID()}`;
  const { model } = scriptedModel([PASSING]);
  const agent = new Agent({ id: 'support', name, instructions: 'You are a polite support agent.', model });
  // runEvals hands a scorer no agent (only input, output, ground truth, request context and
  // trace ids), so the name comes from the scorer's `agent` option.
  const scorer = createEvalsiteRubricScorer({ ...server, agent: agent.name });

  const result = await runEvals({ target: agent, data: [{ input: 'Where is my refund for order 1234?' }], scorers: [scorer] });

  assert.equal(result.scores[scorer.id], 1);
  const [stored] = await runsOf(server, name);
  assert.equal(stored.agent, name);
  assert.deepEqual(
    stored.steps.map((s) => [s.source, s.role, s.text]),
    [
      ['input', 'system', 'You are a polite support agent.'],
      ['input', 'user', 'Where is my refund for order 1234?'],
      ['output', 'assistant', PASSING],
    ],
  );
});

test('runEvals with evalsite failing rejects with a MastraError that carries the evalsite failure', async () => {
  const url = `http://127.0.0.1:${await closedPort()}`;
  const { model } = scriptedModel([PASSING]);
  const agent = new Agent({ id: 'support', name: 'support', instructions: 'Be brief.', model });
  const scorer = createEvalsiteRubricScorer({ ...server, url });

  const error = await runEvals({ target: agent, data: [{ input: 'Where is my refund?' }], scorers: [scorer] }).then(
    () => assert.fail('runEvals reported a score'),
    (e) => e,
  );

  assert.ok(error instanceof MastraError, String(error?.stack ?? error));
  assert.equal(error.id, 'RUN_EXPERIMENT_SCORER_FAILED_TO_SCORE_RESULT');
  assert.equal(evalsiteFailure(error)?.kind, 'unreachable');
});

test('a live scorer on an agent stores its runs under the name Mastra reports for the agent', async () => {
  const name = `mastra-live-${randomUUID()}`;
  const { model } = scriptedModel([PASSING]);
  const scorer = createEvalsiteRubricScorer(server);
  const agent = new Agent({ id: 'support', name, instructions: 'Be brief.', model, scorers: { rubric: { scorer } } });
  new Mastra({ agents: { support: agent }, storage: new InMemoryStore() });

  await agent.generate('Where is my refund for order 1234?');

  // Mastra runs live scorers after the answer, without waiting for them: poll with a deadline.
  const deadline = Date.now() + 30_000;
  let runs = await runsOf(server, name);
  while (runs.length === 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    runs = await runsOf(server, name);
  }
  assert.equal(runs.length, 1, `no run stored under the agent's name ${name}`);
  assert.ok(runs[0].steps.some((s) => s.source === 'output' && s.text === PASSING), JSON.stringify(runs[0].steps));
});
