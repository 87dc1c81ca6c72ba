export { Witness, type WitnessAnswer, type WitnessOptions, type WitnessRefusal } from './witness.js';
export { createWitnessServer } from './witness-server.js';
export { type WitnessedCheckpoint, WitnessStore } from './witness-store.js';
