// Single-key keyboard shortcuts ("/" search, "g d" dashboard, …) can be
// turned off per browser (WCAG 2.1.4 Character Key Shortcuts): speech-input
// users and anyone who types into the page by accident are otherwise sent
// elsewhere. The choice is a preference of this browser, not of the account,
// so localStorage (not a secret) holds it; on by default.

const KEY = 'lcm-shortcuts';

export const shortcuts = $state({ enabled: readEnabled() });

function readEnabled(): boolean {
  try {
    return localStorage.getItem(KEY) !== 'off';
  } catch {
    return true;
  }
}

export function setShortcutsEnabled(on: boolean): void {
  shortcuts.enabled = on;
  if (on) localStorage.removeItem(KEY);
  else localStorage.setItem(KEY, 'off');
}

/** The shortcuts, for the profile page and the docs. */
export const shortcutList: [keys: string, what: string][] = [
  ['/', 'Focus the search field of the page'],
  ['g then d', 'Go to the dashboard'],
  ['g then s', 'Go to the servers'],
  ['g then j', 'Go to the jobs'],
  ['g then p', 'Go to your profile'],
];
