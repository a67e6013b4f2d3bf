/**
 * The steps a new automation starts from: one log step that runs on any JSON payload (an object, a
 * list, a string, a number, null). CEL's `string()` takes no map or list (its standard overloads are
 * scalars), so the line says what came (an object or a list with its size, a string, another value).
 * test/unit/console-starter.test.ts dry-runs it over each kind of payload.
 */
export const STARTER_STEPS = [
  {
    id: 'hello',
    log: {
      message:
        "'received ' + (type(ctx.trigger) == map ? 'an object with ' + string(size(ctx.trigger)) + ' fields' : type(ctx.trigger) == list ? 'a list of ' + string(size(ctx.trigger)) : type(ctx.trigger) == string ? 'a string' : 'a value')",
    },
  },
];
