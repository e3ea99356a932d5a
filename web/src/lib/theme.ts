// Light/dark: follows the system unless the user picked one (persisted;
// not a secret, so localStorage is fine).

export type Theme = 'system' | 'light' | 'dark';
const KEY = 'lcm-theme';

export function currentTheme(): Theme {
  const t = localStorage.getItem(KEY);
  return t === 'light' || t === 'dark' ? t : 'system';
}

export function applyTheme(t: Theme): void {
  if (t === 'system') {
    localStorage.removeItem(KEY);
    delete document.documentElement.dataset.theme;
  } else {
    localStorage.setItem(KEY, t);
    document.documentElement.dataset.theme = t;
  }
}

export function effectiveDark(): boolean {
  const t = currentTheme();
  return t === 'dark' || (t === 'system' && window.matchMedia('(prefers-color-scheme: dark)').matches);
}
