// The settings readers: app settings (the environment) → AppConfig → the engine's options. Every setting is in
// catalog.ts; each area's reader is its own file here (store, queues, topics, per-queue, policy, routes, publish,
// timers, drain-requests, channel, schedules); load.ts puts them together. The engine's layers import nothing from here.

export { SETTINGS, type Setting } from './catalog';
export { engineOptions } from './engine-options';
export { ConfigError, type Env } from './env';
export { loadConfig, type AppConfig } from './load';
export type { HandlerSetting, LoadConfigOptions, RouteConfig } from './routes';
export { SCHEDULES_SETTING, staticSchedules } from './schedules';
export { noteSettingSource, settingSlips, type SettingSlip } from './slips';
