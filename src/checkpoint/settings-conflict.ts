/**
 * Settings that must agree with each other (unaligned checkpoints and the checkpoint mode; an S3
 * endpoint without credentials in it), checked where settings arrive from outside the job's code
 * (weir run's flags and config file, a lifecycle spec's configuration), so that a conflict is
 * refused there, naming where it came from, instead of when the job starts. Flags, files and
 * specs win over the job's code field by field, so a conflict among them stands whatever the
 * job sets.
 */
import { applyCheckpointSettings, ConfigError, DEFAULT_CHECKPOINT_CONFIG, type CheckpointSettings } from './config.ts';
import { resolveS3Config, type S3Settings } from './s3/settings.ts';

/** The conflict's message, or undefined; `where` names the settings' origin. */
export function settingsConflict(s: { readonly checkpoint?: CheckpointSettings; readonly s3?: S3Settings }, where: string): string | undefined {
  try {
    applyCheckpointSettings(DEFAULT_CHECKPOINT_CONFIG, s.checkpoint ?? {}, where);
    if (s.s3 !== undefined) resolveS3Config(s.s3, `${where} (S3)`);
  } catch (e) {
    if (e instanceof ConfigError) return e.message;
    throw e;
  }
  return undefined;
}
