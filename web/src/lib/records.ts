// Typed client for the records area (projects, zones, record sets,
// templates, sync groups, source hosts), the DNS listener's status and the
// operator settings the UI added in issue 24 (speech, schedules; outgoing
// mail is the system mail channel in alerts.ts).
// Same conventions as api.ts: session cookie, CSRF header, {error, code}.

import { request } from './api';

export interface Project { id: string; name: string; description: string; createdAt: string; updatedAt: string }
export type ProjectRole = 'owner' | 'editor' | 'viewer';
export interface ProjectMember { projectId: string; userId: string; username: string; role: ProjectRole; createdAt: string }
export interface Zone {
  id: string; projectId: string; name: string; defaultTtl: number; mname: string; rname: string;
  refresh: number; retry: number; expire: number; minimum: number; serial: number; createdAt: string; updatedAt: string;
}
export type ZoneInput = Partial<Omit<Zone, 'id' | 'projectId' | 'serial' | 'createdAt' | 'updatedAt'>>;
export interface RecordSet { name: string; type: string; ttl?: number; records: string[] }
export interface ZoneRecordSet extends RecordSet {
  id: string; zoneId: string; origin: 'manual' | 'template' | 'syncgroup' | 'source'; originId?: string; updatedAt: string;
}
export interface Template { id: string; projectId: string; name: string; sets: RecordSet[]; createdAt?: string; updatedAt?: string }
export interface EnforcementReport { zoneId: string; applied: string[]; skippedPriority: string[]; conflicts: string[] }
export interface SyncGroup {
  id: string; name: string; priority: number; ownerId: string; sets: RecordSet[]; zoneIds: string[]; createdAt: string; updatedAt: string;
}
export interface SourceHost { id: string; projectId: string; name: string; ipv4: string[]; ipv6: string[]; updatedAt: string }
export interface DNSStatus { enabled: boolean; addr: string; zones: string[]; axfrAllow: string[] }
export interface SpeechSettings {
  provider: '' | 'local' | 'google' | 'openai'; apiKeySet: boolean; keyVerified: boolean; baseUrl: string; model: string;
  sttLanguage: string; ttsLanguage: string; phrases: string[]; saved: boolean; localAvailable: boolean; updatedAt: string | null;
}
export interface SpeechInput {
  provider: string; apiKey?: string; baseUrl: string; model: string; sttLanguage: string; ttsLanguage: string; phrases: string[];
}
export interface Voice { name: string; ssmlGender: string; languageCodes: string[]; naturalSampleRateHertz: number }
export interface ScheduleTask { name: string; spec: string; enabled: boolean; default_spec: string; default_enabled: boolean }
export interface ScheduleOverride { spec?: string; enabled?: boolean }

const V = '/api/v1';
const enc = encodeURIComponent;
const get = <T>(p: string) => request<T>('GET', p);
const post = <T>(p: string, b?: unknown) => request<T>('POST', p, b ?? {});
const put = <T>(p: string, b: unknown) => request<T>('PUT', p, b);

