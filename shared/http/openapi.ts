// The OpenAPI 3.1 description of the HTTP API, served at GET /api/openapi.json. A test checks it against the
// function table both ways (every route documented, every documented route registered), and the e2e suite
// checks every answer it receives against it (test/support/openapi-answers.ts): where an answer's shape is
// fixed, its schema lists the required properties and allows no others.

import { DASHBOARD_STATIC_OPERATIONS, dashboardPaths } from './openapi-dashboard';

const problem = { $ref: '#/components/responses/Problem' };
const json = (schema: object) => ({ 'application/json': { schema } });
const queueParam = { name: 'queue', in: 'path', required: true, schema: { type: 'string', maxLength: 200 } };
const topicParam = { name: 'topic', in: 'path', required: true, schema: { type: 'string', maxLength: 200 } };
const scheduleParam = { name: 'name', in: 'path', required: true, schema: { type: 'string', minLength: 1, maxLength: 200 } };
const scheduleAnswer = (description: string) => ({ description, content: json({ $ref: '#/components/schemas/Schedule' }) });
const idParam = (name: string) => ({ name, in: 'path', required: true, schema: { type: 'string', format: 'uuid' } });
const flowNameParam = { name: 'name', in: 'path', required: true, schema: { type: 'string', maxLength: 100 } };
const flowIdParam = { name: 'id', in: 'path', required: true, schema: { $ref: '#/components/schemas/FlowRunId' } };
const correlationQuery = { name: 'correlationId', in: 'query', required: true, schema: { $ref: '#/components/schemas/CorrelationId' } };

export interface OpenApiOptions {
  /** MAX_WAIT_SECONDS: the cap of waitSeconds (larger values are capped, not refused). */
  maxWaitSeconds?: number;
}

/**
 * Every keyed route can answer 401 (no or wrong function key); every route that reads the database, 503; every
 * route 500 (a bug, as problem+json); every route with a request body 411, 413 and 415 (shared/http/body.ts).
 */
const NO_DATABASE = new Set(['openApi', ...DASHBOARD_STATIC_OPERATIONS]);

interface Operation {
  operationId: string;
  security?: unknown[];
  requestBody?: unknown;
  responses: Record<string, unknown>;
  [more: string]: unknown;
}

const withDescription = (description: string) => ({ ...problem, description });

function withCommonAnswers(paths: Record<string, Record<string, Operation>>) {
  for (const operations of Object.values(paths)) {
    for (const op of Object.values(operations)) {
      if (op.security === undefined) {
        op.responses['401'] ??= withDescription('No or wrong function key (x-functions-key header or ?code=). Azure\'s own host answers it with no body.');
      }
      if (op.requestBody !== undefined) {
        op.responses['411'] ??= withDescription('No body and no Content-Length (Azure Functions drops a chunked body).');
        op.responses['413'] ??= withDescription('The body is over the size limit.');
        op.responses['415'] ??= withDescription('The body is not UTF-8 JSON.');
      }
      if (!NO_DATABASE.has(op.operationId)) op.responses['503'] ??= withDescription('The database is unavailable or throttling (Retry-After is set).');
      op.responses['500'] ??= withDescription('An unexpected failure; the function log has the details.');
    }
  }
  return paths;
}

/** An object whose properties are all listed: `required` are always present, the rest sometimes, no others. */
const exact = (required: string[], properties: Record<string, unknown>) => ({ type: 'object', required, additionalProperties: false, properties });
/** A schema or null (a queue without a route has no policy). */
const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });

