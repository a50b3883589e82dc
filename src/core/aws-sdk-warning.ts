/**
 * The AWS SDK prints a NodeVersionSupportWarning once per process on Node below 22 (its
 * releases after January 2027 will need Node 22). weir pins SDK releases that run on Node 20
 * (docs/dependencies.md), so the warning names updates a weir user cannot take, and lands in
 * the middle of a job's output. Turned off before the first client is made, unless the user
 * set the variable, in which case theirs holds.
 */
const VARIABLE = 'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED';

export function quietAwsSdkNodeWarning(): void {
  process.env[VARIABLE] ??= 'true';
}
