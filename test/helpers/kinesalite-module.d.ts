declare module 'kinesalite' {
  import type { Server } from 'node:http';
  const kinesalite: (options?: { createStreamMs?: number; deleteStreamMs?: number; updateStreamMs?: number; shardLimit?: number; path?: string }) => Server;
  export default kinesalite;
}
