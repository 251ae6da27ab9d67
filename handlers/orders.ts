// An in-code handler (README: "Queues, routes and policies"). It runs the `orders` queue when the settings say
// QUEUES=worker,orders and QUEUE__orders__HANDLER=code. What it returns becomes the job's response when the job
// was published with a correlationId; what it throws is a failure (retried, then dead-lettered), and a
// PermanentJobError is dead-lettered at once.
import { PermanentJobError, type JobHandler } from '../shared';

interface OrderLine {
  sku: string;
  quantity: number;
  unitPrice: number;
}

export const ordersHandler: JobHandler = async (job, ctx) => {
  const order = job.payload as { orderId?: unknown; lines?: OrderLine[] } | null;
  if (typeof order?.orderId !== 'string' || !Array.isArray(order.lines)) {
    throw new PermanentJobError('not an order: expected { orderId, lines: [{ sku, quantity, unitPrice }] }');
  }
  const total = order.lines.reduce((sum, line) => sum + line.quantity * line.unitPrice, 0);
  ctx.log.info(`order ${order.orderId} (attempt ${job.attempt}): ${order.lines.length} lines, total ${total}`);
  return { orderId: order.orderId, total };
};
