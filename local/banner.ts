import type { FunctionTable } from './functions-core';

/** The function list Core Tools prints at start-up. */
export function formatFunctionList(table: FunctionTable, baseUrl: string, prefix: string): string {
  const lines = ['Functions:', ''];
  const root = prefix === '' ? baseUrl : `${baseUrl}/${prefix}`;
  for (const fn of table.functions) {
    if (fn.kind === 'http') lines.push(`  ${fn.name}: [${fn.methods.join(',')}] ${root}/${fn.route}`);
    else if (fn.kind === 'timer') lines.push(`  ${fn.name}: timerTrigger (${fn.schedule}${fn.runOnStartup ? ', runOnStartup' : ''})`);
    else if (fn.kind === 'queue') lines.push(`  ${fn.name}: queueTrigger (${fn.queueName} on ${fn.connection})`);
    else lines.push(`  ${fn.name}: ${fn.triggerType} (not run by the local host)`);
  }
  return lines.join('\n');
}
