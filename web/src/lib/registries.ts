// Client and types of the container registries' settings (issue 15,
// docs/registries.md): credentials the newer-image check uses. The
// password is write-only: answers carry has_password.
import { request } from './api';

export interface Registry {
  id: string; host: string; username: string; has_password: boolean; plain_http: boolean; created_at: string; updated_at: string;
}
export interface RegistryInput { host?: string; username?: string; password?: string; plain_http?: boolean }
export interface RegistryTest { ok: boolean; reason?: string; error?: string }

const base = '/api/v1/settings/registries';
const enc = encodeURIComponent;

export const registriesApi = {
  list: () => request<{ registries: Registry[] }>('GET', base),
  create: (b: RegistryInput) => request<Registry>('POST', base, b),
  update: (id: string, b: RegistryInput) => request<Registry>('PUT', `${base}/${enc(id)}`, b),
  remove: (id: string) => request<void>('DELETE', `${base}/${enc(id)}`),
  test: (id: string) => request<RegistryTest>('POST', `${base}/${enc(id)}/test`),
};

export const reasonLabels: Record<string, string> = {
  unauthorized: 'login refused',
  not_found: 'no registry API there',
  rate_limited: 'rate limited',
  unreachable: 'unreachable',
  invalid_reference: 'invalid host',
};
