/** Types of dist-current.js (plain JavaScript: bin/weir.js loads it before tsx). */
export interface SourceStamp {
  readonly files: number;
  readonly newestMtimeMs: number;
}
export function sourceStamp(srcDir: string): SourceStamp;
export function distIsCurrent(srcDir: string, stampFile: string): boolean;
