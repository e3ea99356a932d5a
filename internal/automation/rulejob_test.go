package automation

import (
	"context"
	"testing"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
)

// The container rules submit the containers' own job: a prune of stopped
// containers, dangling images and build cache, and a pull of every image in
// use, on every engine of the server; both pass the job's validation.
func TestContainerRulesSubmitContainerJobs(t *testing.T) {
	s := &Service{}
	for typ, op := range map[string]string{RuleContainerPrune: actions.ContainerPrune, RuleImageUpdates: actions.ContainerPullAll} {
		kind, params, err := s.ruleJob(context.Background(), domain.Rule{Type: typ})
		if err != nil || kind != domain.JobContainer {
			t.Fatalf("%s: %s %v", typ, kind, err)
		}
		p, ok := params.(actions.ContainerParams)
		if !ok || p.Op != op || p.Engine != "" {
			t.Fatalf("%s: params %+v", typ, params)
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
	}
}
