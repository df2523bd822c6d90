/**
 * One call to evalsite's synchronous scoring endpoint, `POST /api/score`, and every way it can
 * go wrong turned into an {@link EvalsiteScoreError}: only a finished, succeeded evaluation
 * comes back as a result.
 */

export type AlignmentMode = 'off' | 'user' | 'system' | 'both';
export type JudgeView = 'final' | 'conversation' | 'trajectory';

export interface EvalsiteVerdict {
  criterion_id: string;
  description: string;
  required: boolean;
  satisfied: boolean;
  reasoning: string;
}

/** The body of a `200 {"status": "succeeded", ...}` answer (the fields this package reads). */
export interface EvalsiteScoreResult {
  status: 'succeeded';
  passed: boolean | null;
  score: number | null;
  reason: string;
  verdicts: EvalsiteVerdict[];
  alignment: Record<string, unknown> | null;
  evaluation_id: string;
  evaluation_ids: string[];
  run_id: string;
}

export type EvalsiteFailureKind =
  | 'unreachable'
  | 'http'
  | 'still_judging'
  | 'over_budget'
  | 'failed'
  | 'invalid';

/** evalsite could not give a verdict: the scorer must fail, never report a pass. */
export class EvalsiteScoreError extends Error {
  readonly kind: EvalsiteFailureKind;
  readonly status?: number;
  readonly evaluationIds: string[];

  constructor(
    kind: EvalsiteFailureKind,
    message: string,
    options: { status?: number; evaluationIds?: string[]; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'EvalsiteScoreError';
    this.kind = kind;
    this.status = options.status;
    this.evaluationIds = options.evaluationIds ?? [];
  }
}

export interface ScoreRequest {
  url: string;
  apiKey: string;
  /** The JSON body of `POST /api/score`. */
  body: Record<string, unknown>;
  /** What evalsite waits for the judge (its `timeout`); the HTTP call waits 15 s more. */
  timeoutSeconds: number;
  fetch?: typeof fetch;
}

const HTTP_MARGIN_SECONDS = 15;

/** `POST {url}/api/score`; resolves only with a succeeded evaluation. */
export async function postScore(request: ScoreRequest): Promise<EvalsiteScoreResult> {
  const endpoint = `${request.url.replace(/\/+$/, '')}/api/score`;
  const doFetch = request.fetch ?? fetch;
  let response: Response;
  try {
    response = await doFetch(endpoint, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${request.apiKey}`,
        'Content-Type': 'application/json',
        Accept: 'application/json',
      },
      body: JSON.stringify(request.body),
      redirect: 'error',
      signal: AbortSignal.timeout((request.timeoutSeconds + HTTP_MARGIN_SECONDS) * 1000),
    });
  } catch (error) {
    throw new EvalsiteScoreError(
      'unreachable',
      `evalsite is unreachable at ${endpoint}: ${describe(error)}`,
      { cause: error },
    );
  }
  const body = await readJson(response);
  return resultOf(response.status, body, endpoint);
}

function resultOf(status: number, body: unknown, endpoint: string): EvalsiteScoreResult {
  if (status === 202 && field(body, 'status') === 'over_budget') {
    const ids = evaluationIds(body);
    throw new EvalsiteScoreError(
      'over_budget',
      `evalsite did not judge the run: the team's judge budget is reached (it is judged when ` +
        `the budget allows); not a pass. Evaluations: ${ids.join(', ') || 'unknown'}`,
      { status, evaluationIds: ids },
    );
  }
  if (status === 202) {
    const ids = evaluationIds(body);
    throw new EvalsiteScoreError(
      'still_judging',
      `evalsite is still judging (${field(body, 'status') || 'queued'}) after the scorer's ` +
        `timeout; not a pass. Evaluations: ${ids.join(', ') || 'unknown'}`,
      { status, evaluationIds: ids },
    );
  }
  if (status !== 200) {
    throw new EvalsiteScoreError('http', `evalsite answered ${status}: ${apiMessage(body)}`, {
      status,
    });
  }
  if (!isRecord(body) || typeof body.status !== 'string') {
    throw new EvalsiteScoreError('invalid', `evalsite's answer from ${endpoint} is not a score`, {
      status,
    });
  }
  if (body.status !== 'succeeded') {
    const error = typeof body.error === 'string' && body.error ? body.error : body.status;
    throw new EvalsiteScoreError('failed', `evalsite could not evaluate the run: ${error}`, {
      status,
      evaluationIds: evaluationIds(body),
    });
  }
  if (typeof body.score !== 'number' || typeof body.reason !== 'string') {
    throw new EvalsiteScoreError('invalid', 'evalsite answered succeeded without a score', {
      status,
    });
  }
  return body as unknown as EvalsiteScoreResult;
}

/** The API's error as one line: `{"message"}` answers, or ninja's 422 `detail` list. */
function apiMessage(body: unknown): string {
  if (!isRecord(body)) return typeof body === 'string' && body ? body.slice(0, 300) : 'no body';
  if (Array.isArray(body.detail)) {
    return body.detail
      .map((d: unknown) => {
        const loc = isRecord(d) && Array.isArray(d.loc) ? d.loc.join('.') : '';
        const msg = isRecord(d) && typeof d.msg === 'string' ? d.msg : JSON.stringify(d);
        return loc ? `${loc}: ${msg}` : msg;
      })
      .join('; ');
  }
  if (typeof body.message === 'string') return body.message;
  if (typeof body.detail === 'string') return body.detail;
  return JSON.stringify(body).slice(0, 300);
}

async function readJson(response: Response): Promise<unknown> {
  const text = await response.text().catch(() => '');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function evaluationIds(body: unknown): string[] {
  if (isRecord(body) && Array.isArray(body.evaluation_ids)) {
    return body.evaluation_ids.filter((id): id is string => typeof id === 'string');
  }
  const one = field(body, 'evaluation_id');
  return one ? [one] : [];
}

function field(body: unknown, name: string): string {
  return isRecord(body) && typeof body[name] === 'string' ? (body[name] as string) : '';
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : '';
    return `${error.message}${cause}`;
  }
  return String(error);
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export interface EvalsiteFailure {
  kind: EvalsiteFailureKind;
  message: string;
  status?: number;
  evaluationIds: string[];
}

/**
 * The evalsite failure behind an error thrown by `scorer.run()`, else undefined. Mastra wraps
 * a step's error in its own `ScorerRunError` and passes the original along as plain data in
 * the `cause` chain (not as an {@link EvalsiteScoreError} instance), so this walks the chain.
 */
export function evalsiteFailure(error: unknown): EvalsiteFailure | undefined {
  for (let cause = error, depth = 0; isObject(cause) && depth < 10; depth++) {
    if (cause.name === 'EvalsiteScoreError' && typeof cause.kind === 'string') {
      return {
        kind: cause.kind as EvalsiteFailureKind,
        message: String(cause.message),
        status: typeof cause.status === 'number' ? cause.status : undefined,
        evaluationIds: Array.isArray(cause.evaluationIds) ? cause.evaluationIds.map(String) : [],
      };
    }
    cause = cause.cause;
  }
  return undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
