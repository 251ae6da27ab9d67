// The OpenAPI 3.1 description of the HTTP API, served at GET /api/openapi.json. A test checks it against the
// function table both ways (every route documented, every documented route registered).

const problem = { $ref: '#/components/responses/Problem' };
const json = (schema: object) => ({ 'application/json': { schema } });
const queueParam = { name: 'queue', in: 'path', required: true, schema: { type: 'string', maxLength: 200 } };
const idParam = (name: string) => ({ name, in: 'path', required: true, schema: { type: 'string', format: 'uuid' } });
const correlationQuery = { name: 'correlationId', in: 'query', required: true, schema: { $ref: '#/components/schemas/CorrelationId' } };

export interface OpenApiOptions {
  /** MAX_WAIT_SECONDS: the cap of waitSeconds (larger values are capped, not refused). */
  maxWaitSeconds?: number;
}

/** Every keyed route can answer 401 (no or wrong function key); every route that reads the database, 503. */
const NO_DATABASE = new Set(['openApi']);

interface Operation {
  operationId: string;
  security?: unknown[];
  responses: Record<string, unknown>;
  [more: string]: unknown;
}

function withCommonAnswers(paths: Record<string, Record<string, Operation>>) {
  for (const operations of Object.values(paths)) {
    for (const op of Object.values(operations)) {
      if (op.security === undefined) op.responses['401'] ??= { description: 'No or wrong function key (x-functions-key header or ?code=).' };
      if (!NO_DATABASE.has(op.operationId)) op.responses['503'] ??= problem;
    }
  }
  return paths;
}

