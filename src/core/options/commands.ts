/** weir's commands: what options belong to, and what help and docs list. */

export interface CommandInfo {
  readonly name: string;
  /** Arguments after the command name, as help shows them. */
  readonly args: string;
  readonly summary: string;
  /** A line of help after the options. */
  readonly note?: string;
}

export const COMMANDS = [
  { name: 'run', args: '<job.ts|job.js> [options] [-- job args]', summary: 'run a job in this process (main thread plus worker threads)' },
  { name: 'checkpoints', args: '<checkpoint-dir> [options]', summary: 'checkpoint history of the jobs in a checkpoint directory, offline' },
  {
    name: 'state inspect', args: '<checkpoint-or-savepoint> [options]', summary: 'what a snapshot holds (operators, states, keys, sizes), or one key\'s value, offline',
  },
  { name: 'list', args: '[options]', summary: 'running jobs on this machine' },
  {
    name: 'savepoint', args: '<job-id> [options]', summary: 'take a savepoint of a running job and print its path',
    note: 'The job is found by id (or a unique prefix) among the jobs running on this machine, or at --rest-port.',
  },
  {
    name: 'stop', args: '<job-id> --savepoint [options]', summary: 'stop a running job with a savepoint and print its path',
    note: 'The job is found by id (or a unique prefix) among the jobs running on this machine, or at --rest-port.',
  },
  {
    name: 'cancel', args: '<job-id> [options]', summary: 'cancel a running job',
    note: 'The job is found by id (or a unique prefix) among the jobs running on this machine, or at --rest-port.',
  },
  { name: 'manager', args: '[options]', summary: 'run the lifecycle manager for the applications of weir apps' },
  {
    name: 'apps', args: '<apply <spec.yaml|json>|list|describe|suspend|resume|delete|savepoint|rollback|events> [app] [options]', summary: 'declare and control applications of the lifecycle manager',
    note: 'The manager is found through the file it writes in its directory (--dir), or at --manager.',
  },
] as const satisfies readonly CommandInfo[];

export type CommandName = (typeof COMMANDS)[number]['name'];

export const ALL_COMMANDS: readonly CommandName[] = COMMANDS.map((c) => c.name);

export function commandInfo(name: CommandName): CommandInfo {
  return COMMANDS.find((c) => c.name === name)!;
}
