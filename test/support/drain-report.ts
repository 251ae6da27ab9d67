import { emptyDrainReport, type DrainReport } from '../../shared/transport/drain-loop';

/** A drain report with every count zero and stoppedBy 'idle' on queue 'worker', overridden by `over`. */
export const drainReport = (over: Partial<DrainReport> = {}): DrainReport => ({ ...emptyDrainReport('worker'), ...over });
