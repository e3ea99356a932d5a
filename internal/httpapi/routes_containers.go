package httpapi

import (
	"net/http"

	"github.com/lcmproject/lcm/internal/domain"
)

// routesContainers: Docker and Podman on every server (issue 15). Actions
// are jobs on the server (servers:write); the fleet views need
// packages:read and show only the caller's servers.
func (s *Server) routesContainers() {
	p := "/api/v1/servers/:id/docker"
	s.handle(http.MethodGet, p, Need(domain.PermServersRead), s.getServerDocker)
	s.handle(http.MethodPost, p+"/refresh", Need(domain.PermServersWrite), s.refreshServerDocker)
	s.handle(http.MethodPost, p+"/check-updates", Need(domain.PermServersWrite), s.checkDockerUpdates)
	s.handle(http.MethodPost, p+"/compose-update", Need(domain.PermServersWrite), s.composeUpdate)
	s.handle(http.MethodPost, p+"/pull", Need(domain.PermServersWrite), s.pullImage)
	s.handle(http.MethodPost, p+"/pull-all", Need(domain.PermServersWrite), s.pullAllImages)
	s.handle(http.MethodPost, p+"/cve-relevance", Need(domain.PermServersWrite), s.setCVERelevance)
	s.handle(http.MethodPost, p+"/remove-image", Need(domain.PermServersWrite), s.removeImage)
	s.handle(http.MethodPost, p+"/prune", Need(domain.PermServersWrite), s.pruneDocker)
	s.handle(http.MethodPost, p+"/containers/:name/start", Need(domain.PermServersWrite), s.startContainer)
	s.handle(http.MethodPost, p+"/containers/:name/stop", Need(domain.PermServersWrite), s.stopContainer)
	s.handle(http.MethodPost, p+"/containers/:name/restart", Need(domain.PermServersWrite), s.restartContainer)

	s.handle(http.MethodGet, "/api/v1/docker/overview", Need(domain.PermPackagesRead), s.dockerOverview)
	s.handle(http.MethodGet, "/api/v1/docker/containers", Need(domain.PermPackagesRead), s.dockerContainers)
	s.handle(http.MethodGet, "/api/v1/docker/compose", Need(domain.PermPackagesRead), s.dockerCompose)
}
