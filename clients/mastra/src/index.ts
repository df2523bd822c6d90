/**
 * `createEvalsiteRubricScorer`: a Mastra scorer whose score and reason come from an evalsite
 * rubric (`POST /api/score`), built with Mastra's own `createScorer` so it drops into
 * `isTaskComplete` and into Mastra's evals. Each scorer run is stored in evalsite as a run,
 * grouped with the other iterations of its loop by `metadata.loop_id`.
 *
 * It never reports a pass it did not get: an unreachable evalsite, an error answer, a failed
 * evaluation or a 202 ("still judging") makes the scorer's analyze step throw an
 * {@link EvalsiteScoreError}; `scorer.run()` then rejects with Mastra's `ScorerRunError` (the
 * evalsite error in its `cause` chain, see {@link evalsiteFailure}), which `isTaskComplete`
 * counts as "not complete" and shows the agent as the reason.
 */

import { createScorer } from '@mastra/core/evals';

import { postScore } from './evalsite.js';
import type { AlignmentMode, EvalsiteScoreResult, JudgeView } from './evalsite.js';
import { runFields } from './payload.js';
import type { LoopRun } from './payload.js';

export { EvalsiteScoreError, evalsiteFailure, postScore } from './evalsite.js';
export type {
  AlignmentMode,
  EvalsiteFailure,
  EvalsiteFailureKind,
  EvalsiteScoreResult,
  EvalsiteVerdict,
  JudgeView,
} from './evalsite.js';
export { runFields } from './payload.js';

export interface EvalsiteRubricScorerOptions {
  /** evalsite's base URL, e.g. `https://evals.example.com` (the API is under `/api`). */
  url: string;
  /** A team API key (team settings → API keys). */
  apiKey: string;
  /** The rubric's slug or id in that team (its current version is what judges). */
  rubric?: string;
  /**
   * Inline criteria instead of the rubric's (a list, or text with one criterion per line and
   * `[optional]` tags); a `rubric` given too still supplies the judge settings.
   */
  criteria?: string | Array<{ description: string; required?: boolean }>;
  /** Also judge prompt alignment (`user`, `system`, `both`); default the rubric's mode. */
  alignment?: AlignmentMode;
  /**
   * What the judge sees with inline `criteria` (`final`, `conversation`, `trajectory`); a
   * stored rubric is judged in the view saved with its version (the rubric editor's "What the
   * judge sees"), so this needs `criteria`.
   */
  judgeView?: JudgeView;
  /**
   * Ask the evalsite web process that receives each call to judge it itself (`"inline": true`):
   * no worker queue, the fastest answer for an agent loop. Default: evalsite's workers judge.
   */
  inline?: boolean;
  /** Seconds evalsite waits for the judge before answering 202 (1–120, default 30). */
  timeoutSeconds?: number;
  /**
   * The agent name stored with each run; default the agent's name Mastra reports (in
   * `isTaskComplete` and for a scorer on the agent; `runEvals` reports none: give it here).
   */
  agent?: string;
  /** The scorer's id in Mastra; default `evalsite-rubric-<rubric>`. */
  id?: string;
  /** A fetch implementation (default the global one). */
  fetch?: typeof fetch;
}

const DEFAULT_TIMEOUT_SECONDS = 30;

/** A Mastra scorer judged by an evalsite rubric: `score` and `reason` are evalsite's. */
export function createEvalsiteRubricScorer(options: EvalsiteRubricScorerOptions) {
  const settings = checked(options);
  const label = options.rubric ?? 'inline criteria';
  return createScorer<unknown, unknown>({
    id: options.id ?? `evalsite-rubric-${options.rubric ?? 'inline'}`,
    name: `evalsite rubric ${label}`,
    description: `Scores the agent's answer with the evalsite rubric "${label}"`,
  })
    .analyze(async ({ run }) => {
      const fields = runFields(run as LoopRun);
      const body: Record<string, unknown> = {
        ...fields,
        agent: options.agent ?? fields.agent,
        timeout: settings.timeoutSeconds,
      };
      if (options.rubric) body.rubric = options.rubric;
      if (options.criteria !== undefined) body.criteria = options.criteria;
      if (options.alignment) body.alignment = options.alignment;
      if (options.judgeView) body.judge_view = options.judgeView;
      if (options.inline) body.inline = true;
      return postScore({ ...settings, body, fetch: options.fetch });
    })
    .generateScore(({ results }) => scoreOf(results.analyzeStepResult))
    .generateReason(({ results }) => results.analyzeStepResult.reason);
}

/**
 * evalsite's score. With a rubric it is scale × (passed ? 1 : 0), so with the default scale 1
 * it is exactly `isTaskComplete`'s "1 means complete"; whatever the scale, a result evalsite
 * did not pass is never reported as 1.
 */
function scoreOf(result: EvalsiteScoreResult): number {
  const score = result.score ?? 0;
  return result.passed !== true && score >= 1 ? 0 : score;
}

function checked(options: EvalsiteRubricScorerOptions) {
  for (const name of ['url', 'apiKey'] as const) {
    if (typeof options[name] !== 'string' || !options[name].trim()) {
      throw new TypeError(`createEvalsiteRubricScorer: "${name}" is required`);
    }
  }
  if (!options.rubric?.trim() && options.criteria === undefined) {
    throw new TypeError('createEvalsiteRubricScorer: give a "rubric" (slug or id) or "criteria"');
  }
  if (options.judgeView && options.criteria === undefined) {
    throw new TypeError(
      'createEvalsiteRubricScorer: "judgeView" applies to inline "criteria"; a stored rubric ' +
        "is judged in the view saved with its version (set it in evalsite's rubric editor)",
    );
  }
  const timeoutSeconds = options.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS;
  if (!(timeoutSeconds > 0 && timeoutSeconds <= 120)) {
    throw new RangeError('createEvalsiteRubricScorer: "timeoutSeconds" must be in (0, 120]');
  }
  return { url: options.url, apiKey: options.apiKey, timeoutSeconds };
}
