// The app's in-code handlers: one file per handler, one `register` line per queue here. A queue runs its
// registered handler when its setting QUEUE__<key>__HANDLER is `code`; a queue set to `code` without a
// registration is a start-up error, a registration no queue uses is ignored.
import { HandlerRegistry } from '../shared';
import { ordersHandler } from './orders';

export const codeHandlers = new HandlerRegistry();

codeHandlers.register('orders', ordersHandler);