export const rec = {
  projects: () => get<Project[]>(`${V}/projects`),
  project: (id: string) => get<Project>(`${V}/projects/${enc(id)}`),
  createProject: (b: { name: string; description?: string }) => post<Project>(`${V}/projects/create`, b),
  updateProject: (id: string, b: { name: string; description?: string }) => post<Project>(`${V}/projects/${enc(id)}/update`, b),
  deleteProject: (id: string) => post<void>(`${V}/projects/${enc(id)}/delete`),
  members: (id: string) => get<ProjectMember[]>(`${V}/projects/${enc(id)}/members`),
  addMember: (id: string, userId: string, role: ProjectRole) => post<ProjectMember>(`${V}/projects/${enc(id)}/members/add`, { userId, role }),
  setMemberRole: (id: string, userId: string, role: ProjectRole) =>
    post<ProjectMember>(`${V}/projects/${enc(id)}/members/${enc(userId)}/update`, { role }),
  removeMember: (id: string, userId: string) => post<void>(`${V}/projects/${enc(id)}/members/${enc(userId)}/remove`),

  zones: (projectId: string) => get<Zone[]>(`${V}/projects/${enc(projectId)}/zones`),
  zone: (id: string) => get<Zone>(`${V}/zones/${enc(id)}`),
  createZone: (projectId: string, b: ZoneInput & { name: string }) => post<Zone>(`${V}/projects/${enc(projectId)}/zones/create`, b),
  updateZone: (id: string, b: ZoneInput) => post<Zone>(`${V}/zones/${enc(id)}/update`, b),
  deleteZone: (id: string) => post<void>(`${V}/zones/${enc(id)}/delete`),
  exportUrl: (id: string) => `${V}/zones/${enc(id)}/export`,
  sets: (zoneId: string) => get<ZoneRecordSet[]>(`${V}/zones/${enc(zoneId)}/record-sets`),
  createSet: (zoneId: string, b: RecordSet) => post<ZoneRecordSet>(`${V}/zones/${enc(zoneId)}/record-sets/create`, b),
  updateSet: (zoneId: string, setId: string, b: RecordSet) => post<ZoneRecordSet>(`${V}/zones/${enc(zoneId)}/record-sets/${enc(setId)}/update`, b),
  deleteSet: (zoneId: string, setId: string) => post<void>(`${V}/zones/${enc(zoneId)}/record-sets/${enc(setId)}/delete`),

  templates: (projectId: string) => get<Template[]>(`${V}/projects/${enc(projectId)}/templates`),
  createTemplate: (projectId: string, b: { name: string; sets: RecordSet[] }) => post<Template>(`${V}/projects/${enc(projectId)}/templates/create`, b),
  updateTemplate: (id: string, b: { name: string; sets: RecordSet[] }) => post<Template>(`${V}/templates/${enc(id)}/update`, b),
  deleteTemplate: (id: string) => post<void>(`${V}/templates/${enc(id)}/delete`),
  applyTemplate: (id: string, zoneId: string) => post<EnforcementReport>(`${V}/templates/${enc(id)}/apply`, { zoneId }),

  syncGroups: () => get<SyncGroup[]>(`${V}/sync-groups`),
  syncGroup: (id: string) => get<SyncGroup>(`${V}/sync-groups/${enc(id)}`),
  createSyncGroup: (b: { name: string; priority: number }) => post<SyncGroup>(`${V}/sync-groups/create`, b),
  addSyncMember: (id: string, zoneId: string) => post<EnforcementReport>(`${V}/sync-groups/${enc(id)}/members/add`, { zoneId }),
  removeSyncMember: (id: string, zoneId: string) => post<void>(`${V}/sync-groups/${enc(id)}/members/remove`, { zoneId }),
  updateSyncSets: (id: string, sets: RecordSet[]) => post<EnforcementReport[]>(`${V}/sync-groups/${enc(id)}/update-sets`, { sets }),
  deleteSyncGroup: (id: string) => post<void>(`${V}/sync-groups/${enc(id)}/delete`),

  sources: (projectId: string) => get<SourceHost[]>(`${V}/projects/${enc(projectId)}/source-hosts`),
  createSource: (projectId: string, b: { name: string; ipv4: string[]; ipv6: string[] }) =>
    post<SourceHost>(`${V}/projects/${enc(projectId)}/source-hosts/create`, b),
  updateSource: (id: string, b: { name: string; ipv4: string[]; ipv6: string[] }) => post<SourceHost>(`${V}/source-hosts/${enc(id)}/update`, b),
  deleteSource: (id: string) => post<void>(`${V}/source-hosts/${enc(id)}/delete`),
  bind: (id: string, b: { zoneId: string; name: string; type: 'A' | 'AAAA' }) => post<ZoneRecordSet>(`${V}/source-hosts/${enc(id)}/bind`, b),
  unbind: (id: string, b: { zoneId: string; name: string; type: 'A' | 'AAAA' }) => post<void>(`${V}/source-hosts/${enc(id)}/unbind`, b),

  dnsStatus: () => get<DNSStatus>(`${V}/dns/status`),
};

export const settings = {
  speech: () => get<SpeechSettings>(`${V}/settings/speech`),
  saveSpeech: (b: SpeechInput) => put<SpeechSettings>(`${V}/settings/speech`, b),
  voices: (language = '') => get<{ voices: Voice[] }>(`/v1/speech/voices${language ? `?language=${enc(language)}` : ''}`),
  schedules: () => get<{ tasks: ScheduleTask[] }>(`${V}/settings/schedules`),
  saveSchedules: (b: Record<string, ScheduleOverride>) => put<{ tasks: ScheduleTask[] }>(`${V}/settings/schedules`, b),
  /** Transcribes a recording; audio is base64. */
  stt: (audio: string, mime_type: string) => post<{ text: string }>('/v1/speech/stt', { audio, mime_type }),
};

/** One value per line or comma-separated → trimmed, non-empty values. */
export function splitLines(s: string): string[] {
  return s.split(/[\n,]+/).map((x) => x.trim()).filter(Boolean);
}

/** The absolute owner name of a set in a zone ("@" is the apex). */
export function fqdn(name: string, zone: string): string {
  if (name === '@' || name === '') return zone;
  if (name.endsWith('.')) return name;
  return `${name}.${zone}`;
}

/** The dig command line for a name against the listener "host:port". */
export function digCommand(addr: string, name: string, type: string): string {
  const i = addr.lastIndexOf(':');
  const host = i > 0 ? addr.slice(0, i).replace(/^\[|\]$/g, '') : addr;
  const port = i > 0 ? addr.slice(i + 1) : '53';
  return `dig @${host}${port === '53' ? '' : ` -p ${port}`} ${name} ${type}`;
}
