// Assertions on the parts every API response shares: the headers of contract §9–§11 and the
// problem+json document of contract §9.
import { expect } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';

export const API_VERSION = '0.0.71';

export interface ProblemJson {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  requestId: string;
  errors?: { path: string; message: string }[];
  [extra: string]: unknown;
}

/** API-Version, X-Request-Id and Cache-Control: no-store, on success and on error alike. */
export function expectApiHeaders(res: LightMyRequestResponse): void {
  expect(res.headers['api-version']).toBe(API_VERSION);
  expect(res.headers['x-request-id']).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
  expect(res.headers['cache-control']).toBe('no-store');
}

/** A problem+json response with this status and code; returns the document. */
export function expectProblem(res: LightMyRequestResponse, status: number, code: string): ProblemJson {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expectApiHeaders(res);
  const problem = res.json<ProblemJson>();
  expect(problem).toMatchObject({
    type: expect.any(String) as unknown,
    title: expect.any(String) as unknown,
    status,
    detail: expect.any(String) as unknown,
    code,
    requestId: res.headers['x-request-id'],
  });
  expect(problem.title).not.toBe('');
  expect(problem.detail).not.toBe('');
  return problem;
}

/** The `path`s of a problem's `errors[]`. */
export function errorPaths(problem: ProblemJson): string[] {
  return (problem.errors ?? []).map((e) => e.path);
}
