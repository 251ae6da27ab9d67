// Checks an HTTP answer against the app's own OpenAPI document (shared/http/openapi.ts) with Ajv's JSON Schema
// 2020-12 validator, the dialect OpenAPI 3.1 uses: the status must be documented for the operation, the media
// type must be one the document lists for it, the body must match that schema, and a status documented without
// content must come without a body. The e2e harness runs every answer through it, so the document cannot
// drift from the code.
import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { openApiDocument } from '../../shared/http/openapi';

export interface Answer {
  method: string;
  /** A path template of the document ("/queues/{queue}"), or undefined for a path no operation serves. */
  route: string | undefined;
  status: number;
  /** The Content-Type header as sent (parameters such as charset are ignored). */
  contentType: string | null;
  body: string;
}

interface MediaType {
  schema?: object;
}
interface ResponseObject {
  description?: string;
  content?: Record<string, MediaType>;
  $ref?: string;
}
interface Operation {
  responses: Record<string, ResponseObject>;
}
type Doc = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, object>; responses: Record<string, ResponseObject> } };

const COMPONENTS_ID = 'openapi-components';

/** '#/components/schemas/X' → 'openapi-components#/$defs/X', so each response schema compiles on its own. */
function rewriteRefs<T>(node: T): T {
  return JSON.parse(JSON.stringify(node), (key, value: unknown) =>
    key === '$ref' && typeof value === 'string' && value.startsWith('#/components/schemas/')
      ? `${COMPONENTS_ID}#/$defs/${value.slice('#/components/schemas/'.length)}`
      : value,
  ) as T;
}

const isJson = (mediaType: string): boolean => mediaType === 'application/json' || mediaType.endsWith('+json');

export class OpenApiAnswers {
  private readonly ajv: Ajv2020;
  private readonly compiled = new Map<object, ValidateFunction>();
  readonly doc: Doc;

  constructor(doc: Record<string, unknown> = openApiDocument()) {
    this.doc = doc as unknown as Doc;
    // strict: a keyword Ajv does not know (a typo such as "requried") fails instead of being ignored
    this.ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
    addFormats(this.ajv);
    this.ajv.addSchema({ $id: COMPONENTS_ID, $defs: rewriteRefs(this.doc.components.schemas) });
  }

  /** The document's path template a concrete path (after the /api prefix, query ignored) belongs to. */
  routeOf(path: string): string | undefined {
    const segments = path.split('?')[0]!.replace(/^\/+|\/+$/g, '').split('/');
    const candidates = Object.keys(this.doc.paths).filter((template) => {
      const parts = template.replace(/^\/+/, '').split('/');
      return parts.length === segments.length && parts.every((p, i) => /^\{[^}]+\}$/.test(p) ? segments[i] !== '' : p.toLowerCase() === segments[i]!.toLowerCase());
    });
    // the most literal template wins, as in the host's routing
    const literals = (t: string): number => t.split('/').filter((p) => p !== '' && !p.startsWith('{')).length;
    return candidates.sort((a, b) => literals(b) - literals(a))[0];
  }

  /** What is wrong with the answer; empty when it conforms. */
  problems(a: Answer): string[] {
    const operation = a.route === undefined ? undefined : this.doc.paths[a.route]?.[a.method.toLowerCase()];
    // No operation serves it: the host itself answers 404 problem+json (Azure's host does so too)
    if (operation === undefined) {
      if (a.status !== 404) return [`no documented operation serves it, so it must be a 404; got ${a.status}`];
      return this.checkResponse(this.resolve({ $ref: '#/components/responses/Problem' }), a);
    }
    const response = operation.responses[String(a.status)] ?? operation.responses[`${String(a.status)[0]}XX`] ?? operation.responses.default;
    if (response === undefined) {
      return [`status ${a.status} is not documented (documented: ${Object.keys(operation.responses).join(', ')})`];
    }
    return this.checkResponse(this.resolve(response), a);
  }

  /** Throws a readable error when the answer does not conform. */
  assertConforms(a: Answer): void {
    const found = this.problems(a);
    if (found.length === 0) return;
    const body = a.body.length > 600 ? `${a.body.slice(0, 600)}…` : a.body;
    throw new Error(
      `${a.method} ${a.route ?? '(no documented route)'} answered ${a.status} ${a.contentType ?? '(no content type)'}, ` +
        `which the OpenAPI document does not allow:\n  - ${found.join('\n  - ')}\nbody: ${body}`,
    );
  }

  private resolve(response: ResponseObject): ResponseObject {
    if (response.$ref === undefined) return response;
    const name = response.$ref.replace('#/components/responses/', '');
    const target = this.doc.components.responses[name];
    if (target === undefined) throw new Error(`unresolved $ref ${response.$ref}`);
    return { ...target, ...(response.description !== undefined ? { description: response.description } : {}) };
  }

  private checkResponse(response: ResponseObject, a: Answer): string[] {
    const content = response.content ?? {};
    if (Object.keys(content).length === 0) {
      return a.body === '' ? [] : [`status ${a.status} is documented without a body, but one came (${a.body.length} characters)`];
    }
    const mediaType = (a.contentType ?? '').split(';')[0]!.trim().toLowerCase();
    const media = content[mediaType];
    if (media === undefined) return [`media type '${mediaType}' is not documented for ${a.status} (documented: ${Object.keys(content).join(', ')})`];
    if (media.schema === undefined || a.method === 'HEAD') return []; // a HEAD answer never carries its body
    if (!isJson(mediaType)) return []; // e.g. text/html: the documented media type is what can be checked
    let value: unknown;
    try {
      value = JSON.parse(a.body);
    } catch (err) {
      return [`the body is not JSON: ${(err as Error).message}`];
    }
    const validate = this.validator(media.schema);
    return validate(value) ? [] : (validate.errors ?? []).map(describe);
  }

  private validator(schema: object): ValidateFunction {
    let v = this.compiled.get(schema);
    if (v === undefined) {
      v = this.ajv.compile(rewriteRefs(schema));
      this.compiled.set(schema, v);
    }
    return v;
  }
}

function describe(e: ErrorObject): string {
  const where = e.instancePath === '' ? 'the body' : e.instancePath;
  const extra = e.keyword === 'additionalProperties' ? ` ('${String((e.params as { additionalProperty: string }).additionalProperty)}')` : '';
  return `${where} ${e.message ?? e.keyword}${extra}`;
}

let shared: OpenApiAnswers | undefined;

/** One checker for the document as the app serves it by default. */
export function openApiAnswers(): OpenApiAnswers {
  shared ??= new OpenApiAnswers();
  return shared;
}

/**
 * Reads the answer from a clone (the caller still gets an unread Response) and checks it; throws on a mismatch.
 * A JSON body must also end with a newline (shared/http/problem.ts), so answers curl prints one after another
 * stay on lines of their own.
 */
export async function checkAnswer(method: string, apiPath: string, res: Response): Promise<void> {
  const checker = openApiAnswers();
  const body = method.toUpperCase() === 'HEAD' ? '' : await res.clone().text();
  checker.assertConforms({ method: method.toUpperCase(), route: checker.routeOf(apiPath), status: res.status, contentType: res.headers.get('content-type'), body });
  if (body !== '' && /json/i.test(res.headers.get('content-type') ?? '') && !body.endsWith('\n')) {
    throw new Error(`${method.toUpperCase()} ${apiPath} answered ${res.status} with JSON that does not end with a newline: ${body.slice(-80)}`);
  }
}
