// Typed client for automation (issue 20): group schedules with ordered
// rules, custom actions, maintenance mode, the system schedules overview.
// Same conventions as api.ts: session cookie, CSRF header, {error, code}.

import { request } from './api';
import type { BulkRun } from './types';

export interface RuleParams { packages?: string[]; custom_action_id?: string; script?: string }
export interface Rule { id: string; schedule_id: string; position: number; type: string; params: RuleParams; enabled: boolean }
export interface Schedule {
  id: string; group_id: string; name: string; cron: string; time_zone: string; window_start: string; window_end: string;
  outside_window: 'wait' | 'skip'; enabled: boolean; requires_approval: boolean; last_run_at: string | null; next_run_at: string | null;
  created_by: string; updated_by: string; rules: Rule[];
}
export type ScheduleInput = Partial<Pick<Schedule, 'name' | 'cron' | 'time_zone' | 'window_start' | 'window_end' | 'outside_window' | 'enabled' | 'requires_approval'>>;
export interface RunItem { server_id: string; server_name?: string; job_id?: string; status?: string; skipped?: string; reason?: string }
export interface RunStep { rule_id: string; type: string; bulk_id?: string; status: string; reason?: string; items: RunItem[] }
export interface ScheduleRun {
  id: string; schedule_id: string; trigger: string; status: string; reason: string; due_at: string;
  started_at: string | null; finished_at: string | null; created_at: string; requested_by: string; steps: RunStep[];
}
export interface GroupAutomation { group_id: string; priority: number; window_start: string; window_end: string; window_tz: string }
export interface CustomAction { id: string; name: string; description: string; commands: string[]; requires_approval: boolean }
export interface Maintenance { active: boolean; reason: string; started_by: string; started_at: string | null; ends_at: string | null }
export interface RuleConflict { rule_type: string; winner: string; superseded: string[]; tie: boolean; warning: string }
export interface SystemSchedule {
  name: string; kind: string; spec: string; enabled: boolean; default_spec: string; default_enabled: boolean; next_run?: string;
}

const V = '/api/v1';
const enc = encodeURIComponent;
const get = <T>(p: string) => request<T>('GET', p);
const post = <T>(p: string, b?: unknown) => request<T>('POST', p, b);

export const RULE_LABELS: Record<string, string> = {
  'security-updates': 'Security updates', 'all-updates': 'All updates', packages: 'Update named packages',
  refresh: 'Refresh inventory', reboot: 'Reboot', 'reboot-if-required': 'Reboot if required', 'custom-action': 'Custom action',
  script: 'Script', 'container-prune': 'Container prune', 'image-updates': 'Pull container images in use',
  'vulnerability-scan': 'Vulnerability scan', 'health-check': 'Health check',
};

export const auto = {
  schedules: (groupId: string) => get<{ schedules: Schedule[] }>(`${V}/server-groups/${enc(groupId)}/schedules`),
  defineSchedule: (groupId: string, b: ScheduleInput) => post<Schedule>(`${V}/server-groups/${enc(groupId)}/schedules/define`, b),
  updateSchedule: (id: string, b: ScheduleInput) => request<Schedule>('PATCH', `${V}/schedules/${enc(id)}/update`, b),
  removeSchedule: (id: string) => request<void>('DELETE', `${V}/schedules/${enc(id)}/remove`),
  setEnabled: (id: string, on: boolean) => post<Schedule>(`${V}/schedules/${enc(id)}/${on ? 'enable' : 'disable'}`),
  trigger: (id: string) => post<ScheduleRun>(`${V}/schedules/${enc(id)}/trigger-now`),
  history: (id: string) => get<{ runs: ScheduleRun[] }>(`${V}/schedules/${enc(id)}/history`),
  ruleTypes: () => get<{ types: string[] }>(`${V}/rule-types`),
  defineRule: (groupId: string, b: { schedule_id: string; type: string; params?: RuleParams }) =>
    post<Rule>(`${V}/server-groups/${enc(groupId)}/rules/define`, b),
  updateRule: (id: string, b: Partial<Rule>) => request<Rule>('PATCH', `${V}/rules/${enc(id)}/update`, b),
  removeRule: (id: string) => request<void>('DELETE', `${V}/rules/${enc(id)}/remove`),
  setRuleEnabled: (id: string, on: boolean) => post<Rule>(`${V}/rules/${enc(id)}/${on ? 'enable' : 'disable'}`),
  triggerRule: (id: string) => post<ScheduleRun>(`${V}/rules/${enc(id)}/trigger-now`),
  groupSettings: (groupId: string) => get<GroupAutomation>(`${V}/server-groups/${enc(groupId)}/automation`),
  saveGroupSettings: (groupId: string, b: Omit<GroupAutomation, 'group_id'>) =>
    request<GroupAutomation>('PUT', `${V}/server-groups/${enc(groupId)}/automation`, b),
  customActions: () => get<{ custom_actions: CustomAction[] }>(`${V}/custom-actions`),
  createCustomAction: (b: Partial<CustomAction>) => post<CustomAction>(`${V}/custom-actions`, b),
  updateCustomAction: (id: string, b: Partial<CustomAction>) => request<CustomAction>('PATCH', `${V}/custom-actions/${enc(id)}`, b),
  deleteCustomAction: (id: string) => request<void>('DELETE', `${V}/custom-actions/${enc(id)}`),
  runCustomAction: (id: string, b: { server_ids?: string[]; group_id?: string }) => post<BulkRun>(`${V}/custom-actions/${enc(id)}/run`, b),
  maintenance: (serverId: string) => get<{ maintenance: Maintenance; rule_conflicts: RuleConflict[] }>(`${V}/servers/${enc(serverId)}/maintenance`),
  startMaintenance: (serverId: string, b: { reason: string; ends_at?: string }) => post<Maintenance>(`${V}/servers/${enc(serverId)}/maintenance/start`, b),
  endMaintenance: (serverId: string) => post<Maintenance>(`${V}/servers/${enc(serverId)}/maintenance/end`),
  systemOverview: () => get<{ schedules: SystemSchedule[] }>(`${V}/system/schedules/overview`),
  triggerSystem: (name: string) => post<{ triggered: string }>(`${V}/system/schedules/${enc(name)}/trigger-now`),
};
