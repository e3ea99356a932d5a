package main

import (
	"context"
	"net/http"
	"os"

	"github.com/lcmproject/lcm/internal/agentgw"
)

// agentGateway starts the in-process agent gateway (all-in-one mode) on
// the bus and returns its handler for the agent listener, which serves it
// with the UI certificate. The gateway closes with ctx, so its agents are
// disconnected (and announced offline) while the bus is still up.
//
// If the gateway cannot start, /mqtt answers 503 and every other path 404:
// the listener stays fail-closed and the rest of LCM keeps working.
func (a *app) agentGateway(ctx context.Context) http.Handler {
	creds, err := a.bus.AgentCredentials(ctx)
	var gw *agentgw.Gateway
	if err == nil {
		host, _ := os.Hostname()
		gw, err = agentgw.New(agentgw.Options{Bus: a.bus, Credentials: creds, Logger: a.log, Name: "lcm-api@" + host})
	}
	if err != nil {
		a.log.Error("agent gateway not started; agents cannot connect", "err", err)
		mux := http.NewServeMux()
		mux.HandleFunc("/mqtt", func(w http.ResponseWriter, r *http.Request) {
			writeAgentError(w, http.StatusServiceUnavailable, "agent gateway not available", "unavailable")
		})
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			writeAgentError(w, http.StatusNotFound, "the agent listener serves only /mqtt", "not_found")
		})
		return mux
	}
	context.AfterFunc(ctx, func() { _ = gw.Close() })
	return gw.Handler()
}

func writeAgentError(w http.ResponseWriter, status int, msg, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"error":"` + msg + `","code":"` + code + `"}`))
}
