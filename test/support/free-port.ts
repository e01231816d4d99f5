// A free TCP port on the loopback interface, for servers a test starts itself and must restart on
// the same address (Redis, PostgreSQL, an API process that clients keep calling across a restart).
import net from 'node:net';

export const LOOPBACK = '127.0.0.1';

/** Binds port 0, reads the port the system chose, and releases it. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, LOOPBACK, () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => {
        resolve(port);
      });
    });
  });
}
