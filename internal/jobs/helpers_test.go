package jobs_test

import "github.com/lcmproject/lcm/internal/store"

func storeFilter() store.ServerFilter { return store.ServerFilter{} }

func settingsName(n *string) store.ServerSettings { return store.ServerSettings{Name: n} }

func settingsSegment(s *string) store.ServerSettings { return store.ServerSettings{Segment: s} }
