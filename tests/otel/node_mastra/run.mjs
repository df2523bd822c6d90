// Two Mastra runs on scripted mock models, traced by Mastra's own observability
// (@mastra/observability + @mastra/otel-exporter) and exported over OTLP/HTTP (protobuf):
//
//   1. support-agent: one agent with a createTool tool (look an order up, answer);
//   2. supervisor: an Agent with `agents: { researchAgent, writingAgent }` that delegates to
//      both (the research agent calls a tool of its own), then answers.
//
// Environment: EVALSITE_OTLP_URL (…/api/otel/v1/traces), EVALSITE_API_KEY, and optionally
// EVALSITE_RUBRIC (sent as the resource attribute evalsite.rubric) and
// EVALSITE_SUPERVISOR_RUBRIC (the supervisor run's metadata evalsite.rubric). Exits non-zero
// when an export fails. tests/otel/test_mastra_traces.py runs it against the live server;
// tests/otel/node_mastra/capture.py runs it against a local capture server.
import { Agent } from '@mastra/core/agent';
import { Mastra } from '@mastra/core/mastra';
import { createTool } from '@mastra/core/tools';
import { Observability } from '@mastra/observability';
import { OtelExporter } from '@mastra/otel-exporter';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { MockLanguageModelV2, simulateReadableStream } from 'ai/test';
import { z } from 'zod';

const url = process.env.EVALSITE_OTLP_URL;
const apiKey = process.env.EVALSITE_API_KEY;
if (!url || !apiKey) {
  console.error('EVALSITE_OTLP_URL and EVALSITE_API_KEY must be set');
  process.exit(2);
}
const headers = { Authorization: `Bearer ${apiKey}` };

const QUESTION = 'Please refund order 77, it arrived broken.';
const ANSWER = 'Your refund for order number 77 is on its way. Thanks for your patience!';
const TASK = 'Write a short brief on AI tutors in schools.';
const RESEARCH_PROMPT = 'Find two facts about AI tutors in schools.';
const FACTS = 'AI tutors give instant feedback; teachers still grade the essays.';
const WRITING_PROMPT = `Write a two-sentence brief from these facts: ${FACTS}`;
const BRIEF = 'AI tutors give pupils instant feedback. Teachers keep the final say on essays.';
const FINAL = `Here is your brief: ${BRIEF}`;

// --- scripted models ------------------------------------------------------------------------

const text = (value) => ({ type: 'text', text: value });
const call = (id, name, input) => ({
  type: 'tool-call',
  toolCallId: id,
  toolName: name,
  input: JSON.stringify(input),
});

/** A MockLanguageModelV2 answering `steps` (content part lists) in turn. */
function scripted(steps) {
  let calls = 0;
  const usage = { inputTokens: 12, outputTokens: 7, totalTokens: 19 };
  const next = () => steps[Math.min(calls++, steps.length - 1)];
  const finish = (content) => (content.some((p) => p.type === 'tool-call') ? 'tool-calls' : 'stop');
  return new MockLanguageModelV2({
    doGenerate: async () => {
      const content = next();
      return { content, finishReason: finish(content), usage, warnings: [] };
    },
    doStream: async () => {
      const content = next();
      const chunks = [{ type: 'stream-start', warnings: [] }];
      content.forEach((part, i) => {
        if (part.type === 'text') {
          chunks.push({ type: 'text-start', id: `t${i}` });
          chunks.push({ type: 'text-delta', id: `t${i}`, delta: part.text });
          chunks.push({ type: 'text-end', id: `t${i}` });
        } else {
          chunks.push(part);
        }
      });
      chunks.push({ type: 'finish', finishReason: finish(content), usage });
      return { stream: simulateReadableStream({ chunks }) };
    },
  });
}

// --- agents ---------------------------------------------------------------------------------

const lookupOrder = createTool({
  id: 'lookup-order',
  description: 'Look an order up by its number',
  inputSchema: z.object({ order: z.number() }),
  execute: async ({ order }) => ({ order, status: 'delivered', damaged: true }),
});

