// This project's engine with issue 17's features on (ordering keys, a traceparent per publish, a concurrency
// limit): the same adapter as asyncresponse.mjs, so one run compares the engine with them off and on.
import { createWith } from './asyncresponse.mjs';

export default function create() {
  return createWith(true);
}
