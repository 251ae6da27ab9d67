// The OpenAPI 3.1 description of the HTTP API, served at GET /api/openapi.json. A test checks it against the
// function table both ways (every route documented, every documented route registered), and the e2e suite
// checks every answer it receives against it (test/support/openapi-answers.ts): where an answer's shape is
// fixed, its schema lists the required properties and allows no others.

import { DASHBOARD_STATIC_OPERATIONS, dashboardPaths } from './openapi-dashboard';

const problem = { $ref: '#/components/responses/Problem' };
const json = (schema: object) => ({ 'application/json': { schema } });
const queueParam = { name: 'queue', in: 'path', required: true, schema: { type: 'string', maxLength: 200 } };
const topicParam = { name: 'topic', in: 'path', required: true, schema: { type: 'string', maxLength: 200 } };
const idParam = (name: string) => ({ name, in: 'path', required: true, schema: { type: 'string', format: 'uuid' } });
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
        op.responses['411'] ??= withDescription('No Content-Length: Azure Functions drops a chunked body.');
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
            { name: 'order', in: 'query', description: 'By availability time (then creation time).', schema: { enum: ['oldest', 'newest'], default: 'oldest' } },
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
        CorrelationId: {
          type: 'string',
          minLength: 1,
          maxLength: 400,
          description: 'Case-sensitive; no leading/trailing whitespace, no control characters, well-formed UTF-16.',
        },
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
          },
        },
        Published: exact(['id', 'queue', 'availableAt'], {
          id: { type: 'string', format: 'uuid' },
          queue: { type: 'string', description: 'The queue the job is on (for a duplicate id, the queue its job really is on).' },
          availableAt: { type: ['string', 'null'], format: 'date-time' },
          duplicate: { const: true, description: 'Present when the id already existed: nothing new was enqueued.' },
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
        QueueStats: exact(['queue', 'ready', 'delayed', 'leased', 'deadLettered', 'oldestReadyAgeSeconds'], {
          queue: { type: 'string' },
          ready: { type: 'integer', minimum: 0 },
          delayed: { type: 'integer', minimum: 0 },
          leased: { type: 'integer', minimum: 0 },
          deadLettered: { type: 'integer', minimum: 0 },
          oldestReadyAgeSeconds: { type: ['number', 'null'], minimum: 0 },
        }),
        QueueDetail: exact(['queue', 'ready', 'delayed', 'leased', 'deadLettered', 'oldestReadyAgeSeconds', 'route', 'policy'], {
          queue: { type: 'string' },
          ready: { type: 'integer', minimum: 0 },
          delayed: { type: 'integer', minimum: 0 },
          leased: { type: 'integer', minimum: 0 },
          deadLettered: { type: 'integer', minimum: 0 },
          oldestReadyAgeSeconds: { type: ['number', 'null'], minimum: 0 },
          route: exact(['handler'], {
            handler: { type: 'string', enum: ['echo', 'forward', 'code', 'response-ingress', 'callbacks'] },
            forwardHost: { type: 'string', description: 'host[:port] of the forward URL (never its path, query or credentials); forward only' },
            forwardTimeoutSeconds: { type: 'number' },
          }),
          policy: exact(['maxDeliveryAttempts', 'redeliveryDelaySeconds', 'redeliveryMaxDelaySeconds', 'lockTimeoutSeconds', 'batchSize', 'prefetch', 'concurrency', 'deadLetter'], {
            maxDeliveryAttempts: { type: 'integer', minimum: 0, description: '0 = unlimited' },
            redeliveryDelaySeconds: { type: 'number', minimum: 0 },
            redeliveryMaxDelaySeconds: { type: 'number', minimum: 0 },
            lockTimeoutSeconds: { type: 'number', minimum: 0 },
            batchSize: { type: 'integer', minimum: 1 },
            prefetch: { type: 'integer', minimum: 0, description: 'rows claimed ahead of free handler slots' },
            concurrency: { type: 'integer', minimum: 1, description: 'handlers running at once per drain (HANDLER_CONCURRENCY)' },
            deadLetter: { type: 'boolean', description: 'false: a job out of attempts is deleted instead of dead-lettered' },
          }),
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
        WaitingJob: exact(['id', 'availableAt', 'createdAt', 'attempts', 'headers', 'payload'], {
          id: { type: 'string', format: 'uuid' },
          availableAt: { type: 'string', format: 'date-time', description: 'When it is (or was) claimable, on the database clock.' },
          createdAt: { type: 'string', format: 'date-time' },
          attempts: { type: 'integer', minimum: 0, description: 'Deliveries so far (a released job keeps its count).' },
          correlationId: { type: 'string', description: 'The AR-Correlation-Id header, when the job carries one.' },
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
