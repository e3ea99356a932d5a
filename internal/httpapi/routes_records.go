package httpapi

import "net/http"

// routesRecords is issue 7: projects and members, zones and record sets,
// templates, sync groups and source hosts. Every route needs a signed-in
// caller; the project role (viewer, editor, owner) or sync-group ownership
// is checked by the records service and named in the OpenAPI x-access.
func (s *Server) routesRecords() {
	const p = "/api/v1"
	// Projects and members.
	s.handle(http.MethodPost, p+"/projects/create", Login(), s.createProject)
	s.handle(http.MethodGet, p+"/projects", Login(), s.listProjects)
	s.handle(http.MethodGet, p+"/projects/:projectId", Login(), s.getProject)
	s.handle(http.MethodPost, p+"/projects/:projectId/update", Login(), s.updateProject)
	s.handle(http.MethodPost, p+"/projects/:projectId/delete", Login(), s.deleteProject)
	s.handle(http.MethodGet, p+"/projects/:projectId/members", Login(), s.listMembers)
	s.handle(http.MethodPost, p+"/projects/:projectId/members/add", Login(), s.addMember)
	s.handle(http.MethodPost, p+"/projects/:projectId/members/:userId/update", Login(), s.updateMember)
	s.handle(http.MethodPost, p+"/projects/:projectId/members/:userId/remove", Login(), s.removeMember)
	// Zones and record sets.
	s.handle(http.MethodPost, p+"/projects/:projectId/zones/create", Login(), s.createZone)
	s.handle(http.MethodGet, p+"/projects/:projectId/zones", Login(), s.listZones)
	s.handle(http.MethodGet, p+"/zones/:zoneId", Login(), s.getZone)
	s.handle(http.MethodPost, p+"/zones/:zoneId/update", Login(), s.updateZone)
	s.handle(http.MethodPost, p+"/zones/:zoneId/delete", Login(), s.deleteZone)
	s.handle(http.MethodGet, p+"/zones/:zoneId/export", Login(), s.exportZone)
	s.handle(http.MethodGet, p+"/zones/:zoneId/record-sets", Login(), s.listRecordSets)
	s.handle(http.MethodPost, p+"/zones/:zoneId/record-sets/create", Login(), s.createRecordSet)
	s.handle(http.MethodPost, p+"/zones/:zoneId/record-sets/:setId/update", Login(), s.updateRecordSet)
	s.handle(http.MethodPost, p+"/zones/:zoneId/record-sets/:setId/delete", Login(), s.deleteRecordSet)
	// Templates.
	s.handle(http.MethodPost, p+"/projects/:projectId/templates/create", Login(), s.createTemplate)
	s.handle(http.MethodGet, p+"/projects/:projectId/templates", Login(), s.listTemplates)
	s.handle(http.MethodGet, p+"/templates/:templateId", Login(), s.getTemplate)
	s.handle(http.MethodPost, p+"/templates/:templateId/update", Login(), s.updateTemplate)
	s.handle(http.MethodPost, p+"/templates/:templateId/delete", Login(), s.deleteTemplate)
	s.handle(http.MethodPost, p+"/templates/:templateId/apply", Login(), s.applyTemplate)
	// Sync groups.
	s.handle(http.MethodPost, p+"/sync-groups/create", Login(), s.createSyncGroup)
	s.handle(http.MethodGet, p+"/sync-groups", Login(), s.listSyncGroups)
	s.handle(http.MethodGet, p+"/sync-groups/:groupId", Login(), s.getSyncGroup)
	s.handle(http.MethodPost, p+"/sync-groups/:groupId/members/add", Login(), s.addSyncGroupMember)
	s.handle(http.MethodPost, p+"/sync-groups/:groupId/members/remove", Login(), s.removeSyncGroupMember)
	s.handle(http.MethodPost, p+"/sync-groups/:groupId/update-sets", Login(), s.updateSyncGroupSets)
	s.handle(http.MethodPost, p+"/sync-groups/:groupId/delete", Login(), s.deleteSyncGroup)
	// Source hosts.
	s.handle(http.MethodPost, p+"/projects/:projectId/source-hosts/create", Login(), s.createSourceHost)
	s.handle(http.MethodGet, p+"/projects/:projectId/source-hosts", Login(), s.listSourceHosts)
	s.handle(http.MethodGet, p+"/source-hosts/:sourceId", Login(), s.getSourceHost)
	s.handle(http.MethodPost, p+"/source-hosts/:sourceId/update", Login(), s.updateSourceHost)
	s.handle(http.MethodPost, p+"/source-hosts/:sourceId/delete", Login(), s.deleteSourceHost)
	s.handle(http.MethodPost, p+"/source-hosts/:sourceId/bind", Login(), s.bindSourceHost)
	s.handle(http.MethodPost, p+"/source-hosts/:sourceId/unbind", Login(), s.unbindSourceHost)
}
