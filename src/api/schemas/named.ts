// Named schemas and references to them. A named schema carries an `$id`; `components.ts` registers it
// once with `app.addSchema`, @fastify/swagger emits it as `components.schemas.<$id>`, and clients get a
// type of that name (`Referral`, `Problem`, …). Routes and other named schemas point to it with
// `ref()`: the serializer resolves the same reference, so the documented shape is the one that is sent.
import { Type, type Static, type TSchema, type TUnsafe } from 'typebox';

export type Named<T extends TSchema = TSchema, Id extends string = string> = T & { readonly $id: Id };

/** Gives `schema` its component name. Names are PascalCase nouns of the domain (`ReferralSummary`). */
export function named<const Id extends string, T extends TSchema>(id: Id, schema: T): Named<T, Id> {
  return Object.assign(schema, { $id: id });
}

/**
 * A reference to a named schema, typed as the schema itself so that handlers stay type-checked.
 * The schema must be listed in `components.ts`; an unregistered one stops the app at start.
 */
export function ref<T extends TSchema>(schema: Named<T>): TUnsafe<Static<T>> {
  return Type.Unsafe<Static<T>>({ $ref: `${schema.$id}#` });
}
