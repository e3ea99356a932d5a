// Transient messages, announced through an aria-live region.

export interface Toast {
  id: number;
  kind: 'info' | 'success' | 'error';
  text: string;
  href?: string;
  linkText?: string;
}

export const toasts: Toast[] = $state([]);
let seq = 0;

export function toast(text: string, kind: Toast['kind'] = 'info', link?: { href: string; text: string }): void {
  const id = ++seq;
  toasts.push({ id, kind, text, href: link?.href, linkText: link?.text });
  setTimeout(() => dismiss(id), kind === 'error' ? 10000 : 5000);
}

export function dismiss(id: number): void {
  const i = toasts.findIndex((t) => t.id === id);
  if (i >= 0) toasts.splice(i, 1);
}
