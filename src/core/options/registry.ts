/**
 * Every option weir has, once: its flag, Flink key (and older keys), API field, type,
 * default, bounds and meaning. Flag parsing, the --config file, the job's settings,
 * every command's --help and docs/configuration.md are derived from this table
 * (npm run docs:config rewrites the docs). Adding an option is one entry here, plus the code
 * that uses its value.
 */
import { ALL_COMMANDS as ALL, type CommandName } from './commands.ts';
import { choice } from './choice.ts';
import { duration } from './duration-type.ts';
import { decimal, integer, positiveInteger } from './numbers.ts';
import { option, type Option } from './option.ts';
import { onOff, onOffValue, path, startSnapshot, text } from './text.ts';

const CONTROL: readonly CommandName[] = ['savepoint', 'stop', 'cancel'];

export const OPTIONS = {
  // ---- General (run)
  config: option({
    flag: 'config', type: path('FILE'), label: 'config file', commands: ['run'], section: 'General',
    description: 'a JSON file of Flink configuration keys (docs/configuration.md); flags override it',
  }),

  // ---- Execution
  parallelism: option({
    flag: 'parallelism', short: 'p', key: 'parallelism.default', field: 'parallelism', type: positiveInteger(), defaultText: 'number of workers',
    label: 'parallelism', description: 'default parallelism of operators; the job\'s env.setParallelism or an operator\'s own setParallelism wins', commands: ['run'], section: 'Execution',
  }),
  workers: option({
    flag: 'workers', short: 'w', field: 'workers', type: positiveInteger(), defaultText: 'number of cores',
    label: 'workers', description: 'worker threads; 1 runs the whole job in one thread', commands: ['run'], section: 'Execution',
  }),
  deadLetterDir: option({
    flag: 'dead-letter-dir', field: 'deadLetterDir', type: path(), defaultText: '<output dir>.dead-letters beside the job\'s file sink, else the log',
    label: 'dead-letter directory', commands: ['run'], section: 'Execution',
    description: 'where sources and sinks with malformed: \'dead-letter\' write each malformed record (source or sink, location, error, raw text), one file per subtask',
  }),
  maxChannels: option({
    flag: 'max-channels', field: 'maxChannels', type: positiveInteger(), default: 65536, label: 'max channels',
    description: 'most channels between subtasks a job may have (an all-to-all edge such as keyBy has p x p); a job needing more is refused at start',
    commands: ['run'], section: 'Execution',
  }),

  stateBackend: option({
    flag: 'state-backend', key: 'state.backend.type', deprecatedKeys: ['state.backend'], field: 'stateBackend',
    type: choice('NAME', [{ value: 'heap', flink: 'hashmap' }, { value: 'disk', flink: 'rocksdb' }] as const), default: 'heap',
    label: 'state backend', commands: ['run'], section: 'Execution',
    description: 'where keyed state lives: heap (JavaScript objects, snapshotted copy-on-write) or disk (an embedded LMDB store per subtask behind a write-back cache: state larger than memory); checkpoints of either restore into the other',
  }),
  stateDir: option({
    flag: 'state-dir', key: 'state.backend.disk.dir', deprecatedKeys: ['state.backend.rocksdb.localdir'], field: 'stateBackendOptions.disk.dir', type: path(), defaultText: 'the system temp directory',
    label: 'disk state directory', commands: ['run'], section: 'Execution',
    description: 'where the disk state backend makes each subtask\'s store (a directory of its own, removed when the subtask ends; those of a killed process are removed by the next one); local disk, not the checkpoint directory',
  }),
  stateCacheEntries: option({
    flag: 'state-cache-entries', key: 'state.backend.disk.cache-entries', field: 'stateBackendOptions.disk.cacheEntries', type: positiveInteger(), defaultText: '100000, fewer in a heap under 800 MB (heap limit / 8 KiB)',
    label: 'disk state cache entries', commands: ['run'], section: 'Execution',
    description: 'entries (over all states of a subtask) the disk state backend keeps in memory; changes are written to its store in batches of a quarter of it',
  }),
  stateSnapshotThread: option({
    flag: 'state-snapshot-thread', key: 'state.backend.disk.snapshot-thread', field: 'stateBackendOptions.disk.snapshotThread', type: onOffValue(), default: true,
    label: 'disk snapshot thread', commands: ['run'], section: 'Execution',
    description: 'a full checkpoint of the disk state backend reads and encodes its store on a thread of its own (one per worker thread), not on the task\'s: off reads it on the task\'s thread between batches',
  }),

  stateSnapshotKeyCache: option({
    key: 'state.backend.heap.snapshot-key-cache', field: 'stateBackendOptions.heap.snapshotKeyCache', type: onOffValue(), default: true,
    label: 'heap snapshot key cache', commands: ['run'], section: 'Execution',
    description: 'the heap state backend keeps each key group\'s encoded string keys between full snapshots and encodes only the keys added since (values every time): several times cheaper checkpoints of a large, stable key space, for about one byte per key character plus one per key (two per character for keys beyond Latin-1), outside the JavaScript heap',
  }),

  // ---- Checkpointing
  checkpointDir: option({
    flag: 'checkpoint-dir', key: 'execution.checkpointing.dir', deprecatedKeys: ['state.checkpoints.dir'], field: 'checkpoint.dir', type: path('DIR', ['s3']),
    label: 'checkpoint directory', description: 'where checkpoints go: DIR/<job-id>/chk-<n>/', commands: ['run'], section: 'Checkpointing',
  }),
  checkpointInterval: option({
    flag: 'checkpoint-interval', key: 'execution.checkpointing.interval', field: 'checkpoint.interval', type: duration({ minMs: 10 }), defaultText: 'off',
    label: 'checkpoint interval', description: 'checkpoint every D (e.g. 1s, 500ms); setting it turns checkpointing on', commands: ['run'], section: 'Checkpointing',
  }),
  checkpointMode: option({
    flag: 'checkpoint-mode', key: 'execution.checkpointing.mode', field: 'checkpoint.mode',
    type: choice('M', [{ value: 'exactly-once', flink: 'EXACTLY_ONCE' }, { value: 'at-least-once', flink: 'AT_LEAST_ONCE' }] as const),
    default: 'exactly-once', label: 'checkpoint mode', description: 'exactly-once aligns barriers; at-least-once does not wait for them', commands: ['run'], section: 'Checkpointing',
  }),
  checkpointTimeout: option({
    flag: 'checkpoint-timeout', key: 'execution.checkpointing.timeout', field: 'checkpoint.timeout', type: duration({ minMs: 10 }), default: '10 min',
    label: 'checkpoint timeout', description: 'a checkpoint not complete after D fails as expired', commands: ['run'], section: 'Checkpointing',
  }),
  checkpointMinPause: option({
    flag: 'checkpoint-min-pause', key: 'execution.checkpointing.min-pause', field: 'checkpoint.minPause', type: duration(), default: 0,
    label: 'checkpoint min pause', description: 'least time from one checkpoint\'s end to the next one\'s start', commands: ['run'], section: 'Checkpointing',
  }),
  checkpointMaxConcurrent: option({
    flag: 'checkpoint-max-concurrent', key: 'execution.checkpointing.max-concurrent-checkpoints', field: 'checkpoint.maxConcurrent', type: integer({ min: 1 }), default: 1,
    label: 'max concurrent checkpoints', description: 'checkpoints in flight at once', commands: ['run'], section: 'Checkpointing',
  }),
  checkpointTolerableFailures: option({
    flag: 'checkpoint-tolerable-failures', key: 'execution.checkpointing.tolerable-failed-checkpoints', field: 'checkpoint.tolerableFailures', type: integer({ min: 0 }), default: 0,
    label: 'tolerable failed checkpoints', description: 'consecutive failed checkpoints tolerated before the job fails over', commands: ['run'], section: 'Checkpointing',
  }),
  checkpointRetention: option({
    flag: 'checkpoint-retention', key: 'execution.checkpointing.externalized-checkpoint-retention', field: 'checkpoint.retention',
    type: choice('R', [
      { value: 'none', flink: 'NO_EXTERNALIZED_CHECKPOINTS' },
      { value: 'delete-on-cancel', flink: 'DELETE_ON_CANCELLATION' },
      { value: 'retain-on-cancel', flink: 'RETAIN_ON_CANCELLATION' },
    ] as const),
    default: 'retain-on-cancel', label: 'checkpoint retention', commands: ['run'], section: 'Checkpointing',
    description: 'completed checkpoints kept when the job ends: none (deleted), delete-on-cancel (kept if it fails), retain-on-cancel (kept if it fails or is cancelled, e.g. by Ctrl-C; Flink\'s default is none); a finished job deletes them',
  }),
  checkpointsRetained: option({
    flag: 'checkpoints-retained', key: 'execution.checkpointing.num-retained', deprecatedKeys: ['state.checkpoints.num-retained'], field: 'checkpoint.numRetained',
    type: integer({ min: 1 }), default: 1, label: 'number of retained checkpoints', description: 'completed checkpoints kept', commands: ['run'], section: 'Checkpointing',
  }),
  unalignedCheckpoints: option({
    flag: 'unaligned-checkpoints', key: 'execution.checkpointing.unaligned.enabled', deprecatedKeys: ['execution.checkpointing.unaligned'], field: 'checkpoint.unaligned',
    type: onOffValue(), default: false, label: 'unaligned checkpoints', commands: ['run'], section: 'Checkpointing',
    description: 'barriers overtake in-flight data, which is stored with the checkpoint as channel state and replayed on restore: checkpoints stay short under backpressure (exactly-once only)',
  }),
  alignedCheckpointTimeout: option({
    flag: 'aligned-checkpoint-timeout', key: 'execution.checkpointing.aligned-checkpoint-timeout', deprecatedKeys: ['execution.checkpointing.alignment-timeout'], field: 'checkpoint.alignedCheckpointTimeout',
    type: duration(), default: 0, label: 'aligned checkpoint timeout', commands: ['run'], section: 'Checkpointing',
    description: 'with unaligned checkpoints: a checkpoint starts aligned and switches to unaligned at a subtask once D has passed since it was triggered; 0 is unaligned from the start',
  }),
  memoryThreshold: option({
    key: 'state.storage.fs.memory-threshold', field: 'checkpoint.memoryThreshold', type: integer({ min: 0, max: 1024 * 1024 }), defaultText: '20480 (Flink\'s 20 KB) for s3:// checkpoint directories, 0 for local ones',
    label: 'state memory threshold', commands: ['run'], section: 'Checkpointing',
    description: 'bytes up to which a keyed state file goes inline into the checkpoint metadata instead of being written (fewer objects on S3); 0 writes every file',
  }),

  incrementalCheckpoints: option({
    flag: 'incremental-checkpoints', key: 'execution.checkpointing.incremental', deprecatedKeys: ['state.backend.incremental'], field: 'checkpoint.incremental', type: onOffValue(), default: false,
    label: 'incremental checkpoints', commands: ['run'], section: 'Checkpointing',
    description: 'checkpoints write only the keyed state changed since the last completed one (a chain of a full base and deltas in DIR/<job-id>/shared/, reference-counted); savepoints stay full',
  }),
  incrementalMaxDeltas: option({
    key: 'state.backend.incremental.max-deltas', field: 'checkpoint.incrementalMaxDeltas', type: integer({ min: 0, max: 1000 }), default: 20,
    label: 'incremental max deltas', commands: ['run'], section: 'Checkpointing',
    description: 'incremental checkpoints: deltas after a full base before the next checkpoint is a full base again (periodic materialization, bounding restore time)',
  }),
  incrementalMaxDeltaRatio: option({
    key: 'state.backend.incremental.max-delta-ratio', field: 'checkpoint.incrementalMaxDeltaRatio', type: decimal({ min: 0 }), default: 0.5,
    label: 'incremental max delta ratio', commands: ['run'], section: 'Checkpointing',
    description: 'incremental checkpoints: once a chain\'s deltas add up to more than this times its base\'s bytes, the next checkpoint is a full base again',
  }),

  // ---- Restart strategy
  restartStrategy: option({
    flag: 'restart-strategy', key: 'restart-strategy.type', deprecatedKeys: ['restart-strategy'], field: 'restart.type',
    type: choice('S', [
      { value: 'none', aliases: ['off', 'disable', 'no-restart'] },
      { value: 'fixed-delay', aliases: ['fixeddelay'] },
      { value: 'failure-rate', aliases: ['failurerate'] },
      { value: 'exponential-delay', aliases: ['exponentialdelay'] },
    ] as const),
    defaultText: 'none without checkpointing, exponential-delay with', label: 'restart strategy',
    description: 'what happens when a task fails; --restart-attempts or --restart-delay alone mean fixed-delay', commands: ['run'], section: 'Restart strategy',
  }),
  restartAttempts: option({
    flag: 'restart-attempts', key: 'restart-strategy.fixed-delay.attempts', field: 'restart.attempts', type: integer({ min: 0 }), default: 1,
    label: 'restart attempts', description: 'fixed-delay: restarts before the job fails', commands: ['run'], section: 'Restart strategy',
  }),
  restartDelay: option({
    flag: 'restart-delay', key: 'restart-strategy.fixed-delay.delay', field: 'restart.delay', type: duration(), default: '1 s',
    label: 'restart delay', description: 'fixed-delay and failure-rate: delay before a restart', commands: ['run'], section: 'Restart strategy',
  }),
  failureRateDelay: option({
    key: 'restart-strategy.failure-rate.delay', field: 'restart.failureRateDelay', type: duration(), default: '1 s',
    label: 'failure-rate restart delay', description: 'failure-rate: delay before a restart (--restart-delay when not set)', commands: ['run'], section: 'Restart strategy',
  }),
  failureRateMaxFailures: option({
    key: 'restart-strategy.failure-rate.max-failures-per-interval', field: 'restart.maxFailuresPerInterval', type: integer({ min: 1 }), default: 1,
    label: 'max failures per interval', description: 'failure-rate: failures within the interval before the job fails', commands: ['run'], section: 'Restart strategy',
  }),
  failureRateInterval: option({
    key: 'restart-strategy.failure-rate.failure-rate-interval', field: 'restart.failureRateInterval', type: duration(), default: '1 min',
    label: 'failure rate interval', description: 'failure-rate: the interval failures are counted in', commands: ['run'], section: 'Restart strategy',
  }),
  initialBackoff: option({
    key: 'restart-strategy.exponential-delay.initial-backoff', field: 'restart.initialBackoff', type: duration(), default: '1 s',
    label: 'initial backoff', description: 'exponential-delay: delay before the first restart', commands: ['run'], section: 'Restart strategy',
  }),
  maxBackoff: option({
    key: 'restart-strategy.exponential-delay.max-backoff', field: 'restart.maxBackoff', type: duration(), default: '1 min',
    label: 'max backoff', description: 'exponential-delay: the longest delay (at least the initial backoff)', commands: ['run'], section: 'Restart strategy',
  }),
  backoffMultiplier: option({
    key: 'restart-strategy.exponential-delay.backoff-multiplier', field: 'restart.backoffMultiplier', type: decimal({ min: 1 }), default: 1.5,
    label: 'backoff multiplier', description: 'exponential-delay: factor from one delay to the next', commands: ['run'], section: 'Restart strategy',
  }),
  resetBackoffThreshold: option({
    key: 'restart-strategy.exponential-delay.reset-backoff-threshold', field: 'restart.resetBackoffThreshold', type: duration(), default: '1 h',
    label: 'reset backoff threshold', description: 'exponential-delay: running this long after a restart without failing starts over at the initial backoff', commands: ['run'], section: 'Restart strategy',
  }),
  jitterFactor: option({
    key: 'restart-strategy.exponential-delay.jitter-factor', field: 'restart.jitterFactor', type: decimal({ min: 0, max: 1 }), default: 0.1,
    label: 'jitter factor', description: 'exponential-delay: each delay varies randomly by up to this fraction', commands: ['run'], section: 'Restart strategy',
  }),
  attemptsBeforeResetBackoff: option({
    key: 'restart-strategy.exponential-delay.attempts-before-reset-backoff', field: 'restart.attemptsBeforeResetBackoff', type: integer({ min: 1, unlimited: true }),
    default: Infinity, label: 'attempts before reset backoff', description: 'exponential-delay: restarts before the job fails, counted again once the delay starts over (the reset threshold without failures)', commands: ['run'], section: 'Restart strategy',
  }),

  // ---- Savepoints and restore
  savepointDir: option({
    flag: 'savepoint-dir', key: 'execution.checkpointing.savepoint-dir', deprecatedKeys: ['state.savepoints.dir'], field: 'checkpoint.savepointDir', type: path('DIR', ['s3']),
    label: 'savepoint directory', description: 'default target directory of savepoints, for weir savepoint and stop without --dir', commands: ['run'], section: 'Savepoints and restore',
  }),
  from: option({
    flag: 'from', field: 'from', type: startSnapshot(['s3']), label: 'start snapshot',
    description: 'start from a snapshot: latest (the newest checkpoint in the checkpoint dir), latest-or-empty (start fresh if there is none) or a checkpoint/savepoint path',
    commands: ['run'], section: 'Savepoints and restore',
  }),
  allowNonRestoredState: option({
    flag: 'allow-non-restored-state', field: 'allowNonRestoredState', type: onOff(),
    label: 'allow non-restored state', description: 'drop snapshot state of operators the job no longer has', commands: ['run'], section: 'Savepoints and restore',
  }),
  allowDuplicateOutput: option({
    flag: 'allow-duplicate-output', field: 'allowDuplicateOutput', type: onOff(), label: 'allow duplicate output',
    description: 'start although an exactly-once sink already committed output past the restored checkpoint (that output is written again); refused otherwise',
    commands: ['run'], section: 'Savepoints and restore',
  }),
  claimMode: option({
    flag: 'claim-mode', field: 'claimMode', type: choice('M', [{ value: 'no-claim' }, { value: 'claim' }] as const), default: 'no-claim', label: 'claim mode',
    description: 'no-claim never deletes the snapshot given with --from; claim lets weir delete it once a newer checkpoint exists', commands: ['run'], section: 'Savepoints and restore',
  }),

  // ---- Control API (weir run serves it)
  argsFile: option({
    flag: 'args-file', type: path('FILE'), label: 'job arguments file', commands: ['run'], section: 'General',
    description: 'the job\'s arguments from FILE, a JSON array of strings, instead of after --: arguments on the command line show in the process list to every user of the machine (a connection URL with its password); the lifecycle manager passes its deployments\' arguments so',
  }),
  restPort: option({
    flag: 'rest-port', field: 'rest.port', type: integer({ min: 0, max: 65535 }), metavar: 'P', default: 8081, label: 'REST port',
    description: 'control API port; 0 picks a free one, and a busy default port falls back to a free one', commands: ['run'], section: 'Control API',
  }),
  restAddress: option({
    flag: 'rest-address', field: 'rest.address', type: text('A'), default: '127.0.0.1', label: 'REST address',
    description: 'control API address; any other than loopback exposes the API to the network', commands: ['run'], section: 'Control API',
  }),
  restTokenFile: option({
    flag: 'rest-token-file', field: 'rest.tokenFile', type: path('FILE'), label: 'REST token file',
    description: 'a file (its user\'s own, mode 600) holding the secret token the control API requires for changes (Authorization: Bearer); without it weir run makes one up, kept in the job\'s registry entry for the CLI; the token is never logged',
    commands: ['run'], section: 'Control API',
  }),

  // ---- Metrics
  recordCounters: option({
    flag: 'record-counters', key: 'metrics.record-counters.enabled', field: 'recordCounters', type: onOffValue(), default: true,
    label: 'record counters', commands: ['run'], section: 'Metrics',
    description: 'count records per task and operator (numRecordsIn/Out and their rates, the status line\'s records/s); off takes the counting off the per-record path, and those metrics are then absent (other metrics stay)',
  }),

  // ---- Commands that read snapshots or talk to a running job
  json: option({
    flag: 'json', type: onOff(), label: 'json', description: 'print JSON instead of text', commands: ['checkpoints', 'state inspect', 'list'],
  }),
  operator: option({
    flag: 'operator', type: text('X'), label: 'operator', description: 'only this operator: its uid, name or id prefix', commands: ['state inspect'],
  }),
  state: option({
    flag: 'state', type: text('S'), label: 'state', description: 'only this keyed state of --operator', commands: ['state inspect'],
  }),
  key: option({
    flag: 'key', type: text('K'), label: 'key', description: 'print the value of this key in --state (exit 1 if it has none)', commands: ['state inspect'],
  }),
  targetRestPort: option({
    flag: 'rest-port', type: integer({ min: 1, max: 65535 }), metavar: 'P', label: 'REST port',
    description: 'reach the job at this control API port instead of finding it on this machine', commands: CONTROL,
  }),
  targetRestAddress: option({
    flag: 'rest-address', type: text('A'), default: '127.0.0.1', label: 'REST address', description: 'the address for --rest-port', commands: CONTROL,
  }),
  targetRestTokenFile: option({
    flag: 'rest-token-file', type: path('FILE'), label: 'REST token file', description: 'send the token in this file (a job of another user or WEIR_HOME; one found in this user\'s registry sends its own)', commands: CONTROL,
  }),
  cancelTimeout: option({
    flag: 'timeout', type: duration(), default: '2 min', label: 'timeout', description: 'how long cancel waits for the job to end before it says the job has not ended (exit 1)', commands: ['cancel'],
  }),
  savepointTarget: option({
    flag: 'dir', type: path('DIR', ['s3']), defaultText: 'the job\'s --savepoint-dir', label: 'savepoint directory', description: 'where the savepoint goes', commands: ['savepoint', 'stop'],
  }),
  savepointTimeout: option({
    flag: 'timeout', type: duration(), default: '10 min', label: 'timeout',
    description: 'stop waiting for the savepoint after D (it may still complete, and a stop still stop the job; see weir list)', commands: ['savepoint', 'stop'],
  }),
  withSavepoint: option({
    flag: 'savepoint', type: onOff(), label: 'savepoint', description: 'take a savepoint (required; weir cancel ends a job without one)', commands: ['stop'],
  }),
  drain: option({
    flag: 'drain', type: onOff(), label: 'drain', description: 'first advance event time to the end, so windows and timers fire', commands: ['stop'],
  }),

  // ---- Lifecycle manager (weir manager, weir apps)
  managerDir: option({
    flag: 'dir', type: path(), defaultText: '$WEIR_HOME/manager', label: 'manager directory',
    description: 'where the manager keeps applications, statuses, checkpoints, savepoints and job logs', commands: ['manager', 'apps'],
  }),
  managerPort: option({
    flag: 'port', type: integer({ min: 0, max: 65535 }), metavar: 'P', default: 8090, label: 'manager port', description: 'manager REST API port; 0 picks a free one', commands: ['manager'],
  }),
  managerAddress: option({
    flag: 'address', type: text('A'), default: '127.0.0.1', label: 'manager address', description: 'manager REST API address; any other than loopback exposes it, without authentication, to the network (a warning says so)', commands: ['manager'],
  }),
  managerInterval: option({
    flag: 'interval', type: duration({ minMs: 10, maxMs: 86_400_000 }), default: '500ms', label: 'reconcile interval', description: 'time between reconciliation passes', commands: ['manager'],
  }),
  managerUrl: option({
    flag: 'manager', type: text('URL'), label: 'manager URL', description: 'the manager\'s REST API (e.g. http://127.0.0.1:8090) instead of finding it through --dir', commands: ['apps'],
  }),
  appsSavepoint: option({
    flag: 'savepoint', type: onOff(), label: 'savepoint', description: 'delete: stop the job with a savepoint first (kept in the manager directory)', commands: ['apps'],
  }),
  appsJson: option({
    flag: 'json', type: onOff(), label: 'json', description: 'print JSON instead of text', commands: ['apps'],
  }),
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- entries keep their own value types
  // ---- Every command
  help: option({
    flag: 'help', short: 'h', type: onOff(), label: 'help', description: 'show this help', commands: ALL, section: 'General',
  }),
  verbose: option({
    flag: 'verbose', type: onOff(), label: 'verbose', description: 'print stack traces with errors', commands: ALL, section: 'General',
  }),
  logLevel: option({
    flag: 'log-level', type: choice('L', [{ value: 'debug' }, { value: 'info' }, { value: 'warn' }, { value: 'error' }] as const), default: 'info',
    label: 'log level', description: 'least severe log lines written to stderr', commands: ALL, section: 'General',
  }),
  logFormat: option({
    flag: 'log-format', type: choice('F', [{ value: 'text' }, { value: 'json' }] as const), default: 'text',
    label: 'log format', description: 'text (one line a message) or json (one object a line: time, level, msg, fields)', commands: ALL, section: 'General',
  }),

  // ---- Job manager: how long it waits and how often it tries before it gives up on a step
  deployTimeout: option({
    key: 'jobmanager.deploy.timeout', field: 'jobManager.deployTimeout', type: duration({ minMs: 1 }), default: '2 min',
    label: 'deploy timeout', description: 'longest the sources may take to plan their splits, and then a worker to load the job module and build its graph (each bounded by it); then the attempt fails', commands: ['run'], section: 'Job manager',
  }),
  restoreTimeout: option({
    key: 'jobmanager.restore.timeout', field: 'jobManager.restoreTimeout', type: duration({ minMs: 1 }), default: '10 min',
    label: 'restore timeout', description: 'longest a restoring attempt waits for every task to load its state; then the attempt fails', commands: ['run'], section: 'Job manager',
  }),
  finalCheckpointMaxAttempts: option({
    key: 'jobmanager.final-checkpoint.max-attempts', field: 'jobManager.finalCheckpointMaxAttempts', type: integer({ min: 1 }), default: 10,
    label: 'final checkpoint attempts', description: 'tries at the final checkpoint of a bounded job (it commits the last output) before the attempt fails', commands: ['run'], section: 'Job manager',
  }),
  drainSavepointMaxAttempts: option({
    key: 'jobmanager.stop.drain-savepoint.max-attempts', field: 'jobManager.drainSavepointMaxAttempts', type: integer({ min: 1 }), default: 4,
    label: 'drain savepoint attempts', description: 'tries at the savepoint of stop --drain before the job finishes without one', commands: ['run'], section: 'Job manager',
  }),
  drainTimeout: option({
    key: 'jobmanager.stop.drain.timeout', field: 'jobManager.drainTimeout', type: duration({ minMs: 1 }), default: '10 min',
    label: 'drain timeout', description: 'how long stop --drain waits for the job to drain; then the request fails', commands: ['run'], section: 'Job manager',
  }),
  maxCorruptFallbacks: option({
    key: 'jobmanager.max-corrupt-checkpoint-fallbacks', field: 'jobManager.maxCorruptFallbacks', type: integer({ min: 0 }), default: 10,
    label: 'corrupt checkpoint fallbacks', description: 'corrupt checkpoints skipped in a row (each falls back to the one before) before the job fails', commands: ['run'], section: 'Job manager',
  }),
  maxPendingRequests: option({
    key: 'jobmanager.max-pending-requests', field: 'jobManager.maxPendingRequests', type: integer({ min: 1 }), default: 100,
    label: 'pending requests', description: 'savepoint and checkpoint requests in progress at once; more are refused', commands: ['run'], section: 'Job manager',
  }),
  progressInterval: option({
    key: 'jobmanager.progress.interval', field: 'jobManager.progressInterval', type: duration({ minMs: 1 }), default: '1 s',
    label: 'progress interval', description: 'how often the status line (and RunOptions.onProgress) is updated', commands: ['run'], section: 'Job manager',
  }),

  // ---- Object storage (S3): checkpoints, savepoints and files at s3://bucket/prefix. The
  // endpoint, region and credentials are otherwise found as every AWS SDK client finds them
  // (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS_REGION, the credential chain).
  s3Endpoint: option({
    flag: 's3-endpoint', key: 's3.endpoint', field: 's3.endpoint', type: text('URL', 'an http(s) URL'), defaultText: 'the AWS SDK\'s (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, or AWS)',
    label: 'S3 endpoint', description: 'endpoint of an S3-compatible store (e.g. http://127.0.0.1:9000)', commands: ['run', 'checkpoints', 'state inspect'], section: 'Object storage (S3)',
  }),
  s3PathStyleAccess: option({
    flag: 's3-path-style', key: 's3.path.style.access', field: 's3.pathStyleAccess', type: onOff(), default: false,
    label: 'S3 path-style access', description: 'address buckets as ENDPOINT/bucket/key instead of bucket.ENDPOINT/key (most S3-compatible stores need it)', commands: ['run', 'checkpoints', 'state inspect'], section: 'Object storage (S3)',
  }),
  s3Region: option({
    key: 's3.region', field: 's3.region', type: text('R'), defaultText: 'the AWS SDK\'s (AWS_REGION, the profile; us-east-1 with a custom endpoint)',
    label: 'S3 region', description: 'region of the bucket', commands: ['run'], section: 'Object storage (S3)',
  }),
  s3RequestTimeout: option({
    key: 's3.request.timeout', field: 's3.requestTimeout', type: duration({ minMs: 1 }), default: '30 s',
    label: 'S3 request timeout', description: 'longest one S3 request may wait for the connection or for data; then it is retried', commands: ['run'], section: 'Object storage (S3)',
  }),
  s3RetryMaxAttempts: option({
    key: 's3.retry.max-attempts', field: 's3.retryMaxAttempts', type: integer({ min: 1, max: 100 }), default: 5,
    label: 'S3 request attempts', description: 'tries of one S3 request (throttling, 5xx and network errors are retried with backoff)', commands: ['run'], section: 'Object storage (S3)',
  }),
  s3UploadPartSize: option({
    key: 's3.upload.part-size', field: 's3.uploadPartSize', type: integer({ min: 5 * 1024 * 1024, max: 5 * 1024 * 1024 * 1024 }), default: 8 * 1024 * 1024,
    label: 'S3 upload part size', description: 'bytes of one multipart upload part; a state file up to this size is one PUT', commands: ['run'], section: 'Object storage (S3)',
  }),
} satisfies Record<string, Option<any>>;

export const ALL_OPTIONS: readonly Option[] = Object.values(OPTIONS) as Option[];