const searchFacts = createTool({
  id: 'search-facts',
  description: 'Search the fact base',
  inputSchema: z.object({ query: z.string() }),
  execute: async () => ({ facts: FACTS }),
});

const supportAgent = new Agent({
  id: 'support-agent',
  name: 'support-agent',
  instructions: 'You are Acme support. Look orders up before answering.',
  model: scripted([[call('call_lookup', 'lookupOrder', { order: 77 })], [text(ANSWER)]]),
  tools: { lookupOrder },
});

const researchAgent = new Agent({
  id: 'research-agent',
  name: 'research-agent',
  description: 'Finds facts',
  instructions: 'You research facts with the search tool.',
  model: scripted([[call('call_search', 'searchFacts', { query: 'AI tutors' })], [text(FACTS)]]),
  tools: { searchFacts },
});

const writingAgent = new Agent({
  id: 'writing-agent',
  name: 'writing-agent',
  description: 'Writes briefs',
  instructions: 'You write short briefs.',
  model: scripted([[text(BRIEF)]]),
});

const supervisor = new Agent({
  id: 'supervisor',
  name: 'supervisor',
  instructions: 'You coordinate research and writing: research-agent for facts, then writing-agent.',
  model: scripted([
    [call('call_research', 'agent-researchAgent', { prompt: RESEARCH_PROMPT })],
    [call('call_writing', 'agent-writingAgent', { prompt: WRITING_PROMPT })],
    [text(FINAL)],
  ]),
  agents: { researchAgent, writingAgent },
});

// --- observability --------------------------------------------------------------------------

/** The real OTLP/HTTP protobuf exporter, counting what it sent and what failed. */
class CheckedExporter {
  constructor(inner) {
    this.inner = inner;
    this.sent = 0;
    this.failures = [];
  }
  export(spans, done) {
    this.inner.export(spans, (result) => {
      if (result.code === 0) this.sent += spans.length; // ExportResultCode.SUCCESS
      else this.failures.push(result.error?.message ?? 'export failed');
      done(result);
    });
  }
  forceFlush() {
    return this.inner.forceFlush();
  }
  shutdown() {
    return this.inner.shutdown();
  }
}

const exporter = new CheckedExporter(new OTLPTraceExporter({ url, headers }));
const resourceAttributes = process.env.EVALSITE_RUBRIC
  ? { 'evalsite.rubric': process.env.EVALSITE_RUBRIC }
  : {};
const observability = new Observability({
  configs: {
    evalsite: {
      serviceName: 'mastra-fixture',
      exporters: [
        new OtelExporter({
          provider: { custom: { endpoint: url, headers, protocol: 'http/protobuf' } },
          exporter, // the same exporter class the custom provider loads, wrapped to see failures
          resourceAttributes,
          signals: { logs: false },
        }),
      ],
    },
  },
});

const mastra = new Mastra({
  agents: { supportAgent, supervisor, researchAgent, writingAgent },
  observability,
  logger: false,
});

const support = await mastra.getAgent('supportAgent').generate(QUESTION);
if (support.text !== ANSWER) throw new Error(`support-agent answered ${JSON.stringify(support.text)}`);
// A rubric per run: span metadata, which the exporter writes as mastra.metadata.<key>.
const supervisorRubric = process.env.EVALSITE_SUPERVISOR_RUBRIC;
const brief = await mastra.getAgent('supervisor').generate(TASK, {
  maxSteps: 5,
  ...(supervisorRubric ? { tracingOptions: { metadata: { 'evalsite.rubric': supervisorRubric } } } : {}),
});
if (brief.text !== FINAL) throw new Error(`supervisor answered ${JSON.stringify(brief.text)}`);

await observability.shutdown();
if (exporter.failures.length || exporter.sent === 0) {
  console.error(`export failed (${exporter.sent} spans sent): ${exporter.failures.join('; ')}`);
  process.exit(1);
}
console.log(`exported ${exporter.sent} spans`);
