// The dashboard's block of the OpenAPI document (shared/http/openapi.ts spreads it into `paths`): the page and its
// files (anonymous, no database) and the two read-only statistics routes the page reads.

const problem = { $ref: '#/components/responses/Problem' };
const json = (schema: object) => ({ 'application/json': { schema } });
const count = { type: 'integer', minimum: 0 };

/** Operations that never touch the database (no 503). */
export const DASHBOARD_STATIC_OPERATIONS = ['dashboard', 'dashboardAsset'];

export function dashboardPaths() {
  return {
    '/queues': {
      get: {
        operationId: 'listQueues',
        summary: 'Statistics of every configured queue: the worker queues, response, callbacks (and any queue the configuration adds).',
        responses: {
          '200': {
            description: 'One entry per queue, in configuration order.',
            content: json({ type: 'object', required: ['items'], additionalProperties: false, properties: { items: { type: 'array', items: { $ref: '#/components/schemas/QueueStats' } } } }),
          },
        },
      },
    },
    '/channel': {
      get: {
        operationId: 'getChannel',
        summary: "The response channel's counts: unexpired stored responses, live waiters, callback registrations, queued and dead-lettered callbacks.",
        responses: {
          '200': {
            description: 'Counts.',
            content: json({
              type: 'object',
              required: ['storedResponses', 'liveWaiters', 'registrations', 'callbacksQueued', 'callbacksDeadLettered'],
              additionalProperties: false,
              properties: {
                storedResponses: count,
                liveWaiters: count,
                registrations: count,
                callbacksQueued: { ...count, description: 'ready + delayed + leased on the internal callbacks queue' },
                callbacksDeadLettered: count,
              },
            }),
          },
        },
      },
    },
    '/dashboard': {
      get: {
        operationId: 'dashboard',
        summary: 'The operator dashboard (HTML). It holds no data; its calls to the API send the function key typed into it.',
        security: [],
        responses: { '200': { description: 'The page.', content: { 'text/html': { schema: { type: 'string' } } } }, '301': { description: 'From /dashboard/ to /dashboard.' } },
      },
    },
    '/dashboard/{file}': {
      get: {
        operationId: 'dashboardAsset',
        summary: "The dashboard's script and stylesheet.",
        security: [],
        parameters: [{ name: 'file', in: 'path', required: true, schema: { enum: ['app.js', 'app.css'] } }],
        responses: {
          '200': { description: 'The file.', content: { 'text/javascript': { schema: { type: 'string' } }, 'text/css': { schema: { type: 'string' } } } },
          '404': problem,
        },
      },
    },
  };
}
