package fleet

import (
	"context"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/sshexec"
	"github.com/lcmproject/lcm/internal/store"
)

// DeletedHook is told about a server that was just removed (decommission
// or deletion of a server that never joined).
type DeletedHook func(ctx context.Context, serverID string)

// OnDeleted registers a hook run after a server was deleted. Register
// hooks while wiring, before the service is used.
func (s *Service) OnDeleted(h DeletedHook) { s.deleted = append(s.deleted, h) }

// deleteServer removes a server and tells the deletion hooks.
func (s *Service) deleteServer(ctx context.Context, id string) error {
	if err := s.store.DeleteServer(ctx, id); err != nil {
		return err
	}
	for _, h := range s.deleted {
		h(ctx, id)
	}
	return nil
}

// AdoptRequest describes a server whose management user and key already
// exist (created out of band, e.g. by the package installer for the LCM
// host itself), so no join job is needed.
type AdoptRequest struct {
	Name, Host string
	Port       int
	Username   string // the existing management user; default domain.ManagementUser
	PrivateKey string // that user's private key (stored encrypted)
	HostKey    string // the probed authorized-keys line to pin
}

// Adopt stores an already-prepared server as joined (its key becomes the
// management key, encrypted like every server's) and starts a
// connectivity check as the system, which proves key and sudo rule and
// records the facts. If the check cannot be submitted the server stays
// registered (traffic light unknown) and the error is returned.
func (s *Service) Adopt(ctx context.Context, r AdoptRequest) (domain.Server, error) {
	r.Name, r.Host, r.Username = strings.TrimSpace(r.Name), strings.TrimSpace(r.Host), strings.TrimSpace(r.Username)
	if r.Port == 0 {
		r.Port = 22
	}
	if r.Username == "" {
		r.Username = domain.ManagementUser
	}
	if err := validName(r.Name); err != nil {
		return domain.Server{}, err
	}
	if err := validHostPort(r.Host, r.Port); err != nil {
		return domain.Server{}, err
	}
	if _, err := ssh.ParsePrivateKey([]byte(r.PrivateKey)); err != nil {
		return domain.Server{}, domain.Invalid("invalid_private_key", "private_key must be an unencrypted OpenSSH or PEM private key")
	}
	pin, _, _, _, err := ssh.ParseAuthorizedKey([]byte(r.HostKey))
	if err != nil {
		return domain.Server{}, domain.Invalid("invalid_host_key", "host_key must be a probed key line")
	}
	srv := domain.Server{Name: r.Name, Host: r.Host, Port: r.Port, Transport: domain.TransportSSH,
		Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, Joined: true,
		HostKey: sshexec.AuthorizedKey(pin), HostKeyFingerprint: ssh.FingerprintSHA256(pin)}
	srv, err = s.store.CreateServer(ctx, store.NewServer{Server: srv,
		Secrets: store.ServerSecrets{Username: r.Username, PrivateKey: r.PrivateKey}})
	if err != nil {
		return domain.Server{}, err
	}
	job, err := s.jobs.SubmitServer(ctx, nil, srv, domain.JobConnectivity, nil)
	if err != nil {
		return srv, err
	}
	srv.ActiveJobID = job.ID
	return srv, nil
}
