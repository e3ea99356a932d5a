// Package agentgw is the agent gateway: an MQTT 5 broker (mochi-mqtt,
// embedded) reached over a WebSocket at /mqtt on the agent listener, whose
// agents' messages are bridged into NATS, plus the enrollment of agents and
// an Executor that runs commands on a server through its agent.
//
// The same code runs inside lcm-api (all-in-one) and as lcm-agentgw.
//
// Connection states of one agent, as the gateway sees them:
//
//	        WebSocket upgrade (/mqtt, subprotocol "mqtt")
//	                   │
//	                   ▼
//	             ┌──────────┐  bad secret · unknown · revoked · not enrolled
//	             │ CONNECT  │─ KV error · hook panic ─────────────► rejected
//	             └────┬─────┘  (fail-closed: anything but a proven    (0x86)
//	first connect     │         match is a rejection)
//	with EnrollProperty: token secret swapped for the agent's own
//	                  ▼
//	             ┌──────────┐  publish res|inv|status ──► NATS lcm.agent.<id>.<ch>
//	             │  ONLINE  │◄─ NATS lcm.agent.<id>.cmd ── publish cmd (QoS 1)
//	             └────┬─────┘  anything else ──► ACL denied
//	                  │ disconnect · revoked (checked every minute)
//	                  ▼
//	               OFFLINE ──► NATS lcm.agent.<id>.status {"state":"offline"}
package agentgw
