// The shipped example (README "Durable flows"): reserve an item, ask for an approval on a queue and wait durably
// for the answer (whoever answers the approval job: a forward receiver, a code handler, or anyone later with
// POST /api/responses and the job's correlation id), cool off, and return the item with the approval.
import { FlowFailedError, type FlowFunction } from '../shared';

export interface ExampleApprovalInput {
  item: string;
  /** The queue the approval request is published to. Default `approvals`. */
  approvalQueue?: string;
  /** A durable sleep after the approval (step `cool-off`). Default 0. */
  coolOffSeconds?: number;
}

export const exampleApproval: FlowFunction<ExampleApprovalInput, { item: string; approval: unknown }> = async (ctx, input) => {
  if (typeof input?.item !== 'string' || input.item.length === 0) throw new FlowFailedError('input.item must be a non-empty string');
  const queue = input.approvalQueue ?? 'approvals';
  const coolOffSeconds = input.coolOffSeconds ?? 0;
  if (typeof queue !== 'string') throw new FlowFailedError('input.approvalQueue must be a string');
  if (typeof coolOffSeconds !== 'number' || !(coolOffSeconds >= 0)) throw new FlowFailedError('input.coolOffSeconds must be a number >= 0');

  await ctx.step('reserve', () => ({ reserved: input.item }));
  // the request is published with the wait's correlation id, in the same statement as the step's checkpoint
  const approval = await ctx.awaitResponse('approve', { queue, payload: { flowId: ctx.flowId, item: input.item } });
  await ctx.sleep('cool-off', coolOffSeconds * 1000);
  return { item: input.item, approval };
};
