// Readable messages for the API's machine codes. The password-policy codes
// are part of the API (internal/auth/password/policy.go, docs/password-policy.md).

export const passwordMessages: Record<string, string> = {
  too_short: 'The password must be at least 12 characters long.',
  too_long: 'The password must be at most 200 characters long.',
  too_few_classes:
    'The password must mix at least three of: upper-case letters, lower-case letters, digits and symbols (two are enough from 20 characters on).',
  too_few_distinct: 'The password must contain at least 6 different characters.',
  contains_identity: 'The password must not contain your user name, first or last name, or part of your e-mail address.',
  dominated_by_term: 'The password must not consist mostly of a common word or the product name.',
  common_password: 'This password is well known or a default password. Choose another one.',
  sequence: 'The password must not contain keyboard, alphabet or digit sequences of 4 or more (like "abcd" or "1234").',
  repetition: 'The password must not repeat a character 4 times or a short block 3 times.',
  whitespace_edge: 'The password must not start or end with a space.',
  control_character: 'The password must not contain control or invisible formatting characters.',
  invalid_encoding: 'The password contains invalid characters.',
};

const codeMessages: Record<string, string> = {
  forbidden: 'You do not have permission to do this.',
  csrf_failed: 'The security token of your session is missing or out of date. Reload the page and try again.',
  '2fa_setup_required': 'You must set up two-factor authentication before you can continue.',
  ip_not_allowed: 'Access from your network address is not allowed.',
  read_only_key: 'This API key is read-only.',
  mcp_key_rejected: 'MCP keys cannot be used here.',
  invalid_credentials: 'The user name or password is wrong.',
  invalid_code: 'The code is wrong or has expired. Use the current code from your authenticator app.',
  invalid_recovery_code: 'The recovery code is wrong or was already used. Each code works only once.',
  invalid_request: 'The request was not valid.',
  server_busy: 'Another job is already running on this server.',
  rate_limited: 'Too many requests. Wait a moment and try again.',
  too_many_attempts: 'Too many failed attempts. Wait a few minutes and try again.',
  not_found: 'Not found.',
  conflict: 'This conflicts with the current state. Reload and try again.',
  challenge_expired: 'The sign-in took too long. Sign in again.',
  account_locked: 'The account is locked for a while after too many failed attempts.',
};

const statusMessages: Record<number, string> = {
  400: 'The request was not valid.',
  401: 'You are not signed in.',
  403: 'You do not have permission to do this.',
  404: 'Not found.',
  409: 'This conflicts with the current state.',
  413: 'The request is too large.',
  429: 'Too many requests. Wait a moment and try again.',
  500: 'The server ran into an error. Try again; if it persists, check the server log.',
  502: 'The server is not reachable.',
  503: 'The service is unavailable right now. Try again shortly.',
};

export interface Violation {
  code: string;
  message?: string;
}

/** Turns an error body into words for the user. */
export function describe(status: number, body: { error?: string; code?: string; details?: unknown } | null): string {
  const code = body?.code ?? '';
  const violations = Array.isArray(body?.details) ? (body!.details as Violation[]).filter((v) => v && typeof v.code === 'string') : [];
  const pw = violations.filter((v) => v.code in passwordMessages);
  if (pw.length > 0) return pw.map((v) => passwordMessages[v.code]).join(' ');
  if (code in passwordMessages) return passwordMessages[code];
  if (code in codeMessages) {
    // Prefer the server's own sentence when it is more specific than ours.
    if (code === 'invalid_request' && body?.error) return body.error;
    return codeMessages[code];
  }
  if (body?.error) return capitalise(body.error);
  return statusMessages[status] ?? `Request failed (HTTP ${status}).`;
}

function capitalise(s: string): string {
  s = s.trim();
  if (!s) return s;
  s = s[0].toUpperCase() + s.slice(1);
  return /[.!?]$/.test(s) ? s : s + '.';
}
