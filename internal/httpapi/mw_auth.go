package httpapi

import "github.com/gin-gonic/gin"

// authenticate resolves the request's credentials to a principal. Until the
// identity area lands every request is anonymous.
func (s *Server) authenticate() gin.HandlerFunc {
	return func(c *gin.Context) { c.Next() }
}

// rateLimitAPIKeys throttles API keys before they are validated. Until the
// identity area lands there are no API keys.
func (s *Server) rateLimitAPIKeys() gin.HandlerFunc {
	return func(c *gin.Context) { c.Next() }
}
