/** Help texts, generated from the command table and the registry. */
import { describe, expect, it, vi } from 'vitest';
import { checkpointsCommand } from '../../src/cli/checkpoints.ts';
import { cancelCommand, listCommand, savepointCommand, stopCommand } from '../../src/cli/control.ts';
import { commandHelp, globalHelp } from '../../src/cli/help.ts';
import { runCommand } from '../../src/cli/run.ts';
import { stateCommand } from '../../src/cli/state.ts';
import { ALL_COMMANDS, COMMANDS, type CommandName } from '../../src/core/options/commands.ts';
import { optionsOf } from '../../src/core/options/lookup.ts';
import { flagUsage } from '../../src/core/options/option.ts';
import { OPTIONS } from '../../src/core/options/registry.ts';

describe('help', () => {
  it('each command\'s help shows its usage and every one of its flags, no other command\'s', () => {
    for (const c of ALL_COMMANDS) {
      const help = commandHelp(c);
      expect(help.startsWith(`Usage: weir ${c} `), c).toBe(true);
      for (const o of optionsOf(c).filter((x) => x.flag !== undefined)) expect(help, `${c} ${o.flag}`).toContain(flagUsage(o));
    }
    expect(commandHelp('list')).not.toContain('--parallelism');
    expect(commandHelp('cancel')).not.toContain('--dir');
  });

  it('shows defaults and the values of a choice', () => {
    const run = commandHelp('run');
    expect(run).toMatch(/--checkpoint-timeout D +a checkpoint not complete after D fails as expired\s+\(default\s+10 min\)/);
    expect(run.replace(/\s+/g, ' ')).toContain('none | fixed-delay | failure-rate | exponential-delay');
    expect(commandHelp('savepoint')).toMatch(/--timeout D .*\(default\s+10 min\)/s);
  });

  it('lines fit in 100 columns', () => {
    for (const text of [globalHelp(), ...ALL_COMMANDS.map(commandHelp)]) {
      for (const line of text.split('\n')) expect(line.length, line).toBeLessThanOrEqual(100);
    }
  });

  it('weir --help lists every command and the options of run', () => {
    const help = globalHelp();
    for (const c of COMMANDS) expect(help).toContain(`  ${c.name} `);
    for (const o of optionsOf('run').filter((x) => x.flag !== undefined)) expect(help).toContain(flagUsage(o));
    expect(help).toContain(flagUsage(OPTIONS.parallelism));
    expect(help).toContain('docs/configuration.md');
  });
});

/** What a command prints on stdout, and its exit code. */
async function printed(command: () => Promise<number>): Promise<[number, string]> {
  const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
  try {
    const code = await command();
    return [code, write.mock.calls.map((c) => String(c[0])).join('')];
  } finally {
    write.mockRestore();
  }
}

describe('--help on every command', () => {
  it('prints the command\'s help and exits 0, whatever else is on the line', async () => {
    const runs: [CommandName, () => Promise<number>][] = [
      ['run', () => runCommand(['job.ts', '--bogus', '--help', '--', 'job-arg'])],
      ['checkpoints', () => checkpointsCommand(['-h'])],
      ['state inspect', () => stateCommand(['inspect', '--help'])],
      ['state inspect', () => stateCommand(['--help'])],
      ['list', () => listCommand(['--help'])],
      ['savepoint', () => savepointCommand(['--help'])],
      ['stop', () => stopCommand(['--help'])],
      ['cancel', () => cancelCommand(['--help'])],
    ];
    for (const [name, command] of runs) expect(await printed(command), name).toEqual([0, commandHelp(name)]);
  });

  it('after "--" it is the job\'s argument', async () => {
    await expect(runCommand(['--', '--help'])).rejects.toThrow('run: missing the job file');
  });
});
