package main

import (
	"github.com/lcmproject/lcm/internal/registrysvc"
)

// wireRegistries builds the registry service (issue 15): the stored
// registry credentials behind /settings/registries and the newer-image
// check, which the containers service calls through Service.Check.
func (a *app) wireRegistries() *registrysvc.Service {
	return registrysvc.New(a.store, registrysvc.Options{Log: a.log})
}
