// The NOTIFY channel every PostgreSQL publish wakes drains on (statements.ts re-exports it).
export const TRANSPORT_NOTIFY_CHANNEL = 'asyncresponse_transport';
