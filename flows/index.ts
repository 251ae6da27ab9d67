// The app's flows: one file per flow, one `register` line here (the name is stored in every run's ledger: rename
// a flow only by registering it under both names until its old runs ended). Started with POST /api/flows/{name}.
import { FlowRegistry } from '../shared';
import { exampleApproval } from './example-approval';

export const appFlows = new FlowRegistry();

appFlows.register('example-approval', exampleApproval);