export function openApiDocument(serverUrl = '/api', options: OpenApiOptions = {}): Record<string, unknown> {
  const maxWait = options.maxWaitSeconds ?? 120;
  return {
    openapi: '3.1.0',
    info: {
      title: 'asyncresponse-functions',
      version: '1.0.0',
      description:
        'Durable worker queues and a correlated request/response channel on one Azure SQL database. ' +
        'Every route except /health and the dashboard page and its files needs a function key (x-functions-key header or ?code=).',
    },
    servers: [{ url: serverUrl }],
    security: [{ functionKey: [] }, { functionKeyQuery: [] }],
    paths: withCommonAnswers({
      '/queues/{queue}/messages': {
        post: {
          operationId: 'publishMessage',
          summary: 'Publish one job or a batch of at most 100 (idempotent by id).',
          parameters: [queueParam],
          requestBody: {
            required: true,
            content: json({
              oneOf: [
                { $ref: '#/components/schemas/PublishRequest' },
                { type: 'array', minItems: 1, maxItems: 100, items: { $ref: '#/components/schemas/PublishRequest' } },
              ],
            }),
          },
          responses: {
            '201': {
              description: 'Enqueued: one job answers Published, a batch (an array) PublishedBatch.',
              content: json({ oneOf: [{ $ref: '#/components/schemas/Published' }, { $ref: '#/components/schemas/PublishedBatch' }] }),
            },
            '200': {
              description: 'Every id already existed: nothing new was enqueued (duplicate: true).',
              content: json({ oneOf: [{ $ref: '#/components/schemas/Published' }, { $ref: '#/components/schemas/PublishedBatch' }] }),
            },
            '400': problem,
            '404': withDescription('The queue is not configured.'),
            '409': withDescription('The id belongs to a job on another queue (ids are unique across queues); nothing was published.'),
            '413': withDescription('The body, or a payload, is over the size limit.'),
          },
        },
        get: {
          operationId: 'listWaiting',
          summary: "The queue's waiting jobs (first page): ready (available now) or delayed, not leased; oldest first is the order claims take.",
          parameters: [
            queueParam,
            { name: 'state', in: 'query', schema: { enum: ['ready', 'delayed'], default: 'ready' } },
            { name: 'order', in: 'query', description: 'oldest: the claim order (higher priority first, then availability time, then creation time); newest: its reverse.', schema: { enum: ['oldest', 'newest'], default: 'oldest' } },
            { name: 'top', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
          ],
          responses: {
            '200': {
              description: 'Waiting jobs.',
              content: json(
                exact(['queue', 'state', 'order', 'items'], {
                  queue: { type: 'string' },
                  state: { enum: ['ready', 'delayed'] },
                  order: { enum: ['oldest', 'newest'] },
                  items: { type: 'array', maxItems: 100, items: { $ref: '#/components/schemas/WaitingJob' } },
                }),
              ),
            },
            '400': { ...problem, description: 'A query value is out of range (errors names each field: state, order, top).' },
            '404': withDescription('The queue is not configured.'),
          },
        },
      },
      '/topics/{topic}/messages': {
        post: {
          operationId: 'publishTopic',
          summary: 'Publish one message or a batch of at most 100 to a topic: one copy per subscription (idempotent by id).',
          parameters: [topicParam],
          requestBody: {
            required: true,
            content: json({
              oneOf: [
                { $ref: '#/components/schemas/PublishRequest' },
                { type: 'array', minItems: 1, maxItems: 100, items: { $ref: '#/components/schemas/PublishRequest' } },
              ],
            }),
          },
          responses: {
            '201': {
              description: 'Fanned out (subscriptions: 0 = the topic has none; the message was dropped): one message answers TopicPublished, a batch TopicPublishedBatch.',
              content: json({ oneOf: [{ $ref: '#/components/schemas/TopicPublished' }, { $ref: '#/components/schemas/TopicPublishedBatch' }] }),
            },
            '200': {
              description: 'Every subscription already had every copy: nothing new was enqueued (duplicate: true).',
              content: json({ oneOf: [{ $ref: '#/components/schemas/TopicPublished' }, { $ref: '#/components/schemas/TopicPublishedBatch' }] }),
            },
            '400': problem,
            '404': withDescription('The topic is not configured.'),
            '413': withDescription('The body, or a payload, is over the size limit.'),
          },
        },
      },
      '/topics/{topic}/subscriptions': {
        get: {
          operationId: 'listSubscriptions',
          summary: "The topic's subscriptions (configured and recorded) with their queues' statistics.",
          parameters: [topicParam],
          responses: {
            '200': {
              description: 'Subscriptions.',
              content: json(exact(['topic', 'items'], { topic: { type: 'string' }, items: { type: 'array', items: { $ref: '#/components/schemas/SubscriptionStats' } } })),
            },
            '404': withDescription('The topic is not configured.'),
          },
        },
      },
      '/topics': {
        get: {
          operationId: 'listTopics',
          summary: 'Every configured topic with its subscriptions and their statistics.',
          responses: {
            '200': {
              description: 'Topics.',
              content: json(
                exact(['items'], {
                  items: {
                    type: 'array',
                    items: exact(['topic', 'subscriptions'], {
                      topic: { type: 'string' },
                      subscriptions: { type: 'array', items: { $ref: '#/components/schemas/SubscriptionStats' } },
                    }),
                  },
                }),
              ),
            },
          },
        },
      },
      '/queues/{queue}': {
        get: {
          operationId: 'getQueue',
          summary: "Depth by state, the age of the oldest ready job, and the queue's effective route and policy.",
          parameters: [queueParam],
          responses: { '200': { description: 'Statistics, route and policy.', content: json({ $ref: '#/components/schemas/QueueDetail' }) }, '404': withDescription('The queue is not configured.') },
        },
      },
      '/queues/{queue}/messages/{id}': {
        delete: {
          operationId: 'cancelMessage',
          summary: 'Cancel a job: a waiting (ready or delayed) one is deleted; a running one only with running=true (its handler is aborted at its next lease renewal).',
          parameters: [queueParam, idParam('id'), { name: 'running', in: 'query', schema: { type: 'string', enum: ['true', 'false'], default: 'false' } }],
          responses: {
            '204': { description: 'The waiting job was deleted.' },
            '202': {
              description: "The running job is marked cancelled: its handler's signal aborts within a third of the lock timeout and it ends as cancelled (not retried, not dead-lettered).",
              content: json(exact(['id', 'queue', 'state'], { id: { type: 'string', format: 'uuid' }, queue: { type: 'string' }, state: { const: 'cancelling' } })),
            },
            '400': { ...problem, description: 'The id is not a UUID, or running is not true or false.' },
            '404': withDescription('No waiting or running job with this id on the queue (never published, settled, or dead-lettered), or the queue is not configured.'),
            '409': withDescription('The job is running; add ?running=true to cancel it while it runs.'),
          },
        },
      },
      '/queues/{queue}/messages/{id}/reschedule': {
        post: {
          operationId: 'rescheduleMessage',
          summary: "Move a waiting job's due time: a delay from the database clock, or an instant.",
          parameters: [queueParam, idParam('id')],
          requestBody: {
            required: true,
            content: json({
              oneOf: [
                exact(['delaySeconds'], { delaySeconds: { type: 'number', minimum: 0, maximum: 315360000 } }),
                exact(['availableAt'], { availableAt: { type: 'string', format: 'date-time', description: 'ISO 8601 with a zone; compared with the database clock' } }),
              ],
            }),
          },
          responses: {
            '200': {
              description: 'Rescheduled.',
              content: json(exact(['id', 'queue', 'availableAt'], { id: { type: 'string', format: 'uuid' }, queue: { type: 'string' }, availableAt: { type: 'string', format: 'date-time' } })),
            },
            '400': { ...problem, description: 'The id is not a UUID, or the body is not exactly one of delaySeconds and availableAt.' },
            '404': withDescription('No waiting job with this id on the queue, or the queue is not configured.'),
            '409': withDescription('The job is running; only a waiting job can be rescheduled.'),
          },
        },
      },
      '/queues/{queue}/pause': {
        post: {
          operationId: 'pauseQueue',
          summary: 'Stop every instance claiming from the queue (persisted in the database); publishes are still accepted. Running jobs finish.',
          parameters: [queueParam],
          responses: { '200': { description: 'The queue state.', content: json({ $ref: '#/components/schemas/QueueState' }) }, '404': withDescription('The queue is not configured.') },
        },
      },
      '/queues/{queue}/resume': {
        post: {
          operationId: 'resumeQueue',
          summary: "Let claims from the queue go on; the queue's drains are woken.",
          parameters: [queueParam],
          responses: { '200': { description: 'The queue state.', content: json({ $ref: '#/components/schemas/QueueState' }) }, '404': withDescription('The queue is not configured.') },
        },
      },
      '/queues/{queue}/deadletters': {
        get: {
          operationId: 'listDeadLetters',
          summary: 'Dead letters from this queue, newest first.',
          parameters: [queueParam, { name: 'top', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 50 } }],
          responses: {
            '200': { description: 'Dead letters.', content: json(exact(['items'], { items: { type: 'array', maxItems: 1000, items: { $ref: '#/components/schemas/DeadLetter' } } })) },
            '400': problem,
            '404': withDescription('The queue is not configured.'),
          },
        },
      },
      '/queues/{queue}/deadletters/{id}/requeue': {
        post: {
          operationId: 'requeueDeadLetter',
          summary: 'Put a dead letter back on its source queue with attempts reset.',
          parameters: [queueParam, idParam('id')],
          responses: {
            '200': { description: 'Requeued.', content: json(exact(['id'], { id: { type: 'string', format: 'uuid' } })) },
            '400': { ...problem, description: 'The id is not a UUID (errors names the field `id`).' },
            '404': withDescription('No such dead letter from this queue, or the queue is not configured.'),
          },
        },
      },
      '/queues/{queue}/deadletters/{id}': {
        delete: {
          operationId: 'deleteDeadLetter',
          summary: 'Delete a dead letter.',
          parameters: [queueParam, idParam('id')],
          responses: {
            '204': { description: 'Deleted.' },
            '400': { ...problem, description: 'The id is not a UUID (errors names the field `id`).' },
            '404': withDescription('No such dead letter from this queue, or the queue is not configured.'),
          },
        },
      },
      '/jobs/{id}': {
        get: {
          operationId: 'getJob',
          summary: 'A job by id, in whichever state a row holds it (completed ones on queues that keep history: JOB_HISTORY_RETENTION_DAYS).',
          parameters: [idParam('id')],
          responses: {
            '200': { description: 'The job.', content: json({ $ref: '#/components/schemas/Job' }) },
            '400': { ...problem, description: 'The id is not a UUID.' },
            '404': withDescription('No row holds this id: never published, cancelled while waiting, completed on a queue without history, or pruned.'),
          },
        },
      },
      '/jobs': {
        get: {
          operationId: 'listJobs',
          summary: 'Completed jobs of the history, newest first (keyset pages), by queue or correlation id (at least one).',
          parameters: [
            { name: 'queue', in: 'query', schema: { type: 'string', maxLength: 200 } },
            { name: 'correlationId', in: 'query', schema: { type: 'string', maxLength: 400 } },
            { name: 'state', in: 'query', schema: { type: 'string', enum: ['completed'], default: 'completed' } },
            { name: 'since', in: 'query', description: 'Completed at or after (ISO 8601 with a zone).', schema: { type: 'string', format: 'date-time' } },
            { name: 'until', in: 'query', description: 'Completed before (ISO 8601 with a zone).', schema: { type: 'string', format: 'date-time' } },
            { name: 'cursor', in: 'query', description: "The previous page's nextCursor, unchanged.", schema: { type: 'string' } },
            { name: 'top', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 500, default: 50 } },
          ],
          responses: {
            '200': {
              description: 'A page of completed jobs.',
              content: json(
                exact(['items'], {
                  items: { type: 'array', items: { $ref: '#/components/schemas/Job' } },
                  nextCursor: { type: 'string', description: 'Present when there may be more: pass it as ?cursor= for the next page.' },
                  hint: { type: 'string', description: 'On an empty first page of a queue (or of every queue) that keeps no history: why it is empty and the setting that keeps completed jobs.' },
                }),
              ),
            },
            '400': { ...problem, description: 'Neither queue nor correlationId, an unconfigured queue, a bad state, instant, top or cursor.' },
          },
        },
      },
      '/flows': {
        get: {
          operationId: 'listFlows',
          summary: 'Flow runs, newest first (keyset pages), with the count of live runs per status.',
          parameters: [
            { name: 'status', in: 'query', schema: { $ref: '#/components/schemas/FlowStatus' } },
            { name: 'flow', in: 'query', description: 'A registered flow name.', schema: { type: 'string' } },
            { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
            { name: 'cursor', in: 'query', description: 'The previous page\'s cursor.', schema: { type: 'string' } },
          ],
          responses: {
            '200': {
              description: 'A page of runs.',
              content: json(
                exact(['items', 'counts', 'flows'], {
                  items: { type: 'array', items: { $ref: '#/components/schemas/FlowRunSummary' } },
                  cursor: { type: 'string', description: 'Present when there are more runs: pass it as ?cursor= for the next page.' },
                  counts: exact(['Running', 'Succeeded', 'Failed', 'Suspended'], {
                    Running: { type: 'integer', minimum: 0 },
                    Succeeded: { type: 'integer', minimum: 0 },
                    Failed: { type: 'integer', minimum: 0 },
                    Suspended: { type: 'integer', minimum: 0 },
                  }),
                  flows: { type: 'array', items: { type: 'string' }, description: 'The registered flow names.' },
                }),
              ),
            },
            '400': problem,
            '404': withDescription('Durable flows are not enabled in this app.'),
          },
        },
      },
      '/flows/{name}': {
        post: {
          operationId: 'startFlow',
          summary: 'Start a run of a registered flow (idempotent with an id: the same input returns the existing run).',
          parameters: [flowNameParam],
          requestBody: {
            required: true,
            content: json({
              type: 'object',
              additionalProperties: false,
              properties: { input: { description: 'Any JSON value (default null), handed to the flow.' }, id: { $ref: '#/components/schemas/FlowRunId' } },
            }),
          },
          responses: {
            '202': { description: 'Started.', content: json(exact(['id', 'status'], { id: { $ref: '#/components/schemas/FlowRunId' }, status: { const: 'Running' } })) },
            '200': {
              description: 'A run with this id, flow and input exists: nothing new was started.',
              content: json(exact(['id', 'status', 'existing'], { id: { $ref: '#/components/schemas/FlowRunId' }, status: { $ref: '#/components/schemas/FlowStatus' }, existing: { const: true } })),
            },
            '400': problem,
            '404': withDescription('No flow is registered under this name.'),
            '409': withDescription('The id names a run of another flow or with other input; nothing was started.'),
          },
        },
      },
      '/flows/{name}/{id}': {
        get: {
          operationId: 'getFlow',
          summary: 'A run: status, result or error, last message, attempts and each step; waitSeconds long-polls until it ends.',
          parameters: [
            flowNameParam,
            flowIdParam,
            { name: 'waitSeconds', in: 'query', description: `Values over ${maxWait} (MAX_WAIT_SECONDS) are capped.`, schema: { type: 'number', minimum: 0, default: 0 } },
          ],
          responses: {
            '200': { description: 'The run (still Running or Suspended when the wait ended first).', content: json({ $ref: '#/components/schemas/FlowRun' }) },
            '400': problem,
            '404': withDescription('No such flow, or no run of it with this id (or its state expired).'),
          },
        },
      },
      '/flows/{name}/{id}/{action}': {
        post: {
          operationId: 'controlFlow',
          summary:
            'suspend (Running → Suspended), resume (Suspended → Running, woken at once), cancel (→ Failed; its parent is woken) or restart a Failed (or cancelled) run from a step, body { fromStep } (the steps before it kept, it and the later ones run again).',
          parameters: [flowNameParam, flowIdParam, { name: 'action', in: 'path', required: true, schema: { enum: ['suspend', 'resume', 'cancel', 'restart'] } }],
          requestBody: {
            required: false,
            content: json({ type: 'object', properties: { fromStep: { type: 'string', minLength: 1, maxLength: 200, description: 'restart only: the step to run again from' } } }),
          },
          responses: {
            '200': { description: 'The run after the action.', content: json({ $ref: '#/components/schemas/FlowRun' }) },
            '400': withDescription('restart: no fromStep, or a step the run never recorded (errors names fromStep).'),
            '404': withDescription('No such action, flow or run.'),
            '409': withDescription('The run\'s status does not allow the action (e.g. resuming a run that is not suspended, cancelling one that ended).'),
          },
        },
      },
      '/responses': {
        post: {
          operationId: 'postResponse',
          summary: 'Publish a response for a correlation id.',
          requestBody: { required: true, content: json({ $ref: '#/components/schemas/ResponseRequest' }) },
          responses: {
            '202': {
              description: 'Stored; delivery says who got it.',
              content: json(
                exact(['id', 'delivery'], {
                  id: { type: 'string', format: 'uuid' },
                  delivery: { enum: ['live', 'stored', 'recovery'] },
                  duplicate: { const: true, description: 'Present when the id was already stored: nothing new was published.' },
                }),
              ),
            },
            '400': problem,
            '409': withDescription('The id is stored under another correlation id; nothing was published.'),
          },
        },
        get: {
          operationId: 'getResponse',
          summary: 'Long-poll for the next response of a correlation id.',
          parameters: [
            correlationQuery,
            { name: 'waitSeconds', in: 'query', description: `Values over ${maxWait} (MAX_WAIT_SECONDS) are capped.`, schema: { type: 'number', minimum: 0, default: 0 } },
          ],
          responses: { '200': { description: 'A response.', content: json({ $ref: '#/components/schemas/Response' }) }, '204': { description: 'Nothing arrived in time.' }, '400': problem },
        },
      },
      '/waiters': {
        post: {
          operationId: 'registerWaiter',
          summary: 'Register a callback URL that receives the response as a signed POST when nobody waits for it.',
          requestBody: {
            required: true,
            content: json({
              type: 'object',
              required: ['correlationId', 'callbackUrl'],
              properties: {
                correlationId: { $ref: '#/components/schemas/CorrelationId' },
                callbackUrl: { type: 'string', format: 'uri', description: 'https (http only for localhost); the host must be in CALLBACK_ALLOWED_HOSTS.' },
                ttlSeconds: { type: 'number', minimum: 1, maximum: 315360000, description: 'Default RECOVERY_STATE_EXPIRY_SECONDS (7 days).' },
              },
              additionalProperties: false,
            }),
          },
          responses: {
            '201': {
              description: 'Registered.',
              content: json(exact(['registrationId', 'expiresAt'], { registrationId: { type: 'string', format: 'uuid' }, expiresAt: { type: 'string', format: 'date-time' } })),
            },
            '400': problem,
            '409': { ...problem, description: 'The correlation id already has MAX_REGISTRATIONS_PER_CORRELATION_ID unexpired registrations; nothing was stored.' },
            '503': withDescription('Callbacks are disabled (no signing secret), or the database is unavailable or throttling.'),
          },
        },
      },
      '/waiters/{registrationId}': {
        delete: {
          operationId: 'deleteWaiter',
          summary: 'Remove a callback registration.',
          parameters: [idParam('registrationId'), correlationQuery],
          responses: {
            '204': { description: 'Deleted.' },
            '400': { ...problem, description: 'The correlation id is missing or invalid, or the registration id is not a UUID (errors names the field).' },
            '404': withDescription('No such registration for that correlation id.'),
          },
        },
      },
      '/health': {
        get: {
          operationId: 'health',
          summary: 'Database reachability and schema state.',
          security: [],
          responses: {
            '200': {
              description: 'Healthy.',
              content: json(
                exact(['status', 'store', 'schema', 'databaseTime'], {
                  status: { const: 'ok' },
                  store: { $ref: '#/components/schemas/StoreKind' },
                  schema: { const: 'ready' },
                  databaseTime: { type: 'string', format: 'date-time' },
                  callbacks: { type: 'string', description: 'Present while callbacks are off (the signing secret is unresolved).' },
                }),
              ),
            },
            '503': {
              description: 'The database is unreachable (unavailable) or the schema unusable (degraded); the error itself is in the log. Retry-After is set.',
              headers: { 'Retry-After': { schema: { type: 'integer' } } },
              content: json({
                oneOf: [
                  exact(['status', 'store', 'schema', 'databaseTime'], {
                    status: { const: 'degraded' },
                    store: { $ref: '#/components/schemas/StoreKind' },
                    schema: { type: 'string' },
                    databaseTime: { type: 'string', format: 'date-time' },
                  }),
                  exact(['status', 'store', 'schema', 'detail'], {
                    status: { const: 'unavailable' },
                    store: { anyOf: [{ $ref: '#/components/schemas/StoreKind' }, { const: 'unknown' }] },
                    schema: { const: 'unknown' },
                    detail: { type: 'string' },
                  }),
                ],
              }),
            },
          },
        },
      },
      '/schedules/{name}': {
        put: {
          operationId: 'putSchedule',
          summary: 'Create or replace a recurring schedule: one job per slot on a queue, or one copy per subscription of a topic.',
          parameters: [scheduleParam],
          requestBody: { required: true, content: json({ $ref: '#/components/schemas/ScheduleRequest' }) },
          responses: {
            '201': scheduleAnswer('Created.'),
            '200': scheduleAnswer('Replaced (the next slot is kept while cron, zone and paused are unchanged).'),
            '400': withDescription('Invalid fields (a bad cron expression, an unknown time zone, an unknown queue or topic…): errors names each.'),
          },
        },
        get: {
          operationId: 'getSchedule',
          summary: 'A schedule with its last and next run.',
          parameters: [scheduleParam],
          responses: { '200': scheduleAnswer('The schedule.'), '400': problem, '404': withDescription('No such schedule.') },
        },
        delete: {
          operationId: 'deleteSchedule',
          summary: 'Delete a schedule (jobs it already published stay on their queue).',
          parameters: [scheduleParam],
          responses: { '204': { description: 'Deleted.' }, '400': problem, '404': withDescription('No such schedule.') },
        },
      },
      '/schedules/{name}/pause': {
        post: {
          operationId: 'pauseSchedule',
          summary: 'Pause: no slot fires until it is resumed.',
          parameters: [scheduleParam],
          responses: { '200': scheduleAnswer('Paused.'), '400': problem, '404': withDescription('No such schedule.') },
        },
      },
      '/schedules/{name}/resume': {
        post: {
          operationId: 'resumeSchedule',
          summary: 'Resume from the next slot after now (slots passed while paused do not run).',
          parameters: [scheduleParam],
          responses: { '200': scheduleAnswer('Resumed.'), '400': problem, '404': withDescription('No such schedule.') },
        },
      },
      '/schedules': {
        get: {
          operationId: 'listSchedules',
          summary: 'Every schedule by name (at most 1,000), with its last and next run.',
          responses: {
            '200': { description: 'Schedules.', content: json(exact(['items'], { items: { type: 'array', maxItems: 1000, items: { $ref: '#/components/schemas/Schedule' } } })) },
          },
        },
      },
      '/openapi.json': {
        get: {
          operationId: 'openApi',
          summary: 'This document.',
          responses: {
            '200': {
              description: 'OpenAPI 3.1 JSON.',
              content: json({
                type: 'object',
                required: ['openapi', 'info', 'paths', 'components'],
                properties: {
                  openapi: { type: 'string', pattern: '^3\\.1\\.\\d+$' },
                  info: { type: 'object', required: ['title', 'version'], properties: { title: { type: 'string' }, version: { type: 'string' } } },
                  servers: { type: 'array', items: { type: 'object', required: ['url'], properties: { url: { type: 'string' } } } },
                  paths: { type: 'object' },
                  components: { type: 'object' },
                },
              }),
            },
          },
        },
      },
      ...dashboardPaths(),
    }),
    components: {
      securitySchemes: {
        functionKey: { type: 'apiKey', in: 'header', name: 'x-functions-key' },
        functionKeyQuery: { type: 'apiKey', in: 'query', name: 'code' },
      },
      responses: {
        Problem: { description: 'RFC 9457 problem details.', content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } },
      },
      schemas: {
        Job: exact(['id', 'state', 'queue', 'attempts', 'correlationId', 'createdAt', 'availableAt', 'completedAt', 'lastError'], {
          id: { type: 'string', format: 'uuid' },
          state: { type: 'string', enum: ['delayed', 'ready', 'leased', 'completed', 'dead-lettered', 'expired'] },
          queue: { type: 'string', description: 'The queue it was published to (a dead letter\'s source queue).' },
          attempts: { type: ['integer', 'null'], minimum: 0, description: 'Deliveries so far; null for a dead letter moved without them.' },
          correlationId: { type: ['string', 'null'] },
          createdAt: { type: 'string', format: 'date-time' },
          availableAt: { type: ['string', 'null'], format: 'date-time', description: 'When it became (or becomes) claimable; null for a dead letter.' },
          completedAt: { type: ['string', 'null'], format: 'date-time', description: 'When its ack moved it to history; null unless completed.' },
          lastError: { type: ['string', 'null'], description: 'The dead-letter reason; null where none is known (a retried delivery\'s error is not stored).' },
          priority: { type: 'integer', minimum: -32768, maximum: 32767, description: 'Higher is claimed first; absent for a job completed before history kept it (schema version 19 / PostgreSQL 17).' },
          orderingKey: { type: 'string', description: 'The ordering key it was published with, if any (kept in history from schema version 19 / PostgreSQL 17).' },
        }),
        CorrelationId: {
          type: 'string',
          minLength: 1,
          maxLength: 400,
          description: 'Case-sensitive; no leading/trailing whitespace, no control characters, well-formed UTF-16.',
        },
        ScheduleRequest: {
          type: 'object',
          required: ['cron'],
          additionalProperties: false,
          description: 'Exactly one of queue and topic.',
          properties: {
            queue: { type: 'string', maxLength: 200 },
            topic: { type: 'string', maxLength: 200 },
            cron: { type: 'string', description: 'NCRONTAB: six fields (second minute hour day month day-of-week, as the Functions timer) or five (seconds 0).' },
            timeZone: { type: 'string', default: 'UTC', description: 'IANA time zone; DST is handled (a skipped or repeated wall-clock slot runs once).' },
            payload: { description: 'Any JSON value (default null), stored and sent byte for byte.' },
            correlationId: { $ref: '#/components/schemas/CorrelationId' },
            headers: { $ref: '#/components/schemas/PublishRequest/properties/headers' },
            paused: { type: 'boolean', default: false },
            misfire: {
              description: '"skip" (default): slots missed by more than a minute do not run; {"catchUp": n}: the newest n of them run late.',
              oneOf: [{ const: 'skip' }, exact(['catchUp'], { catchUp: { type: 'integer', minimum: 1, maximum: 1000 } })],
            },
          },
        },
        Schedule: exact(['name', 'cron', 'timeZone', 'payload', 'headers', 'paused', 'misfire', 'lastRun', 'nextRun', 'createdAt', 'updatedAt'], {
          name: { type: 'string' },
          queue: { type: 'string' },
          topic: { type: 'string' },
          cron: { type: 'string' },
          timeZone: { type: 'string' },
          payload: { description: 'The payload as it was given.' },
          headers: { type: 'object', additionalProperties: { type: 'string' } },
          correlationId: { type: 'string' },
          paused: { type: 'boolean' },
          misfire: { oneOf: [{ const: 'skip' }, exact(['catchUp'], { catchUp: { type: 'integer', minimum: 1 } })] },
          lastRun: { type: ['string', 'null'], format: 'date-time', description: 'The newest slot fired; null before the first.' },
          nextRun: { type: ['string', 'null'], format: 'date-time', description: 'The slot it fires next (while paused: where it would).' },
          createdAt: { type: 'string', format: 'date-time' },
          updatedAt: { type: 'string', format: 'date-time' },
        }),
        PublishRequest: {
          type: 'object',
          required: ['payload'],
          additionalProperties: false,
          properties: {
            payload: { description: 'Any JSON value (null allowed).' },
            id: { type: 'string', format: 'uuid', description: 'Idempotency key.' },
            correlationId: { $ref: '#/components/schemas/CorrelationId' },
            headers: {
              type: 'object',
              maxProperties: 64,
              propertyNames: { minLength: 1, maxLength: 256, not: { pattern: '^[Aa][Rr]-' } },
              additionalProperties: { type: 'string' },
              description: 'At most 16 KiB as JSON; no control characters (tab allowed in values); AR-* names are reserved.',
            },
            delaySeconds: { type: 'number', minimum: 0, maximum: 315360000 },
            priority: {
              type: 'integer',
              minimum: -32768,
              maximum: 32767,
              default: 0,
              description: 'Higher is claimed first, then availability order (due time, then publish order); kept through retries, reschedules, dead letters and requeues. A steady stream of higher-priority jobs can starve lower ones.',
            },
            dedupKey: {
              type: 'string',
              minLength: 1,
              maxLength: 200,
              description:
                'Held on this queue for dedupWindowSeconds (required with it): another publish with the key meanwhile enqueues nothing and answers the holder\'s job (duplicate: true). The key is held for the whole window, whether the job has run or not.',
            },
            dedupWindowSeconds: { type: 'number', exclusiveMinimum: 0, maximum: 2592000 },
            dedupMode: {
              enum: ['drop', 'debounce'],
              description: 'drop (default); debounce: while the holder\'s job waits (not claimed), it takes this payload and headers and is due after this delaySeconds (debounced: true); once it was claimed, a new job takes the key.',
            },
            orderingKey: {
              type: 'string',
              minLength: 1,
              maxLength: 200,
              description:
                'Jobs of this queue with the same key run one at a time, in publish order, across instances and retries: a failing job holds its key until it succeeds or is dead-lettered (then the next one runs). Compared exactly; no control characters. Queue publishes only.',
            },
            expiresAt: { type: 'string', format: 'date-time', description: 'A job not started by then is not run: dead-lettered with reason `expired`, or dropped where the queue drops dead letters. Must fall after the job is due.' },
            ttlSeconds: { type: 'number', exclusiveMinimum: 0, maximum: 315360000, description: 'expiresAt as seconds from the publish; not both.' },
          },
        },
        Published: exact(['id', 'queue', 'availableAt'], {
          id: { type: 'string', format: 'uuid' },
          queue: { type: 'string', description: 'The queue the job is on (for a duplicate id, the queue its job really is on).' },
          availableAt: { type: ['string', 'null'], format: 'date-time' },
          duplicate: { const: true, description: 'Present when the id already existed, or the dedup key was held (the id is then the holder\'s): nothing new was enqueued.' },
          debounced: { const: true, description: 'Present when the dedup key\'s waiting job took this publish\'s payload, headers and due time.' },
        }),
        PublishedBatch: exact(['items'], { items: { type: 'array', minItems: 1, maxItems: 100, items: { $ref: '#/components/schemas/Published' } } }),
        TopicPublished: exact(['id', 'topic', 'subscriptions'], {
          id: { type: 'string', format: 'uuid', description: "The message id; each copy's id is topicCopyId(id, '{topic}:{subscription}')." },
          topic: { type: 'string' },
          subscriptions: { type: 'integer', minimum: 0, description: 'Subscriptions that got a copy or already had it; 0 = none, the message was dropped.' },
          duplicate: { const: true, description: 'Present when every subscription already had its copy: nothing new was enqueued.' },
        }),
        TopicPublishedBatch: exact(['items'], { items: { type: 'array', minItems: 1, maxItems: 100, items: { $ref: '#/components/schemas/TopicPublished' } } }),
        SubscriptionStats: exact(['subscription', 'queue', 'configured', 'ready', 'delayed', 'leased', 'deadLettered', 'oldestReadyAgeSeconds'], {
          subscription: { type: 'string' },
          queue: { type: 'string', description: '{topic}:{subscription}, an ordinary queue.' },
          configured: { type: 'boolean', description: 'false: recorded in the subscriptions table but not in this instance\'s settings.' },
          ready: { type: 'integer', minimum: 0 },
          delayed: { type: 'integer', minimum: 0 },
          leased: { type: 'integer', minimum: 0 },
          deadLettered: { type: 'integer', minimum: 0 },
          oldestReadyAgeSeconds: { type: ['number', 'null'], minimum: 0 },
        }),
        QueueStats: exact(['queue', 'ready', 'delayed', 'leased', 'deadLettered', 'oldestReadyAgeSeconds', 'paused', 'backoffUntil', 'concurrencyLimit', 'rateLimitPerSecond'], {
          queue: { type: 'string' },
          ready: { type: 'integer', minimum: 0 },
          delayed: { type: 'integer', minimum: 0 },
          leased: { type: 'integer', minimum: 0 },
          deadLettered: { type: 'integer', minimum: 0 },
          oldestReadyAgeSeconds: { type: ['number', 'null'], minimum: 0 },
          paused: { type: 'boolean', description: 'Claims from the queue are paused on every instance (POST …/resume).' },
          backoffUntil: { type: ['string', 'null'], format: 'date-time', description: "A forward target's Retry-After holds the queue's claims until then; null = no backoff now." },
          concurrencyLimit: { type: ['integer', 'null'], minimum: 1, description: 'jobs running at once across every instance; null = no limit' },
          rateLimitPerSecond: { type: ['number', 'null'], exclusiveMinimum: 0, description: 'starts per second across every instance; null = no limit' },
          routed: { const: false, description: 'Present on a queue that holds rows but has no route here (QUEUES does not name it): read-only, nothing drains it until QUEUES names it.' },
        }),
        QueueState: exact(['queue', 'paused', 'pausedAt'], {
          queue: { type: 'string' },
          paused: { type: 'boolean' },
          pausedAt: { type: ['string', 'null'], format: 'date-time', description: 'When the pause began (database clock); null when not paused.' },
        }),
        QueueDetail: exact(['queue', 'ready', 'delayed', 'leased', 'deadLettered', 'oldestReadyAgeSeconds', 'paused', 'pausedAt', 'backoffUntil', 'route', 'policy'], {
          queue: { type: 'string' },
          ready: { type: 'integer', minimum: 0 },
          delayed: { type: 'integer', minimum: 0 },
          leased: { type: 'integer', minimum: 0 },
          deadLettered: { type: 'integer', minimum: 0 },
          oldestReadyAgeSeconds: { type: ['number', 'null'], minimum: 0 },
          paused: { type: 'boolean', description: 'Claims from the queue are paused on every instance; publishes are still accepted.' },
          pausedAt: { type: ['string', 'null'], format: 'date-time' },
          backoffUntil: {
            type: ['string', 'null'],
            format: 'date-time',
            description: "A forward target answered 429/503 with Retry-After: every instance's claims of the queue wait until then (database clock); null = no backoff now.",
          },
          route: exact(['handler'], {
            handler: { type: 'string', enum: ['echo', 'forward', 'code', 'response-ingress', 'callbacks', 'flows', 'none'], description: "none: the queue holds rows but has no route here (QUEUES does not name it); nothing drains it" },
            forwardHost: { type: 'string', description: 'host[:port] of the forward URL (never its path, query or credentials); forward only' },
            forwardTimeoutSeconds: { type: 'number' },
          }),
          policy: nullable(exact(['maxDeliveryAttempts', 'redeliveryDelaySeconds', 'redeliveryMaxDelaySeconds', 'lockTimeoutSeconds', 'batchSize', 'prefetch', 'concurrency', 'deadLetter', 'concurrencyLimit', 'rateLimitPerSecond', 'rateLimitBurst'], {
            maxDeliveryAttempts: { type: 'integer', minimum: 0, description: '0 = unlimited' },
            redeliveryDelaySeconds: { type: 'number', minimum: 0 },
            redeliveryMaxDelaySeconds: { type: 'number', minimum: 0 },
            lockTimeoutSeconds: { type: 'number', minimum: 0 },
            batchSize: { type: 'integer', minimum: 1 },
            prefetch: { type: 'integer', minimum: 0, description: 'rows claimed ahead of free handler slots' },
            concurrency: { type: 'integer', minimum: 1, description: 'handlers running at once per drain (HANDLER_CONCURRENCY)' },
            deadLetter: { type: 'boolean', description: 'false: a job out of attempts is deleted instead of dead-lettered' },
            concurrencyLimit: { type: ['integer', 'null'], minimum: 1, description: 'jobs running at once across every instance (CONCURRENCY_LIMIT); null = no limit' },
            rateLimitPerSecond: { type: ['number', 'null'], exclusiveMinimum: 0, description: 'starts per second across every instance (RATE_LIMIT_PER_SECOND); null = no limit' },
            rateLimitBurst: { type: ['integer', 'null'], minimum: 1, description: 'token-bucket size of the rate limit (RATE_LIMIT_BURST); null without a rate limit' },
          })),
        }),
        DeadLetter: exact(['id', 'sourceQueue', 'reason', 'payload', 'headers', 'attempts', 'createdAt'], {
          id: { type: 'string', format: 'uuid' },
          sourceQueue: { type: 'string' },
          reason: { type: ['string', 'null'] },
          payload: { description: 'Any JSON value (the stored text when it is not JSON).' },
          headers: { type: 'object', additionalProperties: { type: 'string' } },
          attempts: { type: ['integer', 'null'], minimum: 1, description: 'Deliveries before it was dead-lettered; null when unknown (moved by an older version or another host).' },
          createdAt: { type: 'string', format: 'date-time' },
        }),
        FlowStatus: { enum: ['Running', 'Succeeded', 'Failed', 'Suspended'] },
        FlowRunId: { type: 'string', minLength: 1, maxLength: 400, description: 'No leading or trailing whitespace, none of / \\ ? #, no control characters; case matters.' },
        FlowRunSummary: exact(['id', 'flowName', 'status', 'createdAt', 'updatedAt'], {
          id: { $ref: '#/components/schemas/FlowRunId' },
          flowName: { type: 'string' },
          status: { $ref: '#/components/schemas/FlowStatus' },
          createdAt: { type: 'string', format: 'date-time' },
          updatedAt: { type: 'string', format: 'date-time' },
          lastMessage: { type: 'string' },
        }),
        FlowRun: exact(['id', 'flow', 'status', 'attempts', 'createdAt', 'updatedAt', 'steps'], {
          id: { $ref: '#/components/schemas/FlowRunId' },
          flow: { type: 'string' },
          status: { $ref: '#/components/schemas/FlowStatus' },
          result: { description: 'Succeeded: the flow\'s return value (any JSON).' },
          error: exact(['name', 'message'], { name: { type: 'string' }, message: { type: 'string' } }),
          lastMessage: { type: 'string' },
          attempts: { type: 'integer', minimum: 0, description: 'Executions so far.' },
          createdAt: { type: 'string', format: 'date-time' },
          updatedAt: { type: 'string', format: 'date-time' },
          parentId: { $ref: '#/components/schemas/FlowRunId' },
          steps: {
            type: 'array',
            items: exact(['name', 'state'], {
              name: { type: 'string' },
              state: { enum: ['completed', 'failed', 'sleeping', 'waiting-for-response', 'waiting-for-child', 'faulted', 'started'] },
              startedAt: { type: 'string', format: 'date-time' },
              completedAt: { type: 'string', format: 'date-time' },
              wakeAt: { type: 'string', format: 'date-time' },
              awaitDeadline: { type: 'string', format: 'date-time' },
              correlationId: { $ref: '#/components/schemas/CorrelationId' },
              childId: { $ref: '#/components/schemas/FlowRunId' },
              message: { type: 'string' },
              error: { type: 'string' },
            }),
          },
        }),
        WaitingJob: exact(['id', 'availableAt', 'createdAt', 'attempts', 'priority', 'headers', 'payload'], {
          id: { type: 'string', format: 'uuid' },
          priority: { type: 'integer', minimum: -32768, maximum: 32767, description: 'Higher is claimed first.' },
          availableAt: { type: 'string', format: 'date-time', description: 'When it is (or was) claimable, on the database clock.' },
          createdAt: { type: 'string', format: 'date-time' },
          attempts: { type: 'integer', minimum: 0, description: 'Deliveries so far (a released job keeps its count).' },
          correlationId: { type: 'string', description: 'The AR-Correlation-Id header, when the job carries one.' },
          orderingKey: { type: 'string', description: 'The ordering key, when it was published with one.' },
          headers: { type: 'object', additionalProperties: { type: 'string' } },
          payload: { description: 'Any JSON value (the stored text when it is not JSON).' },
        }),
        StoreKind: { enum: ['sqlserver', 'postgres', 'pglite'] },
        ResponseRequest: {
          type: 'object',
          required: ['correlationId'],
          anyOf: [{ required: ['payload'] }, { required: ['error'] }],
          additionalProperties: false,
          properties: {
            correlationId: { $ref: '#/components/schemas/CorrelationId' },
            payload: {},
            id: { type: 'string', format: 'uuid' },
            final: { type: 'boolean', default: true },
            error: { type: 'string', minLength: 1, maxLength: 4000 },
          },
        },
        Response: exact(['correlationId', 'id', 'payload', 'final', 'createdAt'], {
          correlationId: { $ref: '#/components/schemas/CorrelationId' },
          id: { type: 'string', format: 'uuid' },
          payload: { description: 'Any JSON value (null allowed).' },
          final: { type: 'boolean' },
          error: { type: 'string', description: 'Present when the work failed.' },
          createdAt: { type: 'string', format: 'date-time' },
        }),
        Problem: exact(['type', 'title', 'status', 'detail'], {
          type: { type: 'string' },
          title: { type: 'string' },
          status: { type: 'integer', minimum: 400, maximum: 599 },
          detail: { type: 'string' },
          errors: { type: 'array', minItems: 1, items: exact(['field', 'message'], { field: { type: 'string' }, message: { type: 'string' } }) },
        }),
      },
    },
  };
}
