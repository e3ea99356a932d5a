package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lcmproject/lcm/internal/safe"
)

// Agent messaging and the agent credential bucket, for the agent gateway
// and the agent Executor. Agent messages are core NATS (at most once): a
// command is request/response by UUID and its sender times out, so nothing
// is worth keeping in a stream once nobody waits for it.

// agentSubjectAll matches one channel of every agent: lcm.agent.*.<channel>.
func agentSubjectAll(channel string) string { return "lcm.agent.*." + channel }

// PublishAgent publishes data on lcm.agent.<agentID>.<channel>.
func (b *Bus) PublishAgent(agentID, channel string, data []byte) error {
	if err := b.NC.Publish(AgentSubject(agentID, channel), data); err != nil {
		return fmt.Errorf("bus: publish agent %s %s: %w", agentID, channel, err)
	}
	return nil
}

// SubscribeAgent calls fn for every message on one agent's channel, in
// order, from one goroutine. The returned func unsubscribes.
func (b *Bus) SubscribeAgent(agentID, channel string, fn func(data []byte)) (func() error, error) {
	sub, err := b.NC.Subscribe(AgentSubject(agentID, channel), func(m *nats.Msg) {
		safe.Do("agent subscriber", func() { fn(m.Data) })
	})
	if err != nil {
		return nil, fmt.Errorf("bus: subscribe agent %s %s: %w", agentID, channel, err)
	}
	// Flush so the subscription is known to the server before the caller
	// publishes the request whose answers it waits for.
	if err := b.NC.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("bus: subscribe agent %s %s: %w", agentID, channel, err)
	}
	return sub.Unsubscribe, nil
}

// SubscribeAgents calls fn for every message on one channel of any agent,
// with the agent id taken from the subject. Every gateway replica gets every
// message (no queue group): only the replica the agent is connected to can
// deliver it.
func (b *Bus) SubscribeAgents(channel string, fn func(agentID string, data []byte)) (func() error, error) {
	sub, err := b.NC.Subscribe(agentSubjectAll(channel), func(m *nats.Msg) {
		parts := strings.Split(m.Subject, ".")
		if len(parts) != 4 {
			return
		}
		safe.Do("agents subscriber", func() { fn(parts[2], m.Data) })
	})
	if err != nil {
		return nil, fmt.Errorf("bus: subscribe agents %s: %w", channel, err)
	}
	if err := b.NC.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("bus: subscribe agents %s: %w", channel, err)
	}
	return sub.Unsubscribe, nil
}

// ErrAgentNotFound: no credential record for this agent id.
var ErrAgentNotFound = errors.New("bus: agent not found")

// ErrAgentExists: Create found a record already there.
var ErrAgentExists = errors.New("bus: agent exists")

// ErrAgentChanged: an Update lost the race against another writer.
var ErrAgentChanged = errors.New("bus: agent record changed concurrently")

// AgentCredentials is the BucketAgents KV bucket: one opaque record (JSON,
// owned by the agent gateway) per agent id.
type AgentCredentials struct {
	kv jetstream.KeyValue
}

// AgentCredentials opens the agent credential bucket.
func (b *Bus) AgentCredentials(ctx context.Context) (*AgentCredentials, error) {
	kv, err := b.KV(ctx, BucketAgents)
	if err != nil {
		return nil, fmt.Errorf("bus: bucket %s: %w", BucketAgents, err)
	}
	return &AgentCredentials{kv: kv}, nil
}

// Get returns the record and its revision (for Update); ErrAgentNotFound
// when there is none.
func (a *AgentCredentials) Get(ctx context.Context, agentID string) ([]byte, uint64, error) {
	e, err := a.kv.Get(ctx, agentID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, ErrAgentNotFound
	}
	if err != nil {
		return nil, 0, fmt.Errorf("bus: agent %s: %w", agentID, err)
	}
	return e.Value(), e.Revision(), nil
}

// Create stores a new record; ErrAgentExists when the id is taken.
func (a *AgentCredentials) Create(ctx context.Context, agentID string, value []byte) error {
	_, err := a.kv.Create(ctx, agentID, value)
	if errors.Is(err, jetstream.ErrKeyExists) || isWrongLastSeq(err) {
		return ErrAgentExists
	}
	if err != nil {
		return fmt.Errorf("bus: create agent %s: %w", agentID, err)
	}
	return nil
}

// Update replaces the record only if it is still at revision rev;
// ErrAgentChanged otherwise.
func (a *AgentCredentials) Update(ctx context.Context, agentID string, value []byte, rev uint64) error {
	_, err := a.kv.Update(ctx, agentID, value, rev)
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) || isWrongLastSeq(err) {
		return ErrAgentChanged
	}
	if err != nil {
		return fmt.Errorf("bus: update agent %s: %w", agentID, err)
	}
	return nil
}

// Delete removes the record (the agent can no longer connect).
func (a *AgentCredentials) Delete(ctx context.Context, agentID string) error {
	if err := a.kv.Delete(ctx, agentID); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("bus: delete agent %s: %w", agentID, err)
	}
	return nil
}

func isWrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
