// The app's in-code handlers: one file per handler, one `register` line per queue here. A configured queue
// (QUEUES=worker,orders) runs the handler registered under its name, unless its own QUEUE__<key>__HANDLER or
// QUEUE__<key>__FORWARD_URL says otherwise; a queue set to HANDLER=code without a registration is a start-up
// error; a registration no configured queue uses is ignored (the sample `orders` until QUEUES names it).
import { HandlerRegistry } from '../shared';
import { ordersHandler } from './orders';

export const codeHandlers = new HandlerRegistry();

codeHandlers.register('orders', ordersHandler);
