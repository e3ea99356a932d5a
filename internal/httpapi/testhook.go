package httpapi

// testRoutes adds routes that exist only in binaries built with the lcmtest
// tag (testhook_lcmtest.go); it is nil in every normal build, so the panic
// triggers of the self-healing tests are never part of a production binary.
var testRoutes func(s *Server)
