package main

import (
	"github.com/lcmproject/lcm/internal/portal"
	"github.com/lcmproject/lcm/internal/speechsvc"
)

// wirePortal builds issue 8's services: portal messages and speech. The
// speech service reads its settings from the database on demand (with a
// short cache), so every replica follows a change saved on any of them.
func (a *app) wirePortal() (*portal.Service, *speechsvc.Service) {
	return portal.New(a.store), speechsvc.New(a.store, a.cfg.Speech.TTSLanguage)
}
