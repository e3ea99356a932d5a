package httpapi

import (
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/gin-gonic/gin"
)

// serveWeb serves the embedded single-page app: hashed assets with
// long-lived caching, the shell (index.html) with no-cache so a new release
// is picked up at once, and the shell for every client-side route.
func (s *Server) serveWeb(c *gin.Context) {
	name := strings.TrimPrefix(path.Clean(c.Request.URL.Path), "/")
	if name == "" {
		name = "index.html"
	}
	if st, err := fs.Stat(s.deps.Web, name); err == nil && !st.IsDir() && name != "index.html" {
		if strings.HasPrefix(name, "assets/") {
			c.Header("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			c.Header("Cache-Control", "no-cache")
		}
		c.FileFromFS(name, http.FS(s.deps.Web))
		return
	}
	if path.Ext(name) != "" && name != "index.html" {
		writeError(c, http.StatusNotFound, "not_found", "no such file")
		return
	}
	index, err := fs.ReadFile(s.deps.Web, "index.html")
	if err != nil {
		c.Data(http.StatusOK, "text/html; charset=utf-8", []byte("<!doctype html><title>LCM</title><p>The web UI was not built into this binary (run <code>make build</code>). The REST API is at <code>/api/v1</code>.</p>"))
		return
	}
	c.Header("Cache-Control", "no-cache")
	c.Header("Content-Security-Policy", "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; connect-src 'self'; media-src 'self' blob:; frame-ancestors 'none'")
	c.Data(http.StatusOK, "text/html; charset=utf-8", index)
}
