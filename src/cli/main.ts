import { Worker } from 'node:worker_threads';
const x: number = 3;
console.log('cli ok', x, process.argv.slice(2));
const w = new Worker(new URL('./w.mjs', import.meta.url));
w.on('message', (m) => { console.log('from worker', m); w.terminate(); });
w.on('error', (e) => console.error('werr', e));