export function openApiDocument(serverUrl = '/api', options: OpenApiOptions = {}): Record<string, unknown> {
  const maxWait = options.maxWaitSeconds ?? 120;
  return {
    openapi: '3.1.0',
    info: {
      title: 'asyncresponse-functions',
      version: '1.0.0',
      description:
        'Durable worker queues and a correlated request/response channel on one Azure SQL database. ' +
        'Every route except /health needs a function key (x-functions-key header or ?code=).',
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
            '201': { description: 'Enqueued.', content: json({ oneOf: [{ $ref: '#/components/schemas/Published' }, { $ref: '#/components/schemas/PublishedBatch' }] }) },
            '200': { description: 'Every id already existed: nothing new was enqueued (duplicate: true).', content: json({ oneOf: [{ $ref: '#/components/schemas/Published' }, { $ref: '#/components/schemas/PublishedBatch' }] }) },
            '400': problem,
            '404': problem,
            '409': { ...problem, description: 'The id belongs to a job on another queue (ids are unique across queues); nothing was published.' },
            '413': problem,
            '415': problem,
            '503': problem,
          },
        },
      },
      '/queues/{queue}': {
        get: {
          operationId: 'getQueue',
          summary: "Depth by state, the age of the oldest ready job, and the queue's effective route and policy.",
          parameters: [queueParam],
          responses: { '200': { description: 'Statistics, route and policy.', content: json({ $ref: '#/components/schemas/QueueDetail' }) }, '404': problem, '503': problem },
        },
      },
      '/queues/{queue}/deadletters': {
        get: {
          operationId: 'listDeadLetters',
          summary: 'Dead letters from this queue, newest first.',
          parameters: [queueParam, { name: 'top', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 50 } }],
          responses: {
            '200': { description: 'Dead letters.', content: json({ type: 'object', properties: { items: { type: 'array', items: { $ref: '#/components/schemas/DeadLetter' } } } }) },
            '400': problem,
            '404': problem,
          },
        },
      },
      '/queues/{queue}/deadletters/{id}/requeue': {
        post: {
          operationId: 'requeueDeadLetter',
          summary: 'Put a dead letter back on its source queue with attempts reset.',
          parameters: [queueParam, idParam('id')],
          responses: { '200': { description: 'Requeued.', content: json({ type: 'object', properties: { id: { type: 'string', format: 'uuid' } } }) }, '404': problem },
        },
      },
      '/queues/{queue}/deadletters/{id}': {
        delete: {
          operationId: 'deleteDeadLetter',
          summary: 'Delete a dead letter.',
          parameters: [queueParam, idParam('id')],
          responses: { '204': { description: 'Deleted.' }, '404': problem },
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
              content: json({
                type: 'object',
                required: ['id', 'delivery'],
                properties: { id: { type: 'string', format: 'uuid' }, delivery: { enum: ['live', 'stored', 'recovery'] }, duplicate: { type: 'boolean' } },
              }),
            },
            '400': problem,
            '409': { ...problem, description: 'The id is stored under another correlation id; nothing was published.' },
            '503': problem,
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
            '201': { description: 'Registered.', content: json({ type: 'object', properties: { registrationId: { type: 'string', format: 'uuid' }, expiresAt: { type: 'string', format: 'date-time' } } }) },
            '400': problem,
            '503': problem,
          },
        },
      },
      '/waiters/{registrationId}': {
        delete: {
          operationId: 'deleteWaiter',
          summary: 'Remove a callback registration.',
          parameters: [idParam('registrationId'), correlationQuery],
          responses: { '204': { description: 'Deleted.' }, '400': problem, '404': problem },
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
              content: json({
                type: 'object',
                properties: {
                  status: { const: 'ok' },
                  store: { type: 'string' },
                  schema: { const: 'ready' },
                  databaseTime: { type: 'string', format: 'date-time' },
                  callbacks: { type: 'string', description: 'Present while callbacks are off (the signing secret is unresolved).' },
                },
              }),
            },
            '503': {
              description: 'The database is unreachable (unavailable) or the schema unusable (degraded); the error itself is in the log. Retry-After is set.',
              headers: { 'Retry-After': { schema: { type: 'integer' } } },
              content: json({ type: 'object', properties: { status: { enum: ['unavailable', 'degraded'] }, store: { type: 'string' }, schema: { type: 'string' }, detail: { type: 'string' } } }),
            },
          },
        },
      },
      '/openapi.json': {
        get: { operationId: 'openApi', summary: 'This document.', responses: { '200': { description: 'OpenAPI 3.1 JSON.' } } },
      },
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
        Published: {
          type: 'object',
          properties: { id: { type: 'string', format: 'uuid' }, queue: { type: 'string' }, availableAt: { type: ['string', 'null'], format: 'date-time' }, duplicate: { type: 'boolean' } },
        },
        PublishedBatch: { type: 'object', properties: { items: { type: 'array', items: { $ref: '#/components/schemas/Published' } } } },
        QueueStats: {
          type: 'object',
          properties: {
            queue: { type: 'string' },
            ready: { type: 'integer' },
            delayed: { type: 'integer' },
            leased: { type: 'integer' },
            deadLettered: { type: 'integer' },
            oldestReadyAgeSeconds: { type: ['number', 'null'] },
          },
        },
        QueueDetail: {
          allOf: [
            { $ref: '#/components/schemas/QueueStats' },
            {
              type: 'object',
              required: ['route', 'policy'],
              properties: {
                route: {
                  type: 'object',
                  required: ['handler'],
                  properties: {
                    handler: { type: 'string', enum: ['echo', 'forward', 'code', 'response-ingress', 'callbacks'] },
                    forwardHost: { type: 'string', description: 'host[:port] of the forward URL (never its path, query or credentials); forward only' },
                    forwardTimeoutSeconds: { type: 'number' },
                  },
                },
                policy: {
                  type: 'object',
                  required: ['maxDeliveryAttempts', 'redeliveryDelaySeconds', 'redeliveryMaxDelaySeconds', 'lockTimeoutSeconds', 'batchSize', 'handlerConcurrency', 'deadLetter'],
                  properties: {
                    maxDeliveryAttempts: { type: 'integer', description: '0 = unlimited' },
                    redeliveryDelaySeconds: { type: 'number' },
                    redeliveryMaxDelaySeconds: { type: 'number' },
                    lockTimeoutSeconds: { type: 'number' },
                    batchSize: { type: 'integer' },
                    handlerConcurrency: { type: 'integer' },
                    deadLetter: { type: 'boolean', description: 'false: a job out of attempts is deleted instead of dead-lettered' },
                  },
                },
              },
            },
          ],
        },
        DeadLetter: {
          type: 'object',
          properties: {
            id: { type: 'string', format: 'uuid' },
            sourceQueue: { type: 'string' },
            reason: { type: ['string', 'null'] },
            payload: {},
            headers: { type: 'object', additionalProperties: { type: 'string' } },
            createdAt: { type: 'string', format: 'date-time' },
          },
        },
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
        Response: {
          type: 'object',
          required: ['correlationId', 'id', 'payload', 'final', 'createdAt'],
          properties: {
            correlationId: { $ref: '#/components/schemas/CorrelationId' },
            id: { type: 'string', format: 'uuid' },
            payload: {},
            final: { type: 'boolean' },
            error: { type: 'string' },
            createdAt: { type: 'string', format: 'date-time' },
          },
        },
        Problem: {
          type: 'object',
          properties: {
            type: { type: 'string' },
            title: { type: 'string' },
            status: { type: 'integer' },
            detail: { type: 'string' },
            errors: { type: 'array', items: { type: 'object', properties: { field: { type: 'string' }, message: { type: 'string' } } } },
          },
        },
      },
    },
  };
}
