// The early warning (docs/early-warning.md): early-warning findings,
// status, poll, mirror, settings and the lookup caches' statistics.

import { request } from './api';
import type { Severity } from './security';

export interface EarlyWarning {
  id: number;
  server_id: string;
  server_name: string;
  advisory: string;
  cves: string[];
  package: string;
  source?: string;
  installed: string;
  fixed: string;
  severity: Severity;
  cvss?: number;
  summary: string;
  ecosystem: string;
  advisory_modified: string;
  created_at: string;
  acknowledged_at?: string;
  acknowledged_by?: string;
}

export interface AdvisorySettings { enabled: boolean; base_url: string }

export interface AdvisoryRun { started_at: string; finished_at: string; error?: string; detail?: Record<string, unknown> }

export interface AdvisoryStatus {
  settings: AdvisorySettings;
  last_poll?: AdvisoryRun;
  last_mirror?: AdvisoryRun;
  ecosystems: { ecosystem: string; cursor: string; polled_at: string; records_read: number; error?: string }[];
  mirror: { ecosystem: string; bytes: number; modified_at: string }[];
  open: number;
  acknowledged: number;
  exploitation_signal: string;
  poll_running: boolean;
  mirror_running: boolean;
}

export interface PollSummary { started_at: string; finished_at: string; servers: number; findings_created: number; skipped?: string }

export interface CacheStats { name: string; description: string; known: boolean; hits: number; misses: number; entries?: number; hit_ratio: number }

const V = '/api/v1';

export const advisories = {
  list: (state = 'open') => request<{ items: EarlyWarning[]; total: number }>('GET', `${V}/security/advisories?state=${encodeURIComponent(state)}&limit=500`),
  status: () => request<AdvisoryStatus>('GET', `${V}/security/advisories/status`),
  caches: () => request<{ caches: CacheStats[] }>('GET', `${V}/security/caches`),
  poll: () => request<PollSummary>('POST', `${V}/security/advisories/poll`, {}),
  mirror: () => request<{ status: string }>('POST', `${V}/security/advisories/mirror`, {}),
  acknowledge: (id: number) => request<EarlyWarning>('POST', `${V}/security/advisories/${id}/acknowledge`, {}),
  settings: () => request<AdvisorySettings>('GET', `${V}/security/advisories/settings`),
  saveSettings: (s: Partial<AdvisorySettings>) => request<AdvisorySettings>('PUT', `${V}/security/advisories/settings`, s),
};
