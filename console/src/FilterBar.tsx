/**
 * The one filter control of the list pages (Runs, Deliveries, Audit, API clients): a labelled form
 * of fields described as data, whose values live in the query string (a filtered list is a link).
 * A choice (a select, a date and time) applies at once; typed text applies on "Filter" (or Enter),
 * so that the list is not asked again for every key. "Clear" empties every field a person can clear.
 */
import { useState, type FormEvent } from 'react';
import { navigate, useLocation } from './router';

export type FilterField =
  | {
      kind: 'select';
      name: string;
      label: string;
      options: ReadonlyArray<{ value: string; label: string }>;
      /** The option that filters nothing ("Any status"); without it a value is always chosen. */
      any?: string;
    }
  | { kind: 'datetime'; name: string; label: string }
  | { kind: 'text'; name: string; label: string; placeholder?: string };

export type FilterValues = Record<string, string>;

/** The filters' values from the query string (absent ones as ''), and a setter that rewrites it. */
export function useFilters<Name extends string>(
  page: string,
  names: readonly Name[],
): [Record<Name, string>, (next: FilterValues) => void] {
  const { search } = useLocation();
  const values = Object.fromEntries(names.map((name) => [name, search.get(name) ?? ''])) as Record<Name, string>;
  const set = (next: FilterValues) => {
    const query = new URLSearchParams(search);
    for (const name of names) {
      const value = next[name] ?? '';
      if (value) query.set(name, value);
      else query.delete(name);
    }
    navigate(`${page}${query.size ? `?${query}` : ''}`, { replace: true });
  };
  return [values, set];
}

/** Turns a list of strings into select options labelled by themselves. */
export function optionsOf(values: readonly (string | number)[]): Array<{ value: string; label: string }> {
  return values.map((value) => ({ value: String(value), label: String(value) }));
}

export function FilterBar({
  label,
  fields,
  values,
  onChange,
}: {
  /** The form's accessible name ("Filter runs"). */
  label: string;
  fields: readonly FilterField[];
  values: FilterValues;
  onChange: (next: FilterValues) => void;
}) {
  const texts = fields.filter((field) => field.kind === 'text');
  // Typed text is a draft until "Filter"; it follows the query string when that changes elsewhere.
  const applied = texts.map((field) => values[field.name] ?? '').join('\u0000');
  const [drafts, setDrafts] = useState<FilterValues>(() => pick(values, texts));
  const [seen, setSeen] = useState(applied);
  if (seen !== applied) {
    setSeen(applied);
    setDrafts(pick(values, texts));
  }

  const apply = (change: FilterValues) => onChange({ ...values, ...drafts, ...change });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    apply({});
  };
  const clearable = fields.filter((field) => field.kind !== 'select' || field.any !== undefined);
  const anySet = clearable.some((field) => (values[field.name] ?? '') !== '');
  const clear = () => onChange({ ...values, ...Object.fromEntries(clearable.map((field) => [field.name, ''])) });

  return (
    <form className="filters" aria-label={label} onSubmit={submit}>
      {fields.map((field) => (
        <label key={field.name}>
          {field.label}
          {field.kind === 'select' ? (
            <select value={values[field.name] ?? ''} onChange={(e) => apply({ [field.name]: e.target.value })}>
              {field.any !== undefined ? <option value="">{field.any}</option> : null}
              {field.options.map((option) => (
                <option key={option.value} value={option.value}>
                  {option.label}
                </option>
              ))}
            </select>
          ) : field.kind === 'datetime' ? (
            <input
              type="datetime-local"
              value={values[field.name] ?? ''}
              onChange={(e) => apply({ [field.name]: e.target.value })}
            />
          ) : (
            <input
              name={field.name}
              value={drafts[field.name] ?? ''}
              placeholder={field.placeholder}
              onChange={(e) => setDrafts((d) => ({ ...d, [field.name]: e.target.value }))}
            />
          )}
        </label>
      ))}
      {texts.length > 0 ? <button type="submit">Filter</button> : null}
      {anySet ? (
        <button type="button" onClick={clear}>
          Clear
        </button>
      ) : null}
    </form>
  );
}

function pick(values: FilterValues, fields: readonly FilterField[]): FilterValues {
  return Object.fromEntries(fields.map((field) => [field.name, values[field.name] ?? '']));
}
