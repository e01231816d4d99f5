// `GET /doctor`: what a serving process reports of itself to its operators. The route is for ops
// keys and hidden from the OpenAPI document, like /metrics and /readyz; the schema still bounds what
// is serialized, so nothing but these fields can leave. Secrets appear only as `set`.
import { Type } from 'typebox';
import { CHECK_STATUSES } from '../../services/doctor-checks.ts';

export const DoctorCheckSchema = Type.Object(
  {
    name: Type.String({ maxLength: 100 }),
    status: Type.Enum([...CHECK_STATUSES]),
    detail: Type.String({ maxLength: 2000 }),
  },
  { additionalProperties: false },
);

export const SettingSchema = Type.Object(
  {
    variable: Type.String({ maxLength: 100 }),
    secret: Type.Boolean(),
    set: Type.Boolean(),
    value: Type.Optional(Type.String({ maxLength: 4096 })),
  },
  { additionalProperties: false },
);

export const DoctorReportSchema = Type.Object(
  {
    pid: Type.Integer({ minimum: 1 }),
    store: Type.Enum(['pglite', 'postgres']),
    checks: Type.Array(DoctorCheckSchema, { maxItems: 50 }),
    configuration: Type.Array(SettingSchema, { maxItems: 200 }),
  },
  { additionalProperties: false },
);
