// The storage's public face: the features import from here. The types and `openStorage` live in
// open-storage.ts, so this module imports nothing that imports it back.
export type { Database } from './database.js';
export type { GroupCommitStats } from './group-committer.js';
export { leaseWrite } from './lease-write.js';
export { openStorage, type Storage, type StorageOptions } from './open-storage.js';
