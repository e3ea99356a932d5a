// Typed client for the update check (GET /system/update-info, POST
// /system/update-check; docs/updates.md) and the embedded operator docs
// (GET /docs, GET /docs/{slug}). Same conventions as api.ts.

import { request } from './api';

export interface FeedRelease { version: string; published_at: string; notes_url?: string; checksums?: Record<string, string> }
export interface UpdateCheckResult {
  checked_at: string; channel: string; current: string; latest: FeedRelease | null; update_available: boolean; error?: string;
}
export interface UpdateInfo {
  current: string; channel: string; feed_configured: boolean; daily_check: boolean; update_available: boolean; last: UpdateCheckResult | null;
}
// SelfUpdate: LCM installs no updates itself; how to install one
// (GET /system/self-update, docs/updates.md).
export interface SelfUpdate {
  supported: boolean; reason: string; installation: 'debian_package' | 'binary'; current: string; latest?: string;
  update_available: boolean; packages: string[]; instructions: string[]; docs: string;
}
export interface DocEntry { slug: string; title: string }
export interface DocPage { slug: string; title: string; markdown: string }

const V = '/api/v1';

export const system = {
  // quiet401: the notice is read in the background; an expired session is
  // reported by the page's own requests, not by the notice.
  updateInfo: () => request<UpdateInfo>('GET', `${V}/system/update-info`, undefined, { quiet401: true }),
  updateCheck: () => request<UpdateInfo>('POST', `${V}/system/update-check`),
  selfUpdate: () => request<SelfUpdate>('GET', `${V}/system/self-update`),
  docs: () => request<{ items: DocEntry[] }>('GET', `${V}/docs`),
  doc: (slug: string) => request<DocPage>('GET', `${V}/docs/${encodeURIComponent(slug)}`),
};
