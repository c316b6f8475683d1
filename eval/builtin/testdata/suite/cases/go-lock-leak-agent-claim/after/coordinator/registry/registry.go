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

// ErrNoIdleAgent is returned by Claim when every agent of the pool is busy.
var ErrNoIdleAgent = errors.New("no idle agent")

// Claim marks an idle agent of pool busy and returns its id.
func (r *Registry) Claim(pool string) (string, error) {
	r.mu.Lock()
	for _, a := range r.agents {
		if a.Pool == pool && !a.Busy {
			a.Busy = true
			r.mu.Unlock()
			return a.ID, nil
		}
	}
	return "", ErrNoIdleAgent
}

// Release marks the agent idle again.
func (r *Registry) Release(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.agents[id]
	if !ok {
		return ErrUnknownAgent
	}
	a.Busy = false
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
