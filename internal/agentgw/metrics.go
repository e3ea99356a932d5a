package agentgw

import "sync/atomic"

// ConnectedClients is the number of MQTT clients (agents) connected to
// this gateway now.
func (g *Gateway) ConnectedClients() int64 {
	return atomic.LoadInt64(&g.srv.Info.ClientsConnected)
}
