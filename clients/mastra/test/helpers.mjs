// Shared by the tests: the live evalsite server the pytest test started, and a scripted
// mock language model (the AI SDK's MockLanguageModelV2) that records every prompt it gets.
import { MockLanguageModelV2, simulateReadableStream } from 'ai/test';

/** EVALSITE_URL, EVALSITE_API_KEY, EVALSITE_RUBRIC: missing ones fail the test run. */
export function liveServer() {
  const names = ['EVALSITE_URL', 'EVALSITE_API_KEY', 'EVALSITE_RUBRIC'];
  const missing = names.filter((name) => !process.env[name]);
  if (missing.length) {
    throw new Error(
      `${missing.join(', ')} not set: run these tests through pytest ` +
        '(tests/clients/test_mastra.py starts the live server, a worker and the fake judge)',
    );
  }
  return {
    url: process.env.EVALSITE_URL,
    apiKey: process.env.EVALSITE_API_KEY,
    rubric: process.env.EVALSITE_RUBRIC,
  };
}

/** GET {url}/api{path} with the key; the parsed JSON (throws on a non-2xx answer). */
export async function api(server, path) {
  const response = await fetch(`${server.url}/api${path}`, {
    headers: { Authorization: `Bearer ${server.apiKey}` },
  });
  const body = await response.json();
  if (!response.ok) throw new Error(`GET ${path}: ${response.status} ${JSON.stringify(body)}`);
  return body;
}

/** The full runs of one agent name, oldest first. */
export async function runsOf(server, agent) {
  const page = await api(server, `/runs?agent=${encodeURIComponent(agent)}&limit=50`);
  const runs = await Promise.all(page.items.map((item) => api(server, `/runs/${item.id}`)));
  return runs.reverse();
}

/** A mock model answering `answers` in turn (the last one again after that). */
export function scriptedModel(answers) {
  const prompts = [];
  const next = (options) => {
    prompts.push(options.prompt);
    return answers[Math.min(prompts.length - 1, answers.length - 1)];
  };
  const usage = { inputTokens: 10, outputTokens: 10, totalTokens: 20 };
  const model = new MockLanguageModelV2({
    doGenerate: async (options) => ({
      content: [{ type: 'text', text: next(options) }],
      finishReason: 'stop',
      usage,
      warnings: [],
    }),
    doStream: async (options) => {
      const text = next(options);
      return {
        stream: simulateReadableStream({
          chunks: [
            { type: 'stream-start', warnings: [] },
            { type: 'text-start', id: 't1' },
            { type: 'text-delta', id: 't1', delta: text },
            { type: 'text-end', id: 't1' },
            { type: 'finish', finishReason: 'stop', usage },
          ],
        }),
      };
    },
  });
  return { model, prompts };
}

/** Every text in a model call's prompt, joined. */
export function promptText(prompt) {
  return prompt
    .flatMap((message) =>
      typeof message.content === 'string'
        ? [message.content]
        : message.content.filter((part) => part.type === 'text').map((part) => part.text),
    )
    .join('\n');
}

/** Reads a Mastra stream to its end; the `is-task-complete` chunks it carried. */
export async function completionChecks(stream) {
  const checks = [];
  for await (const chunk of stream.fullStream) {
    if (chunk.type === 'is-task-complete') checks.push(chunk.payload);
  }
  return checks;
}
