package actions

import (
	"encoding/json"
	"testing"

	"github.com/lcmproject/lcm/internal/domain"
)

// TestPackageActionNames: every package action has a human job name (the
// names live in domain, which cannot import this package).
func TestPackageActionNames(t *testing.T) {
	for _, a := range PkgActions {
		params, _ := json.Marshal(PackageParams{Action: a, Names: []string{"nginx"}})
		if n := domain.JobName(domain.JobPackageAction, params); n == "Package action" || n == "" {
			t.Errorf("action %s: job name %q", a, n)
		}
	}
}
