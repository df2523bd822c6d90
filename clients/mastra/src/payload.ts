/**
 * What evalsite is sent for one Mastra scorer run: the run's input messages and output as
 * Mastra gives them (Mastra's stored messages, `{role, content: {format: 2, parts}}`, which
 * evalsite reads as they are), the agent's name, and the loop the run belongs to.
 *
 * A scorer meets two shapes of run:
 * - inside `isTaskComplete`, `run.input` is Mastra's completion context (`messages` of the whole
 *   loop so far, `iteration`, `runId`, `threadId`) and `run.output` the iteration's answer text;
 * - in Mastra's evals (`type: 'agent'` scorers), `run.input` holds `inputMessages`,
 *   `rememberedMessages` and `systemMessages`, and `run.output` the response messages.
 * Anything else is sent as plain input text/messages and output.
 */

import { randomUUID } from 'node:crypto';

import { isRecord } from './evalsite.js';

type Message = Record<string, unknown>;

export interface LoopRun {
  runId?: string;
  input?: unknown;
  output: unknown;
  /** Set by Mastra for a live scorer of an agent (`scorers` on the agent): `{id, name}`. */
  entity?: unknown;
}

export interface RunFields {
  agent: string;
  input: { messages: Message[] };
  output: string | Message[];
  metadata: Record<string, unknown>;
}

/** The run fields of a `POST /api/score` body for one scorer run. */
export function runFields(run: LoopRun): RunFields {
  const input = run.input;
  const { messages, output } = isCompletionContext(input)
    ? loopIteration(input.messages, run.output)
    : { messages: inputMessages(input), output: outputOf(run.output) };
  return { agent: agentName(run), input: { messages }, output, metadata: loopOf(run) };
}

/**
 * `loop_id` groups a loop's iterations: Mastra's run id (one `stream()`/`generate()` call, the
 * same across its `isTaskComplete` iterations), else a new id for this scorer run alone. A
 * thread id is kept beside it: a thread holds many loops, so it cannot be the loop id.
 */
function loopOf(run: LoopRun): Record<string, unknown> {
  const input = isRecord(run.input) ? run.input : {};
  const runId = text(input.runId) || text(run.runId) || randomUUID();
  const step = typeof input.iteration === 'number' ? input.iteration : 1;
  const metadata: Record<string, unknown> = { loop_id: runId, loop_step: step };
  if (text(input.threadId)) metadata.thread_id = input.threadId;
  return metadata;
}

function isCompletionContext(input: unknown): input is { messages: unknown[] } {
  return isRecord(input) && Array.isArray(input.messages) && 'iteration' in input;
}

/**
 * Splits the loop's messages at the iteration: everything up to the last user message or the
 * last completion feedback is the input; the iteration's own messages are the output, their
 * text replaced by the answer Mastra scored (`run.output`): Mastra may carry an earlier
 * iteration's text in a continued message, and tool calls already in the input are dropped.
 */
function loopIteration(all: unknown[], answer: unknown): { messages: Message[]; output: Message[] | string } {
  const messages = all.filter(isMessage).filter(kept);
  let boundary = 0;
  messages.forEach((m, i) => {
    if (m.role === 'user' || isCompletionFeedback(m)) boundary = i + 1;
  });
  const before = messages.slice(0, boundary);
  const seen = new Set(before.flatMap(parts).map(toolCallId).filter(Boolean));
  const toolMessages = messages
    .slice(boundary)
    .map((m) => withParts(m, parts(m).filter((p) => !isText(p) && !seen.has(toolCallId(p)))))
    .filter((m) => parts(m).length > 0);
  const finalText = typeof answer === 'string' ? answer : '';
  if (toolMessages.length === 0) return { messages: before, output: finalText };
  const output = finalText ? [...toolMessages, { role: 'assistant', content: finalText }] : toolMessages;
  return { messages: before, output };
}

function inputMessages(input: unknown): Message[] {
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  if (Array.isArray(input)) return input.filter(isMessage).filter(kept);
  if (!isRecord(input)) return [];
  if (Array.isArray(input.inputMessages)) {
    const tagged = isRecord(input.taggedSystemMessages)
      ? Object.values(input.taggedSystemMessages).flat()
      : [];
    return [
      ...list(input.systemMessages),
      ...tagged,
      ...list(input.rememberedMessages),
      ...list(input.inputMessages),
    ]
      .filter(isMessage)
      .filter(kept);
  }
  return [];
}

function outputOf(output: unknown): string | Message[] {
  if (typeof output === 'string') return output;
  if (Array.isArray(output)) return output.filter(isMessage).filter(kept);
  if (isMessage(output)) return [output];
  return output === undefined || output === null ? '' : JSON.stringify(output);
}

/**
 * The agent's name as Mastra reports it: a live scorer's `entity` (`scorers` on the agent), or
 * the completion context's `customContext` inside `isTaskComplete`. Mastra's `runEvals` reports
 * none (its scorer runs carry only input, output, ground truth, request context and trace
 * ids), so there the scorer's `agent` option names it.
 */
function agentName(run: LoopRun): string {
  const entity = isRecord(run.entity) ? run.entity : {};
  const input = isRecord(run.input) ? run.input : {};
  const context = isRecord(input.customContext) ? input.customContext : {};
  return (
    text(entity.name) || text(entity.id) || text(context.agentName) || text(context.agentId) || ''
  );
}

// Mastra's `signal` messages are its own control messages (reminders it injects), not turns.
function kept(message: Message): boolean {
  return message.role !== 'signal';
}

function isCompletionFeedback(message: Message): boolean {
  const content = message.content;
  return isRecord(content) && isRecord(content.metadata) && 'completionResult' in content.metadata;
}

function parts(message: Message): Message[] {
  const content = message.content;
  if (isRecord(content) && Array.isArray(content.parts)) return content.parts.filter(isRecord);
  if (Array.isArray(content)) return content.filter(isRecord);
  if (typeof content === 'string' && content) return [{ type: 'text', text: content }];
  return [];
}

function withParts(message: Message, kept: Message[]): Message {
  const content = isRecord(message.content) ? message.content : {};
  const { content: _mirror, ...rest } = content; // the text mirror of the parts it replaces
  return { ...message, content: { format: 2, ...rest, parts: kept } };
}

function isText(part: Message): boolean {
  return part.type === 'text' || part.type === 'step-start';
}

function toolCallId(part: Message): string {
  const invocation = isRecord(part.toolInvocation) ? part.toolInvocation : part;
  return text(invocation.toolCallId);
}

function isMessage(value: unknown): value is Message {
  return isRecord(value) && typeof value.role === 'string';
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}
