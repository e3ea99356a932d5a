package main

import (
	"slices"
	"testing"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/config"
)

// TestNATSUsersAgentGateways: a listening embedded NATS gets one
// least-privilege account per nats.agent_gateways entry.
func TestNATSUsersAgentGateways(t *testing.T) {
	c := config.NATSConfig{Listen: "127.0.0.1:4222", User: "api", Password: "p",
		AgentGateways: []config.NATSAccount{{User: "gw", Password: "gw-p"}}}
	users := natsUsers(c)
	i := slices.IndexFunc(users, func(u bus.User) bool { return u.Name == "gw" })
	if i < 0 || users[i].Password != "gw-p" || users[i].Permissions == nil {
		t.Fatalf("users %+v", users)
	}
	want := bus.AgentGatewayUser("gw", "gw-p").Permissions
	if !slices.Equal(users[i].Permissions.Publish, want.Publish) || !slices.Equal(users[i].Permissions.Subscribe, want.Subscribe) {
		t.Fatalf("permissions %+v, want %+v", users[i].Permissions, want)
	}
	if slices.Contains(users[i].Permissions.Publish, ">") || slices.ContainsFunc(users[i].Permissions.Publish, func(s string) bool {
		return s == "$JS.API.>" || s == bus.SubjectJobsAll
	}) {
		t.Fatal("the gateway account may publish more than agent subjects and its bucket")
	}
}
