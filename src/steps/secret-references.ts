/**
 * Which callWebhook header values read named secrets (`secrets.<name>`). Such an expression is
 * never evaluated in the workflow: its source goes to the callWebhook activity, which resolves the
 * secrets from the store and evaluates it there, so no secret value enters the run's history.
 *
 * The workflow bundle cannot load the CEL parser, so the split is made with this small lexer: an
 * expression reads secrets when the identifier `secrets` appears outside string literals and
 * comments and not as a field (`x.secrets`). Validation on save checks the same sources with the
 * real parser (src/cel: only `secrets.<name>` and literals, at least one secret), so an expression
 * the lexer misjudges is refused on save, never split differently at run time.
 * Deterministic code only: the workflow bundle imports it.
 */

/** The variable of secret-bearing expressions. */
export const SECRETS_IDENTIFIER = 'secrets';

/** True when `source` names the identifier `secrets` (outside literals and comments, not as a field). */
export function readsSecrets(source: string): boolean {
  // The last two significant characters (a string literal counts as '"', a word as 'a', a number as '0').
  let previous = '';
  let beforePrevious = '';
  const note = (token: string): void => {
    beforePrevious = previous;
    previous = token;
  };
  let i = 0;
  const n = source.length;
  while (i < n) {
    const c = source[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v') {
      i++;
      continue;
    }
    if (c === '/' && source[i + 1] === '/') {
      while (i < n && source[i] !== '\n') i++;
      continue;
    }
    if (c === '"' || c === "'") {
      i = skipString(source, i, false);
      note('"');
      continue;
    }
    if (/[A-Za-z_]/.test(c)) {
      let j = i + 1;
      while (j < n && /[A-Za-z0-9_]/.test(source[j]!)) j++;
      const word = source.slice(i, j);
      const quote = source[j];
      if ((quote === '"' || quote === "'") && /^(?:[rR]|[bB]|[rR][bB]|[bB][rR])$/.test(word)) {
        i = skipString(source, j, /[rR]/.test(word));
        note('"');
        continue;
      }
      // `x.secrets` is a field; `secrets` and `.secrets` (a leading dot: the root name) are the variable.
      if (word === SECRETS_IDENTIFIER && (previous !== '.' || !/^[A-Za-z0-9_"')\]}]$/.test(beforePrevious)))
        return true;
      note('a');
      i = j;
      continue;
    }
    if (/[0-9]/.test(c)) {
      let j = i + 1;
      while (j < n && /[A-Za-z0-9_]/.test(source[j]!)) j++;
      note('0');
      i = j;
      continue;
    }
    note(c);
    i++;
  }
  return false;
}

/** Index just after the string literal whose opening quote is at `start`. */
function skipString(source: string, start: number, raw: boolean): number {
  const quote = source[start]!;
  const triple = source.startsWith(quote.repeat(3), start);
  const close = triple ? quote.repeat(3) : quote;
  let i = start + close.length;
  while (i < source.length) {
    if (!raw && source[i] === '\\') {
      i += 2;
      continue;
    }
    if (source.startsWith(close, i)) return i + close.length;
    if (!triple && source[i] === '\n') return i;
    i++;
  }
  return i;
}

/** Splits header expressions into those evaluated over ctx and those that read secrets (kept as source). */
export function splitSecretHeaders(headers: Record<string, string> | null | undefined): {
  plain: Record<string, string>;
  secret: Record<string, string>;
} {
  const plain: Record<string, string> = {};
  const secret: Record<string, string> = {};
  for (const [name, source] of Object.entries(headers ?? {})) {
    if (readsSecrets(source)) secret[name] = source;
    else plain[name] = source;
  }
  return { plain, secret };
}
