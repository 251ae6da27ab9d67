/** App settings as the process sees them (process.env, or a test's object). */
export type Env = Record<string, string | undefined>;
