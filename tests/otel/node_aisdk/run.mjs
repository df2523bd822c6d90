// Two support-bot runs of the Vercel AI SDK with telemetry on, against a scripted mock model:
// generateText (lookup_order, then refund, then the answer) and streamText (lookup_order, then
// send_email, which throws, then the answer). Their spans go to evalsite with the real OTLP/HTTP
// protobuf exporter, and/or to a file as an OTLP/JSON export (the unit tests' fixture).
//
//   EVALSITE_URL, EVALSITE_API_KEY, EVALSITE_RUBRIC  export to {url}/api/otel/v1/traces
//   STREAM_RUBRIC                                    streamText's rubric (telemetry metadata)
//   CAPTURE_FILE                                     also write every span there as OTLP/JSON
//
// Prints {"generate": {...}, "stream": {...}} (each run's trace id and answer); exits non-zero
// when an export failed.
import { writeFileSync } from 'node:fs';

import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  InMemorySpanExporter,
  NodeTracerProvider,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import { MockLanguageModelV2, simulateReadableStream } from 'ai/test';
import { z } from 'zod';

const SYSTEM = 'You are the support bot of Acme. Always quote the order number.';
const QUESTION = 'My order 77 arrived damaged. Can I get a refund?';

const tools = {
  lookup_order: tool({
    description: 'Look an order up by its number',
    inputSchema: z.object({ order: z.number() }),
    execute: async ({ order }) => ({ order, status: 'delivered', damaged: true }),
  }),
  refund: tool({
    description: 'Refund an order',
    inputSchema: z.object({ order: z.number(), reason: z.string() }),
    execute: async ({ order }) => `refund R-9 issued for order ${order}`,
  }),
  send_email: tool({
    description: 'Email the customer',
    inputSchema: z.object({ to: z.string() }),
    execute: async () => {
      // A mail server timing out: the next model call then starts a few milliseconds later
      // (span start times have millisecond precision).
      await new Promise((resolve) => setTimeout(resolve, 5));
      throw new Error('mail server unavailable');
    },
  }),
};

const usage = (input, output) => ({
  inputTokens: input,
  outputTokens: output,
  totalTokens: input + output,
});
const call = (id, name, input) => ({
  type: 'tool-call',
  toolCallId: id,
  toolName: name,
  input: JSON.stringify(input),
});

/** A mock model answering with `steps` in turn: each {content, usage} of one model call. */
function scriptedModel(steps) {
  let n = 0;
  const next = () => steps[Math.min(n++, steps.length - 1)];
  const finishReason = (content) =>
    content.some((part) => part.type === 'tool-call') ? 'tool-calls' : 'stop';
  return new MockLanguageModelV2({
    provider: 'mock-provider',
    modelId: 'mock-model',
    doGenerate: async () => {
      const step = next();
      return { content: step.content, finishReason: finishReason(step.content), usage: step.usage, warnings: [] };
    },
    doStream: async () => {
      const step = next();
      return { stream: simulateReadableStream({ chunks: streamChunks(step, finishReason(step.content)) }) };
    },
  });
}

function streamChunks(step, finishReason) {
  const chunks = [{ type: 'stream-start', warnings: [] }];
  step.content.forEach((part, i) => {
    if (part.type === 'text') {
      const id = `t${i}`;
      chunks.push({ type: 'text-start', id }, { type: 'text-delta', id, delta: part.text });
      chunks.push({ type: 'text-end', id });
    } else {
      chunks.push(part);
    }
  });
  chunks.push({ type: 'finish', finishReason, usage: step.usage });
  return chunks;
}

async function runGenerate(rubricMetadata) {
  const answer = 'Order 77 is refunded: refund R-9 is on its way. Sorry about the damage!';
  const model = scriptedModel([
    { content: [call('call_1', 'lookup_order', { order: 77 })], usage: usage(50, 12) },
    {
      content: [
        { type: 'text', text: 'The order is damaged; refunding it.' },
        call('call_2', 'refund', { order: 77, reason: 'damaged' }),
      ],
      usage: usage(80, 20),
    },
    { content: [{ type: 'text', text: answer }], usage: usage(120, 25) },
  ]);
  const result = await generateText({
    model,
    system: SYSTEM,
    prompt: QUESTION,
    tools,
    stopWhen: stepCountIs(5),
    experimental_telemetry: {
      isEnabled: true,
      functionId: 'support-bot',
      metadata: { customer: 'c-42', ...rubricMetadata },
    },
  });
  return result.text;
}

async function runStream(rubricMetadata) {
  const answer = 'Order 77 is delivered but damaged; I could not email you, so here it is.';
  const model = scriptedModel([
    { content: [call('call_a', 'lookup_order', { order: 77 })], usage: usage(40, 10) },
    { content: [call('call_b', 'send_email', { to: 'jo@example.com' })], usage: usage(60, 11) },
    { content: [{ type: 'text', text: answer }], usage: usage(90, 30) },
  ]);
  const result = streamText({
    model,
    system: SYSTEM,
    messages: [{ role: 'user', content: QUESTION }],
    tools,
    stopWhen: stepCountIs(5),
    experimental_telemetry: {
      isEnabled: true,
      functionId: 'support-bot-stream',
      metadata: { customer: 'c-43', ...rubricMetadata },
    },
  });
  return await result.text;
}

/** Wraps an exporter to remember its failures (a failed scheduled export is otherwise only logged). */
function watched(exporter, failures) {
  return {
    export(spans, done) {
      exporter.export(spans, (result) => {
        if (result.code !== 0) failures.push(result.error ?? new Error('export failed'));
        done(result);
      });
    },
    forceFlush: () => exporter.forceFlush?.(),
    shutdown: () => exporter.shutdown(),
  };
}

function setUp(env, failures) {
  const resource = { 'service.name': 'support-service' };
  if (env.EVALSITE_RUBRIC) resource['evalsite.rubric'] = env.EVALSITE_RUBRIC;
  const spanProcessors = [];
  if (env.EVALSITE_URL) {
    const exporter = new OTLPTraceExporter({
      url: `${env.EVALSITE_URL}/api/otel/v1/traces`,
      headers: { Authorization: `Bearer ${env.EVALSITE_API_KEY}` },
    });
    spanProcessors.push(new BatchSpanProcessor(watched(exporter, failures)));
  }
  const memory = new InMemorySpanExporter();
  if (env.CAPTURE_FILE) spanProcessors.push(new SimpleSpanProcessor(memory));
  const provider = new NodeTracerProvider({ resource: resourceFromAttributes(resource), spanProcessors });
  provider.register();
  return { provider, memory };
}

async function main(env) {
  const failures = [];
  const { provider, memory } = setUp(env, failures);
  const stream = env.STREAM_RUBRIC ? { 'evalsite.rubric': env.STREAM_RUBRIC } : {};
  const out = { generate: await runGenerate({}), stream: await runStream(stream) };
  // forceFlush rejects when an export fails; `failures` also has the scheduled exports' ones.
  await provider.forceFlush().catch((error) => failures.push(...[error].flat()));
  if (env.CAPTURE_FILE) {
    const body = JsonTraceSerializer.serializeRequest(memory.getFinishedSpans());
    writeFileSync(env.CAPTURE_FILE, JSON.stringify(JSON.parse(new TextDecoder().decode(body)), null, 1) + '\n');
  }
  await provider.shutdown().catch((error) => failures.push(...[error].flat()));
  console.log(JSON.stringify(out));
  if (failures.length) {
    console.error(`export failed: ${failures.map((e) => e?.message ?? String(e)).join('; ')}`);
    process.exitCode = 1;
  }
}

await main(process.env);
