/** `scorecard-1`: the model as first released; every score-log/1 record names it. Retired, kept to recompute its records. */
export const SCORECARD_1 = 'scorecard-1';
/** `scorecard-2`: scorecard-1 with Explain ranked and marked on rounded attributions, and Reasons. */
export const SCORECARD_2 = 'scorecard-2';

/** A released model version. The engine keeps every one, so any record can be recomputed with the version it names. */
export type ModelVersion = typeof SCORECARD_1 | typeof SCORECARD_2;

/** The current model (scoring-model.md). */
export const MODEL_VERSION: typeof SCORECARD_2 = SCORECARD_2;

/** Every released model version, oldest first. */
export const MODEL_VERSIONS: readonly ModelVersion[] = Object.freeze([SCORECARD_1, SCORECARD_2]);

/** Whether a string names a released model version. */
export function isModelVersion(version: string): version is ModelVersion {
  return (MODEL_VERSIONS as readonly string[]).includes(version);
}
