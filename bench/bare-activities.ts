/** The three no-op activities of the baseline workflow (bench/workflows/bare.ts). */
export function createBareActivities() {
  return {
    async noopOne(_payload: unknown): Promise<Record<string, never>> {
      return {};
    },
    async noopTwo(_payload: unknown): Promise<Record<string, never>> {
      return {};
    },
    async noopThree(_payload: unknown): Promise<Record<string, never>> {
      return {};
    },
  };
}

export type BareActivities = ReturnType<typeof createBareActivities>;
