// Vulnerability scanning (issue 16): findings, vulnerable packages, the
// scanner's status, scans, acknowledgement, the database upload and the
// SBOM download. Same REST API as everything else (docs/vulnerabilities.md).

import { request, csrfToken, ApiError } from './api';
import { describe } from './errors';

export type Severity = 'unknown' | 'low' | 'medium' | 'high' | 'critical';

export interface Vulnerability {
  id: number;
  server_id: string;
  server_name: string;
  advisory: string;
  cves: string[];
  package: string;
  /** engine/name of the CVE-relevant container the package was found in ("docker/web"); absent: on the host. */
  container?: string;
  source?: string;
  installed: string;
  fixed: string;
  severity: Severity;
  cvss?: number;
  summary: string;
  ecosystem: string;
  state: 'new' | 'acknowledged' | 'fixed';
  first_seen_at: string;
  last_seen_at: string;
  acknowledged_at?: string;
  acknowledged_by?: string;
  fixed_at?: string;
}

export interface VulnerabilityPage { items: Vulnerability[]; total: number }

export interface VulnerablePackage {
  /** container: engine/name of the containers the package is in; absent: on the hosts (never grouped together). */
  package: string; container?: string; installed: string; fixed: string; severity: Severity;
  advisories: string[]; cves: string[]; servers: number; server_ids: string[];
}

export interface ScanSummary {
  started_at: string; finished_at: string; servers: number; scanned: number; skipped: number; failed: number;
  distinct_package_sets: number; findings: number; error?: string;
}

export interface ScannerStatus {
  enabled: boolean;
  reason?: string;
  engine?: string;
  scanner?: string;
  records: number;
  database_newest?: string;
  database_age_hours?: number;
  freshness?: 'current' | 'outdated' | 'critical';
  ecosystems: { name: string; records: number; imported_at: string; newest: string }[];
  last_scan_at?: string;
  fleet_scan_running: boolean;
  last_run?: ScanSummary;
}

export interface BulkRun {
  started_at?: string; started_by?: string; running: boolean;
  items: { server_id: string; server_name: string; job_id?: string; status: string; error?: string }[];
}

export interface VulnFilter {
  severity?: string; package?: string; cve?: string; fix_available?: boolean; state?: string; limit?: number; offset?: number;
}

const V = '/api/v1';
const enc = encodeURIComponent;

function qs(f: VulnFilter = {}): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(f)) if (v !== undefined && v !== null && v !== '' && v !== false) u.set(k, String(v));
  const s = u.toString();
  return s ? `?${s}` : '';
}

export const security = {
  serverVulns: (id: string, f?: VulnFilter) => request<VulnerabilityPage>('GET', `${V}/servers/${enc(id)}/vulnerabilities${qs(f)}`),
  scanServer: (id: string) => request<ScanSummary>('POST', `${V}/servers/${enc(id)}/vulnerabilities/scan`, {}),
  fleetVulns: (f?: VulnFilter) => request<VulnerabilityPage>('GET', `${V}/security/vulnerabilities${qs(f)}`),
  vulnerablePackages: (f?: VulnFilter) => request<VulnerablePackage[]>('GET', `${V}/packages/vulnerable${qs(f)}`),
  scanFleet: () => request<{ status: string }>('POST', `${V}/security/vulnerabilities/scan`, {}),
  acknowledge: (fid: number) => request<Vulnerability>('POST', `${V}/security/vulnerabilities/${fid}/acknowledge`, {}),
  scanner: () => request<ScannerStatus>('GET', `${V}/security/scanner`),
  updateAll: () => request<BulkRun>('POST', `${V}/security/update-affected`, {}),
  updateAllStatus: () => request<BulkRun>('GET', `${V}/security/update-affected`),
  sbomUrl: (id: string) => `${V}/servers/${enc(id)}/sbom`,
  /** Uploads one ecosystem's OSV export (all.zip) as multipart form data. */
  async uploadDB(ecosystem: string, file: File): Promise<{ records: number }> {
    const fd = new FormData();
    fd.set('ecosystem', ecosystem);
    fd.set('file', file);
    const headers: Record<string, string> = { Accept: 'application/json' };
    const t = csrfToken();
    if (t) headers['X-CSRF-Token'] = t;
    let res: Response;
    try {
      res = await fetch(`${V}/security/scanner/update-db`, { method: 'POST', body: fd, headers, credentials: 'same-origin' });
    } catch {
      throw new ApiError(0, 'network', 'The server cannot be reached. Check your connection and try again.');
    }
    const b = await res.json().catch(() => null);
    if (!res.ok) throw new ApiError(res.status, String(b?.code ?? ''), describe(res.status, b as never), b);
    return b;
  },
};

export const severityOrder: Severity[] = ['critical', 'high', 'medium', 'low', 'unknown'];
export const severityClass = (s: string) => (s === 'critical' ? 'crit' : s === 'high' ? 'warn' : s === 'medium' ? 'info' : '');
export const freshnessText: Record<string, string> = {
  current: 'current (less than 48 hours old)',
  outdated: 'outdated (48 hours or older)',
  critical: 'critically old (7 days or older)',
};
