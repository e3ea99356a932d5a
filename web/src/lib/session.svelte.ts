// Who is signed in. Filled from GET /auth/me at start and after sign-in;
// emptied on logout and on any 401 (with a notice).

import { api, setAuthHandlers } from './api';
import { navigate } from './router.svelte';
import type { User } from './types';

export const session = $state({
  user: null as User | null,
  checked: false,
  notice: '',
  /** Recovery codes left after a sign-in with one (null otherwise): the shell warns. */
  recoveryLeft: null as number | null,
});

export function can(permission: string): boolean {
  return !!session.user?.permissions?.includes(permission);
}

export function isAdmin(): boolean {
  return !!session.user?.roles?.includes('admin');
}

export function signedIn(u: User): void {
  session.user = u;
  session.notice = '';
}

export function expire(): void {
  if (!session.user) return;
  session.user = null;
  session.notice = 'Your session has expired. Please sign in again.';
  navigate('/login');
}

setAuthHandlers(
  () => expire(),
  () => {
    if (session.user) session.user = { ...session.user, must_setup_2fa: true };
  },
);

export async function loadSession(): Promise<void> {
  try {
    session.user = await api.me(true);
  } catch {
    session.user = null;
  } finally {
    session.checked = true;
  }
}

export async function logout(): Promise<void> {
  try {
    await api.logout();
  } catch {
    /* signed out either way */
  }
  session.user = null;
  session.recoveryLeft = null;
  session.notice = 'You have been signed out.';
  navigate('/login');
}
