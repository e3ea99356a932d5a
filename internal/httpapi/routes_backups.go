package httpapi

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/backup"
	"github.com/lcmproject/lcm/internal/domain"
)

// routesBackups: encrypted backups and the staged restore (issue 21,
// docs/backups.md). A successful restore answers 202 and the process then
// exits with 42; the next start applies it. Backups are instance-wide, so
// there is no group scoping: backups:manage is admin-only.
func (s *Server) routesBackups() {
	b := Need(domain.PermBackupsManage)
	s.handle(http.MethodGet, "/api/v1/system/backups", b, s.listBackups)
	s.handle(http.MethodPost, "/api/v1/system/backups/trigger-now", b, s.triggerBackup)
	s.handle(http.MethodPatch, "/api/v1/system/backups/settings", b, s.updateBackupSettings)
	s.handle(http.MethodPost, "/api/v1/system/backups/restore-upload", b, s.restoreUploadedBackup)
	s.handle(http.MethodGet, "/api/v1/system/backups/:name/download", b, s.downloadBackup)
	s.handle(http.MethodDelete, "/api/v1/system/backups/:name", b, s.deleteBackup)
	s.handle(http.MethodPost, "/api/v1/system/backups/:name/restore", b, s.restoreBackup)
}

func (s *Server) backups() (*backup.Service, error) {
	if b := s.deps.Services.Backups; b != nil {
		return b, nil
	}
	return nil, domain.Unavailable("backups_unavailable", "backups are not available in this process")
}

// restoreDTO answers a staged restore.
type restoreDTO struct {
	Status     string `json:"status"`
	Message    string `json:"message"`
	LCMVersion string `json:"lcm_version"`
	CreatedAt  string `json:"created_at"`
	ExitCode   int    `json:"exit_code"`
}

func stagedDTO(m backup.Manifest) restoreDTO {
	return restoreDTO{Status: "staged", LCMVersion: m.LCMVersion, CreatedAt: m.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"), ExitCode: 42,
		Message: "the backup is verified and staged; LCM restarts now (exit code 42), applies it on start, and everyone signs in again"}
}

func (s *Server) listBackups(c *gin.Context) {
	b, err := s.backups()
	if err == nil {
		var st backup.Status
		if st, err = b.Status(c.Request.Context()); err == nil {
			c.JSON(http.StatusOK, st)
			return
		}
	}
	s.respondError(c, err)
}

func (s *Server) triggerBackup(c *gin.Context) {
	b, err := s.backups()
	if err == nil {
		var fi backup.Info
		if fi, err = b.Create(c.Request.Context(), principal(c), "manual"); err == nil {
			c.JSON(http.StatusCreated, fi)
			return
		}
	}
	s.respondError(c, err)
}

func (s *Server) updateBackupSettings(c *gin.Context) {
	var req backup.SettingsPatch
	if !bindJSON(c, &req) {
		return
	}
	b, err := s.backups()
	if err == nil {
		var st backup.Status
		if st, err = b.UpdateSettings(c.Request.Context(), principal(c), req); err == nil {
			c.JSON(http.StatusOK, st)
			return
		}
	}
	s.respondError(c, err)
}

func (s *Server) downloadBackup(c *gin.Context) {
	b, err := s.backups()
	if err != nil {
		s.respondError(c, err)
		return
	}
	f, fi, err := b.Open(c.Request.Context(), principal(c), c.Param("name"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	defer f.Close()
	c.Header("Content-Type", "application/octet-stream")
	c.Header("Content-Length", strconv.FormatInt(fi.Size, 10))
	c.Header("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": fi.Name}))
	c.Status(http.StatusOK)
	_, _ = io.Copy(c.Writer, f)
}

func (s *Server) deleteBackup(c *gin.Context) {
	b, err := s.backups()
	if err == nil {
		if err = b.Delete(c.Request.Context(), principal(c), c.Param("name")); err == nil {
			c.Status(http.StatusNoContent)
			return
		}
	}
	s.respondError(c, err)
}

func (s *Server) restoreBackup(c *gin.Context) {
	b, err := s.backups()
	if err == nil {
		var m backup.Manifest
		if m, err = b.Stage(c.Request.Context(), principal(c), c.Param("name")); err == nil {
			c.JSON(http.StatusAccepted, stagedDTO(m))
			return
		}
	}
	s.respondError(c, err)
}

// restoreUploadedBackup takes the backup as the raw body
// (application/octet-stream) or as the "file" part of a multipart form,
// streamed: it is decrypted and verified as it arrives.
func (s *Server) restoreUploadedBackup(c *gin.Context) {
	b, err := s.backups()
	if err != nil {
		s.respondError(c, err)
		return
	}
	body, name := io.Reader(c.Request.Body), "upload"
	if mt, _, _ := mime.ParseMediaType(c.GetHeader("Content-Type")); strings.HasPrefix(mt, "multipart/") {
		mr, err := c.Request.MultipartReader()
		if err != nil {
			s.respondError(c, domain.Invalid("invalid_upload", "the multipart body cannot be read: "+err.Error()))
			return
		}
		for {
			p, err := mr.NextPart()
			if err != nil {
				s.respondError(c, domain.Invalid("invalid_upload", `the form has no "file" part holding the backup`))
				return
			}
			if p.FormName() == "file" {
				body = p
				if p.FileName() != "" {
					name = fmt.Sprintf("upload:%s", p.FileName())
				}
				break
			}
		}
	}
	m, err := b.StageUpload(c.Request.Context(), principal(c), body, name)
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusAccepted, stagedDTO(m))
}
