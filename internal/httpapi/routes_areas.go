package httpapi

// Services holds the area services the routes call. Each area adds its
// service here when it lands.
type Services struct{}

// routesAreas registers the routes of every area; each area adds one call
// to its own routes_<area>.go.
func (s *Server) routesAreas() {}
