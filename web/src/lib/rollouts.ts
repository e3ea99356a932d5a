// Staged rollouts and the approvals inbox (issue 20).
import { request } from './api';

export interface RolloutItem {
  server_id: string;
  server_name: string;
  batch: number;
  state: string;
  job_id: string | null;
  job_status: string | null;
  refresh_job_id: string | null;
  reason: string;
}

export interface RolloutBatch {
  index: number;
  canary: boolean;
  state: 'pending' | 'running' | 'done';
  counts: Record<string, number>;
  items: RolloutItem[];
}

export interface Rollout {
  id: string;
  action: string;
  target: string;
  group_id: string | null;
  status: string;
  reason: string;
  canary_size: number;
  batch_size: number;
  batch_percent: number;
  failure_threshold: number;
  failure_threshold_percent: number;
  pause_seconds: number;
  concurrency: number;
  batches: number;
  current_batch: number;
  next_batch_at: string | null;
  approval_id: string | null;
  created_by: string;
  created_at: string;
  finished_at: string | null;
  servers: number;
  failures: number;
  counts: Record<string, number>;
  batch_list?: RolloutBatch[];
}

export interface RolloutRequest {
  action: string;
  server_ids?: string[];
  group_id?: string;
  all?: boolean;
  canary_size?: number;
  batch_size?: number;
  batch_percent?: number;
  failure_threshold?: number;
  failure_threshold_percent?: number;
  pause_seconds?: number;
  concurrency?: number;
  require_approval?: boolean;
  dry_run?: boolean;
}

export interface PlanItem {
  server_id: string;
  server_name: string;
  batch: number;
  skip: string | null;
  reboot: boolean;
  packages: { name: string; arch: string; current: string; candidate: string; security: boolean }[];
}

export interface Plan {
  dry_run: true;
  action: string;
  batches: number;
  servers: number;
  items: PlanItem[];
}

export interface RolloutAction {
  name: string;
  label: string;
  reboots: boolean;
  /** A custom action that requires approval: its rollouts wait for one. */
  requires_approval: boolean;
}

/** POST /security/update-all under the approval policy. */
export interface UpdateAllRollout {
  rollout_id: string;
  status: 'awaiting_approval';
  approval_id: string;
}

export interface Approval {
  id: string;
  kind: string;
  ref_id: string;
  summary: string;
  payload: Record<string, unknown>;
  permission: string;
  status: string;
  requested_by: string;
  requester_name: string;
  decided_by: string | null;
  decider_name: string | null;
  comment: string;
  created_at: string;
  expires_at: string;
  decided_at: string | null;
  mine: boolean;
}

const V = '/api/v1';
const enc = encodeURIComponent;

export const rolloutApi = {
  actions: () => request<{ actions: RolloutAction[] }>('GET', `${V}/rollouts/actions`),
  list: () => request<{ rollouts: Rollout[] }>('GET', `${V}/rollouts`),
  get: (id: string) => request<Rollout>('GET', `${V}/rollouts/${enc(id)}`),
  plan: (r: RolloutRequest) => request<Plan>('POST', `${V}/rollouts`, { ...r, dry_run: true }),
  create: (r: RolloutRequest) => request<Rollout>('POST', `${V}/rollouts`, r),
  control: (id: string, op: 'pause' | 'resume' | 'abort', body?: unknown) => request<Rollout>('POST', `${V}/rollouts/${enc(id)}/${op}`, body),
  settings: () => request<{ require_approval: boolean }>('GET', `${V}/settings/rollouts`),
  saveSettings: (require_approval: boolean) => request<{ require_approval: boolean }>('PUT', `${V}/settings/rollouts`, { require_approval }),
  approvals: (status = '') => request<{ approvals: Approval[] }>('GET', `${V}/approvals${status ? `?status=${enc(status)}` : ''}`),
  decide: (id: string, approve: boolean, comment: string) =>
    request<Approval>('POST', `${V}/approvals/${enc(id)}/${approve ? 'approve' : 'reject'}`, { comment }),
};

export const rolloutStatusLabel: Record<string, string> = {
  awaiting_approval: 'Awaiting approval', running: 'Running', paused: 'Paused', halted: 'Halted', aborted: 'Aborted',
  completed: 'Completed', rejected: 'Rejected',
};

export const itemStateLabel: Record<string, string> = {
  pending: 'Pending', running: 'Running', refreshing: 'Refreshing after reboot', success: 'Success', failed: 'Failed',
  refused: 'Refused', skipped: 'Skipped', aborted: 'Not run',
};
