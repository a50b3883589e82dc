/** "Did you mean": the nearest known name to a mistyped one. */

/** Edit distance counting a swap of neighbours as one edit (intervall, inetrval). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/** A candidate compared by `name` that suggests `offer` (a flag's name can offer its config key). */
export interface Candidate {
  readonly name: string;
  readonly offer: string;
}

/**
 * The closest candidate within a third of the name's length (at least 1, at most 4 edits):
 * close enough to be a typo, not a guess. Ties go to the first candidate.
 */
export function suggest(name: string, candidates: readonly Candidate[]): string | undefined {
  const limit = Math.min(4, Math.max(1, Math.floor(name.length / 3)));
  let best: { offer: string; d: number } | undefined;
  for (const c of candidates) {
    const d = editDistance(name.toLowerCase(), c.name.toLowerCase());
    if (d <= limit && (best === undefined || d < best.d)) best = { offer: c.offer, d };
  }
  return best?.offer;
}
