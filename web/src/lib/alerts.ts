// Client and types of the alerts area (issue 17, docs/alerts.md):
// notification channels, alert rules, the alert history and the system mail
// channel. Secrets are write-only: answers carry only *Set flags.
import { request } from './api';

export interface ChannelConfig {
  host?: string; port?: number; tls?: string; username?: string; from?: string; to?: string[];
  format?: string; caPem?: string; topic?: string;
}
export interface Channel {
  id: string; name: string; type: 'smtp' | 'webhook'; enabled: boolean; system: boolean; config: ChannelConfig;
  passwordSet: boolean; urlSet: boolean; urlMasked: string; tokenSet: boolean; signingSecretSet: boolean;
  createdAt: string; updatedAt: string; signingSecret?: string;
}
export type ChannelInput = Partial<Omit<ChannelConfig, never>> & {
  name?: string; type?: string; enabled?: boolean; password?: string; url?: string; token?: string; signingSecret?: string;
};
export interface TestResult { ok: boolean; answer: string; error?: string }
export interface RuleParams { percent?: number; days?: number; minSeverity?: string; failures?: number; hours?: number }
export interface Rule {
  id: string; name: string; type: string; enabled: boolean; severity: string; allServers: boolean; groupIds: string[];
  channelIds: string[]; params: RuleParams; cooldownMinutes: number; createdAt: string; updatedAt: string;
}
export type RuleInput = Partial<Omit<Rule, 'id' | 'createdAt' | 'updatedAt'>>;
export interface Delivery {
  channelId: string; channelName: string; status: 'pending' | 'sent' | 'retrying' | 'given_up'; attempts: number;
  lastError: string; response: string; nextAttemptAt: string | null; updatedAt: string;
}
export interface AlertEvent {
  id: string; ruleId: string; ruleName: string; ruleType: string; serverId: string; serverName: string;
  kind: 'firing' | 'repeat' | 'resolved'; severity: string; message: string; createdAt: string; deliveries: Delivery[];
}
export interface Evaluation { rules: number; servers: number; fired: number; repeated: number; resolved: number; open: number; notes: string[]; durationMs: number }

const V = '/api/v1';
const enc = encodeURIComponent;

export const alertsApi = {
  channels: () => request<{ channels: Channel[] }>('GET', `${V}/notification-channels`),
  createChannel: (b: ChannelInput) => request<Channel>('POST', `${V}/notification-channels`, b),
  updateChannel: (id: string, b: ChannelInput) => request<Channel>('PATCH', `${V}/notification-channels/${enc(id)}`, b),
  deleteChannel: (id: string) => request<void>('DELETE', `${V}/notification-channels/${enc(id)}`),
  testChannel: (id: string) => request<TestResult>('POST', `${V}/notification-channels/${enc(id)}/test`, {}),
  rules: () => request<{ rules: Rule[]; types: string[] }>('GET', `${V}/alert-rules`),
  createRule: (b: RuleInput) => request<Rule>('POST', `${V}/alert-rules`, b),
  updateRule: (id: string, b: RuleInput) => request<Rule>('PATCH', `${V}/alert-rules/${enc(id)}`, b),
  deleteRule: (id: string) => request<void>('DELETE', `${V}/alert-rules/${enc(id)}`),
  events: (f: Record<string, string>) => {
    const q = new URLSearchParams(Object.entries(f).filter(([, v]) => v !== '')).toString();
    return request<{ events: AlertEvent[] }>('GET', `${V}/alert-events${q ? `?${q}` : ''}`);
  },
  evaluate: () => request<Evaluation>('POST', `${V}/alerts/evaluate`, {}),
  mailChannel: () => request<{ configured: boolean; channel: Channel | null }>('GET', `${V}/settings/mail-channel`),
  saveMailChannel: (b: ChannelInput) => request<{ configured: boolean; channel: Channel }>('PUT', `${V}/settings/mail-channel`, b),
  testMail: (to: string) => request<TestResult>('POST', `${V}/settings/global/test-mail`, { to }),
};

export const ruleTypeLabels: Record<string, string> = {
  disk_capacity: 'Disk capacity',
  storage_forecast: 'Storage forecast',
  security_cve: 'Security/CVE',
  security_updates_overdue: 'Security updates overdue',
  server_unreachable: 'Server unreachable',
  reboot_required: 'Reboot required',
  job_failed: 'Job failed',
  vuln_db_outdated: 'Vulnerability database outdated',
  backup_overdue: 'System backup overdue',
  early_warning: 'New early-warning finding',
};

export const formatLabels: Record<string, string> = {
  generic: 'Generic JSON (signed)', slack: 'Slack', mattermost: 'Mattermost', teams: 'Microsoft Teams', ntfy: 'ntfy', gotify: 'Gotify', discord: 'Discord',
};
