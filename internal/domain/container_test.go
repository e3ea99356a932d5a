package domain

import "testing"

func TestContainerJobNames(t *testing.T) {
	for params, want := range map[string]string{
		`{"op":"stop","container":"web"}`:            "Stop container web",
		`{"op":"pull","image":"nginx:1.27"}`:         "Pull image nginx:1.27",
		`{"op":"compose-update","project":"shop"}`:   "Update compose project shop",
		`{"op":"prune","prune":{"dry_run":true}}`:    "List what a prune would free",
		`{"op":"prune","prune":{"containers":true}}`: "Prune containers and images",
		`{"op":"refresh"}`:                           "Refresh containers",
		`{"op":"bogus"}`:                             "Container action",
		``:                                           "Container action",
	} {
		if got := JobName(JobContainer, []byte(params)); got != want {
			t.Errorf("%s: %q, want %q", params, got, want)
		}
	}
}
