// Package password holds LCM's one password policy and its argon2id hashing.
//
// Every place that sets a password (user creation, password reset,
// invitation or activation link, Linux-user activation) calls [Validate] (or
// [Check] to get every violation). The rules, their codes and an example for
// each are documented in docs/password-policy.md; [Codes] lists them.
//
// Comparisons against lists and identity data work on a leetspeak
// "skeleton" (see fold.go): lower-cased, with 4/@→a, 8→b, 3→e, 6/9→g,
// 1/!/|/l→i, 0→o, 5/$→s, 7/+→t, 2→z, applied to both sides.
//
// [Hasher] stores passwords as PHC-encoded argon2id hashes (64 MiB, t=3,
// p=4) and bounds how many hashes run at once, so a login burst cannot
// exhaust memory.
package password
