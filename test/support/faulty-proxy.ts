// A real HTTP proxy on 127.0.0.1 between a client and refhub that loses, delays or replaces answers on
// request, so that tests can show what the client does when the network fails it. Each request is
// judged by `decide` (with the number of requests so far): `forward` passes it on; `lose-answer`
// forwards it, lets refhub finish, then cuts the client's connection; `delay` forwards it and holds
// the answer; an `answer` is given by the proxy itself, without reaching refhub.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Fault =
  | { readonly kind: 'forward' }
  | { readonly kind: 'lose-answer' }
  | { readonly kind: 'delay'; readonly ms: number }
  | { readonly kind: 'answer'; readonly status: number; readonly headers?: Record<string, string> };

export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly index: number;
}

export interface FaultyProxy {
  readonly url: string;
  readonly seen: readonly SeenRequest[];
  close(): Promise<void>;
}

export async function startFaultyProxy(
  target: string,
  decide: (request: SeenRequest) => Fault,
): Promise<FaultyProxy> {
  const seen: SeenRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = {
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        headers: req.headers,
        index: seen.length,
      };
      seen.push(request);
      void handle(request, Buffer.concat(chunks), decide(request), res);
    });
  });

  async function handle(request: SeenRequest, body: Buffer, fault: Fault, res: http.ServerResponse) {
    if (fault.kind === 'answer') {
      res.writeHead(fault.status, { 'content-type': 'text/plain', ...fault.headers });
      res.end('answered by the proxy');
      return;
    }
    const headers = Object.entries(request.headers).flatMap(([name, value]) =>
      value === undefined || name === 'host' || name === 'connection' || name === 'content-length'
        ? []
        : [[name, Array.isArray(value) ? value.join(', ') : value] as [string, string]],
    );
    const upstream = await fetch(new URL(request.path, target), {
      method: request.method,
      headers,
      ...(body.length > 0 ? { body } : {}),
    });
    const answer = Buffer.from(await upstream.arrayBuffer());
    if (fault.kind === 'lose-answer') {
      res.socket?.destroy();
      return;
    }
    if (fault.kind === 'delay') await new Promise((resolve) => setTimeout(resolve, fault.ms));
    if (res.socket?.destroyed === true) return;
    const out: Record<string, string> = {};
    upstream.headers.forEach((value, name) => {
      if (name !== 'content-length' && name !== 'transfer-encoding' && name !== 'connection')
        out[name] = value;
    });
    res.writeHead(upstream.status, out);
    res.end(answer);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => {
          if (error) reject(error);
          else resolve();
        });
      }),
  };
}
