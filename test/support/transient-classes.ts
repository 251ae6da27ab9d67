import type { TransientClass } from '../../shared/sql/transient';

/** The backoff class of each of the 24 curated SQL Server error numbers (the spec's table). */
export const SQLSERVER_CLASS_OF: Readonly<Record<number, TransientClass>> = {
  1205: 'lock',
  1222: 'lock',
  1204: 'throttling',
  10928: 'throttling',
  10929: 'throttling',
  40501: 'throttling',
  49918: 'throttling',
  49919: 'throttling',
  49920: 'throttling',
  4060: 'failover',
  4221: 'failover',
  40143: 'failover',
  40197: 'failover',
  40540: 'failover',
  40613: 'failover',
  [-2]: 'connection',
  20: 'connection',
  64: 'connection',
  121: 'connection',
  233: 'connection',
  997: 'connection',
  10053: 'connection',
  10054: 'connection',
  10060: 'connection',
};
