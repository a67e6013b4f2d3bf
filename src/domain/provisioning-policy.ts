/**
 * A ProvisionPolicy as a list of the steps it takes (docs/api.md#grants): one step for a policy of
 * one member (step path `""`), and for `multiStep` each of its `provisionSteps` in written order,
 * nested ones flattened (`provisionSteps[1]`, `provisionSteps[1].provisionSteps[0]`). Each step is
 * one member with its settings. Pure: the grant's provisioning walks these paths.
 */
export type PolicyObject = Record<string, unknown>;

/** The member a policy sets (`unconfigured` for none). */
export function policyMember(policy: PolicyObject | null | undefined): string {
  if (!policy) return 'unconfigured';
  for (const [key, value] of Object.entries(policy)) if (value !== null && value !== undefined) return key;
  return 'unconfigured';
}

export interface PolicyStep {
  /** The step path: `""` for the policy itself. */
  step: string;
  member: string;
  /** The member's settings (`policy[member]`), `{}` when absent. */
  settings: PolicyObject;
}

function isObject(value: unknown): value is PolicyObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The steps of a policy, in the order they run. A multiStep without steps is one `unconfigured` step. */
export function policySteps(policy: PolicyObject | null | undefined, path = ''): PolicyStep[] {
  const member = policyMember(policy);
  const settings = isObject(policy?.[member]) ? (policy![member] as PolicyObject) : {};
  if (member !== 'multiStep') return [{ step: path, member, settings }];
  const steps = Array.isArray(settings.provisionSteps) ? settings.provisionSteps : [];
  const prefix = path === '' ? '' : `${path}.`;
  const flat = steps.flatMap((inner, i) =>
    policySteps(isObject(inner) ? inner : null, `${prefix}provisionSteps[${i}]`),
  );
  return flat.length > 0 ? flat : [{ step: path, member: 'unconfigured', settings: {} }];
}

/** The step of `policy` at `path`, if it has one. */
export function policyStepAt(policy: PolicyObject | null | undefined, path: string): PolicyStep | undefined {
  return policySteps(policy).find((s) => s.step === path);
}
