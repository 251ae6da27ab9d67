import { RawJson } from '../json/raw-json';
import type { JobHandler } from '../transport/job';

/**
 * The sample handler: logs the job and returns its payload as it was published (which becomes the response
 * when correlated).
 */
export const echoHandler: JobHandler = async (job, ctx) => {
  ctx.log.info(`echo: job ${job.id} on '${job.queue}' attempt ${job.attempt}: ${truncate(job.payloadJson, 500)}`);
  return new RawJson(job.payloadJson);
};

function truncate(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max)}… (${s.length} chars)`;
}
