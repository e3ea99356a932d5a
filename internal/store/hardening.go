package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
)

// SSHProof is what an SSH action proved on a server.
type SSHProof struct {
	// Hardened is set when the proof concerned password logins
	// (harden-ssh, unharden-ssh); nil leaves ssh_hardened as it is.
	Hardened  *bool
	RootLogin string // "" leaves it as it is
	// Port, when set, is a new SSH port proven by a fresh login there;
	// PortProven says a fresh login on the stored port worked (its time
	// is recorded, the port stays).
	Port       int
	PortProven bool
	Lines      []string
	At         time.Time
}

// RecordSSHProof stores a proven SSH state of a server.
func (s *Store) RecordSSHProof(ctx context.Context, id string, p SSHProof) error {
	lines, _ := json.Marshal(p.Lines)
	at := p.At.UTC()
	row := serverRow{SSHProof: string(lines), UpdatedAt: time.Now().UTC()}
	cols := []string{"ssh_proof", "updated_at"}
	if p.Hardened != nil {
		row.SSHHardened, row.SSHHardenedAt = *p.Hardened, &at
		cols = append(cols, "ssh_hardened", "ssh_hardened_at")
	}
	if p.RootLogin != "" {
		row.RootLogin, row.RootLoginAt = p.RootLogin, &at
		cols = append(cols, "root_login", "root_login_at")
	}
	switch {
	case p.Port > 0:
		row.Port, row.PortAt = p.Port, &at
		cols = append(cols, "port", "port_at")
	case p.PortProven:
		row.PortAt = &at
		cols = append(cols, "port_at")
	}
	return s.updateServer(ctx, id, &row, cols...)
}

// RecordHelper stores lcm-helper's version and checksum as read back on
// the server.
func (s *Store) RecordHelper(ctx context.Context, id, version, sha256 string, at time.Time) error {
	at = at.UTC()
	row := serverRow{HelperVersion: version, HelperSHA256: sha256, HelperAt: &at, UpdatedAt: time.Now().UTC()}
	return s.updateServer(ctx, id, &row, "helper_version", "helper_sha256", "helper_at", "updated_at")
}

// RecordSudoMode stores a proven sudo mode of the management user.
func (s *Store) RecordSudoMode(ctx context.Context, id, mode string, at time.Time) error {
	at = at.UTC()
	row := serverRow{SudoMode: mode, SudoModeAt: &at, UpdatedAt: time.Now().UTC()}
	return s.updateServer(ctx, id, &row, "sudo_mode", "sudo_mode_at", "updated_at")
}

func hardeningFromRow(r serverRow) domain.Hardening {
	h := domain.Hardening{SSHHardenedAt: r.SSHHardenedAt, RootLogin: r.RootLogin, RootLoginAt: r.RootLoginAt,
		SudoMode: r.SudoMode, SudoModeAt: r.SudoModeAt, PortAt: r.PortAt,
		HelperVersion: r.HelperVersion, HelperSHA256: r.HelperSHA256, HelperAt: r.HelperAt,
		FirewallActive: r.FirewallActive, FirewallTool: r.FirewallTool, FirewallAt: r.FirewallAt}
	if h.SudoMode == "" {
		h.SudoMode = domain.SudoFull
	}
	if r.SSHProof != "" {
		_ = json.Unmarshal([]byte(r.SSHProof), &h.SSHProof)
	}
	return h
}
