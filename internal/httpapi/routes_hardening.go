package httpapi

import (
	"net/http"

	"github.com/lcmproject/lcm/internal/domain"
)

// routesHardening: SSH hardening, root login and the sudo mode (issue 13). Each submits a
// job that proves its result on the server or rolls it back.
func (s *Server) routesHardening() {
	w := Need(domain.PermServersWrite)
	s.handle(http.MethodPost, "/api/v1/servers/:id/harden-ssh", w, s.hardenSSH)
	s.handle(http.MethodPost, "/api/v1/servers/:id/unharden-ssh", w, s.unhardenSSH)
	s.handle(http.MethodPost, "/api/v1/servers/:id/ssh-root-login", w, s.setSSHRootLogin)
	s.handle(http.MethodPost, "/api/v1/servers/:id/restrict-sudo", w, s.restrictSudo)
	s.handle(http.MethodPost, "/api/v1/servers/:id/ssh-port", w, s.setSSHPort)
}
