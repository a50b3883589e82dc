/**
 * Exits weir itself meant (a second Ctrl-C, a closed stdout pipe, a job failed outside its
 * tasks), told apart from a process.exit() in the job's own code, which `weir run` reports.
 */
let ours = false;

export function exitProcess(code: number): never {
  ours = true;
  process.exit(code);
}

export function exitIsOurs(): boolean {
  return ours;
}
