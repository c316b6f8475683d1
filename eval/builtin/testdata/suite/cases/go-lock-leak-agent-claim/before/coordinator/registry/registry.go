// Package registry tracks the build agents connected to the coordinator.
package registry

import (
	"errors"
	"sync"
	"time"
)

// ErrUnknownAgent is returned for an agent id that never registered or has
// been reaped.
var ErrUnknownAgent = errors.New("unknown agent")

type Agent struct {
	ID       string
	Pool     string
	LastSeen time.Time
	Busy     bool
}

type Registry struct {
	mu     sync.Mutex
	agents map[string]*Agent
	now    func() time.Time
}

func New(now func() time.Time) *Registry {
	return &Registry{agents: map[string]*Agent{}, now: now}
}

func (r *Registry) Register(id, pool string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.agents[id] = &Agent{ID: id, Pool: pool, LastSeen: r.now()}
}

func (r *Registry) Heartbeat(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.agents[id]
	if !ok {
		return ErrUnknownAgent
	}
	a.LastSeen = r.now()
	return nil
}

// Reap forgets agents not seen for longer than ttl and returns their ids.
func (r *Registry) Reap(ttl time.Duration) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var gone []string
	for id, a := range r.agents {
		if r.now().Sub(a.LastSeen) > ttl {
			delete(r.agents, id)
			gone = append(gone, id)
		}
	}
	return gone
}
