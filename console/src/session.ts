/** The signed-in person, from `GET /console/auth/me` (401: nobody is signed in). */
import { useQuery } from '@tanstack/react-query';
import { ApiError, consoleFetch, setCsrfToken } from './api/client';

export interface Person {
  id: string;
  name: string;
  email: string;
  roles: string[];
}

export interface Me {
  person: Person;
  csrfToken: string;
}

export function useSession() {
  return useQuery({
    queryKey: ['me'],
    queryFn: async (): Promise<Me | null> => {
      try {
        const me = await consoleFetch<Me>('/auth/me');
        setCsrfToken(me.csrfToken);
        return me;
      } catch (err) {
        if (err instanceof ApiError && err.status === 401) return null;
        throw err;
      }
    },
    staleTime: 60_000,
    refetchOnWindowFocus: true,
  });
}

export function hasRole(me: Me | null | undefined, ...roles: string[]): boolean {
  return !!me && me.person.roles.some((role) => roles.includes(role));
}
